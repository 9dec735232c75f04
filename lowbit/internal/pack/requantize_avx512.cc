// The requantization of a line with AVX-512 BW (lowbit/internal/pack/requantize.h): 64 values per
// step, across the blocks of the rounding sequence, the same integer formula as every other run,
// so the bits do not depend on which one runs; and the blocks' phases of 16 lines at once.
#include "lowbit/internal/pack/requantize_avx512.h"  // and <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace lowbit {
namespace internal {
namespace {

// x * multiplier modulo 2^64 in each 64-bit lane, from 32 x 32-bit products: AVX-512 F has no
// 64-bit multiply (DQ's vpmullq is not asked of these CPUs).
__m512i MultiplyLow64(__m512i x, std::uint64_t multiplier) {
  const __m512i low = _mm512_set1_epi64(static_cast<std::int64_t>(multiplier & 0xffffffffu));
  const __m512i high = _mm512_set1_epi64(static_cast<std::int64_t>(multiplier >> 32));
  const __m512i cross =
      _mm512_add_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, 32), low), _mm512_mul_epu32(x, high));
  return _mm512_add_epi64(_mm512_mul_epu32(x, low), _mm512_slli_epi64(cross, 32));
}

__m512i SplitMix64(__m512i x) {
  x = _mm512_add_epi64(x, _mm512_set1_epi64(static_cast<std::int64_t>(kSplitMixIncrement)));
  x = MultiplyLow64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 30)), kSplitMixFirstMultiplier);
  x = MultiplyLow64(_mm512_xor_si512(x, _mm512_srli_epi64(x, 27)), kSplitMixSecondMultiplier);
  return _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
}

// hash % 255 for the 64-bit hash in each lane: the sum of its 8 bytes (256 = 1 modulo 255), at
// most 2040, less 255 times that sum's quotient by 255, (sum * 0x8081) >> 23 below 2^16.
__m512i Modulo255(__m512i hash) {
  const __m512i sum = _mm512_sad_epu8(hash, _mm512_setzero_si512());
  const __m512i quotient = _mm512_srli_epi64(_mm512_mul_epu32(sum, _mm512_set1_epi64(0x8081)), 23);
  return _mm512_sub_epi64(_mm512_add_epi64(sum, quotient), _mm512_slli_epi64(quotient, 8));
}

}  // namespace

// A line in each 64-bit lane, two vectors of lines at a time: each hash is a chain of dependent
// multiplies, and with the lines of one vector a call waited on them (8 lines a call, a twentieth
// of a requantized 1 x 1-bit GEMM at 256^3).
void BlockPhasesAvx512(std::uint64_t first_key, int lines, int blocks, std::uint8_t* phases) {
  constexpr int kLanes = 8;
  const __m512i lanes = _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  for (int first = 0; first < lines; first += 2 * kLanes) {
    const __m512i keys =
        _mm512_add_epi64(_mm512_set1_epi64(static_cast<std::int64_t>(first_key + first)), lanes);
    const __m512i line_hashes[2] = {SplitMix64(keys),
                                    SplitMix64(_mm512_add_epi64(keys, _mm512_set1_epi64(kLanes)))};
    const int count = std::min(2 * kLanes, lines - first);
    for (int block = 0; block < blocks; ++block) {
      const __m512i block_vector = _mm512_set1_epi64(block);
      alignas(16) std::uint8_t block_phases[2 * kLanes];
      for (int half = 0; half < 2; ++half) {
        const __m512i phase =
            Modulo255(SplitMix64(_mm512_add_epi64(line_hashes[half], block_vector)));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(block_phases + half * kLanes),
                         _mm512_cvtepi64_epi8(phase));
      }
      for (int i = 0; i < count; ++i) phases[(first + i) * blocks + block] = block_phases[i];
    }
  }
}

std::uint32_t RequantizeLineAvx512(const std::uint8_t* source, const std::uint8_t* table_plus_one,
                                   const std::uint8_t* phases, int count, std::uint16_t scale,
                                   std::uint8_t flip, std::uint8_t* out) {
  const __m512i zero = _mm512_setzero_si512();
  const Requantizer requantize(scale, flip);
  __m512i sums = zero;
  // Lanes outside `in_line` load as zeros and are neither stored nor summed.
  const auto step = [&](int k, __mmask64 in_line) {
    const __m512i requantized =
        requantize(requantize.Load(source + k, in_line),
                   SequenceStep(k, count).Offsets(table_plus_one, phases, in_line), in_line);
    _mm512_mask_storeu_epi8(out + k, in_line, requantized);
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
