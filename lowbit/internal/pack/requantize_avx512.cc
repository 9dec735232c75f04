// The requantization run with AVX-512 BW (lowbit/internal/pack/requantize.h): 64 values per step,
// the last one masked, the same integer formula as every other run, so the bits do not depend on
// which one runs.
#include <cstdint>

// <immintrin.h> through this header first: without GCC 12's false -Wuninitialized reports.
#include "lowbit/fixedpoint/fixedpoint_avx512.h"
#include "lowbit/internal/pack/requantize.h"

namespace lowbit {
namespace internal {

std::uint32_t RequantizeRunAvx512(const std::uint8_t* source, const std::uint8_t* offsets,
                                  int count, std::uint16_t scale, std::uint8_t flip,
                                  std::uint8_t* out) {
  const __m512i zero = _mm512_setzero_si512();
  const __m512i flip_bytes = _mm512_set1_epi8(static_cast<char>(flip));
  const __m512i scale_words = _mm512_set1_epi16(static_cast<short>(scale));
  const __m512i magic = _mm512_set1_epi16(static_cast<short>(0x8081));
  __m512i sums = zero;
  // Lanes outside `mask` load as zeros and are neither stored nor summed.
  const auto step = [&](int k, __mmask64 mask) {
    const __m512i values = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, source + k), flip_bytes);
    const __m512i offset_bytes = _mm512_maskz_loadu_epi8(mask, offsets + k);
    // Unpacking and packing both work within 128-bit lanes, so the order comes back intact.
    const __m512i low =
        _mm512_add_epi16(_mm512_mullo_epi16(_mm512_unpacklo_epi8(values, zero), scale_words),
                         _mm512_unpacklo_epi8(offset_bytes, zero));
    const __m512i high =
        _mm512_add_epi16(_mm512_mullo_epi16(_mm512_unpackhi_epi8(values, zero), scale_words),
                         _mm512_unpackhi_epi8(offset_bytes, zero));
    const __m512i requantized =
        _mm512_maskz_packus_epi16(mask, _mm512_srli_epi16(_mm512_mulhi_epu16(low, magic), 7),
                                  _mm512_srli_epi16(_mm512_mulhi_epu16(high, magic), 7));
    _mm512_mask_storeu_epi8(out + k, mask, requantized);
    sums = _mm512_add_epi64(sums, _mm512_sad_epu8(requantized, zero));
  };
  int k = 0;
  for (; k + 64 <= count; k += 64) step(k, ~__mmask64{0});
  if (k < count) step(k, (__mmask64{1} << (count - k)) - 1);
  // Eight 64-bit lane sums of at most 8 x 255 a step each: the 64-bit sum cannot wrap.
  const __m256i quarters =
      _mm256_add_epi64(_mm512_castsi512_si256(sums), _mm512_extracti64x4_epi64(sums, 1));
  const __m128i halves =
      _mm_add_epi64(_mm256_castsi256_si128(quarters), _mm256_extracti128_si256(quarters, 1));
  return static_cast<std::uint32_t>(_mm_cvtsi128_si64(halves) +
                                    _mm_cvtsi128_si64(_mm_unpackhi_epi64(halves, halves)));
}

}  // namespace internal
}  // namespace lowbit
