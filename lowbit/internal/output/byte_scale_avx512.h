// ByteScaleConstants' float form of a QuantizeDown before a clamp to bytes
// (lowbit/internal/output/output_line.h) on 16 AVX-512 lanes, and the narrowing of four vectors
// to 64 bytes: shared by the AVX-512 writer and the AVX-512 VNNI kernel's lines written between
// its steps. For translation units compiled with AVX-512 F and BW.
#ifndef LOWBIT_INTERNAL_OUTPUT_BYTE_SCALE_AVX512_H_
#define LOWBIT_INTERNAL_OUTPUT_BYTE_SCALE_AVX512_H_

#include <immintrin.h>

namespace lowbit {
namespace internal {
namespace byte_scale_avx512 {

// Each float operation rounds to nearest with its own rounding, whatever the caller set in MXCSR.
constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// t = fma(float(x), multiplier, addend).
__attribute__((always_inline)) inline __m512 Value(__m512i x, __m512 multiplier, __m512 addend) {
  return _mm512_fmadd_round_ps(_mm512_cvt_roundepi32_ps(x, kNearest), multiplier, addend, kNearest);
}

// The lanes of `mask` whose t lies outside the window (u = t + magic has some of the window's
// bits), where floor(t) is the exact result.
__attribute__((always_inline)) inline __mmask16 OutsideWindow(__mmask16 mask, __m512 t,
                                                              __m512 magic, __m512i window) {
  return _mm512_mask_test_epi32_mask(
      mask, _mm512_castps_si512(_mm512_add_round_ps(t, magic, kNearest)), window);
}

__attribute__((always_inline)) inline __m512i Floor(__m512 t) {
  return _mm512_cvt_roundps_epi32(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}

// Four vectors of int32 narrowed with saturation to int8 or uint8, 64 bytes in entry order. The
// packs saturate per 128-bit lane: lane L ends up with the vectors' lanes 4L .. 4L + 3 in turn,
// which one vpermd puts in order.
__attribute__((always_inline)) inline __m512i SaturatedBytes(__m512i v0, __m512i v1, __m512i v2,
                                                             __m512i v3, bool is_signed) {
  const __m512i low = _mm512_packs_epi32(v0, v1);
  const __m512i high = _mm512_packs_epi32(v2, v3);
  const __m512i bytes = is_signed ? _mm512_packs_epi16(low, high) : _mm512_packus_epi16(low, high);
  const __m512i in_order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_epi32(in_order, bytes);
}

}  // namespace byte_scale_avx512
}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_BYTE_SCALE_AVX512_H_
