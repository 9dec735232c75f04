// The requantization run with AVX2 (lowbit/internal/pack/requantize.h): 32 values per step, the
// same integer formula as every other run, so the bits do not depend on which one runs.
#include <immintrin.h>

#include "lowbit/internal/pack/requantize.h"

namespace lowbit {
namespace internal {

std::uint32_t RequantizeRunAvx2(const std::uint8_t* source, const std::uint8_t* offsets, int count,
                                std::uint16_t scale, std::uint8_t flip, std::uint8_t* out) {
  const __m256i zero = _mm256_setzero_si256();
  const __m256i flip_bytes = _mm256_set1_epi8(static_cast<char>(flip));
  const __m256i scale_words = _mm256_set1_epi16(static_cast<short>(scale));
  const __m256i magic = _mm256_set1_epi16(static_cast<short>(0x8081));
  __m256i sums = zero;
  int k = 0;
  for (; k + 32 <= count; k += 32) {
    const __m256i values = _mm256_xor_si256(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(source + k)), flip_bytes);
    const __m256i offset_bytes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(offsets + k));
    // Unpacking and packing both work within 128-bit lanes, so the order comes back intact.
    const __m256i low =
        _mm256_add_epi16(_mm256_mullo_epi16(_mm256_unpacklo_epi8(values, zero), scale_words),
                         _mm256_unpacklo_epi8(offset_bytes, zero));
    const __m256i high =
        _mm256_add_epi16(_mm256_mullo_epi16(_mm256_unpackhi_epi8(values, zero), scale_words),
                         _mm256_unpackhi_epi8(offset_bytes, zero));
    const __m256i requantized =
        _mm256_packus_epi16(_mm256_srli_epi16(_mm256_mulhi_epu16(low, magic), 7),
                            _mm256_srli_epi16(_mm256_mulhi_epu16(high, magic), 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), requantized);
    sums = _mm256_add_epi64(sums, _mm256_sad_epu8(requantized, zero));
  }
  const __m128i halves =
      _mm_add_epi64(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
  auto sum = static_cast<std::uint32_t>(_mm_cvtsi128_si64(halves) +
                                        _mm_cvtsi128_si64(_mm_unpackhi_epi64(halves, halves)));
  RequantizeTail(source, offsets, k, count, scale, flip, out, &sum);
  return sum;
}

}  // namespace internal
}  // namespace lowbit
