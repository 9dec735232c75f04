// ByteScaleConstants' and RescaledByteScaleConstants' float forms of a QuantizeDown before a clamp
// to bytes (lowbit/internal/output/output_line.h) on 16 AVX-512 lanes, the exact rescale of
// requantized operands' sums, and the narrowing of four vectors to 64 bytes: shared by the AVX-512
// writer and the AVX-512 VNNI kernel's lines written between its steps. For translation units
// compiled with AVX-512 F and BW.
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

// RescaledByteScaleConstants' terms of a line along its entries: fma(line_a, along_a,
// fma(line_b, along_b, addend)), or with one varying term fma(line_a, along_a, addend).
__attribute__((always_inline)) inline __m512 RescaleTerms(__m512 line_a, __m512 along_a,
                                                          __m512 addend) {
  return _mm512_fmadd_round_ps(line_a, along_a, addend, kNearest);
}
__attribute__((always_inline)) inline __m512 RescaleTerms(__m512 line_a, __m512 along_a,
                                                          __m512 line_b, __m512 along_b,
                                                          __m512 addend) {
  return RescaleTerms(line_a, along_a, RescaleTerms(line_b, along_b, addend));
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

// Rescale (lowbit/internal/driver/driver.h) of the `lanes` of 16 sums, with their along terms from
// along_a and along_b on: round((65025 * sums + line_a * along_a[i] + line_b * along_b[i]) *
// reciprocal), saturated to int32 (other lanes' results are meaningless; nothing past them is
// read). As in output_avx2.cc: every product and sum is an exact integer in double, and vcvtpd2dq
// saturates below; only the upper bound needs a clamp.
inline __m512i RescaledSums(__m512i sums, double line_a, double line_b, const double* along_a,
                            const double* along_b, double reciprocal, __mmask16 lanes) {
  const auto eight = [&](__m256i eight_sums, int first) {
    const auto mask = static_cast<__mmask8>(lanes >> first);
    const __m512d n = _mm512_fmadd_pd(
        _mm512_set1_pd(65025.0), _mm512_cvtepi32_pd(eight_sums),
        _mm512_fmadd_pd(
            _mm512_set1_pd(line_a), _mm512_maskz_loadu_pd(mask, along_a + first),
            _mm512_mul_pd(_mm512_set1_pd(line_b), _mm512_maskz_loadu_pd(mask, along_b + first))));
    const __m512d quotient = _mm512_mul_pd(n, _mm512_set1_pd(reciprocal));
    return _mm512_cvtpd_epi32(_mm512_min_pd(quotient, _mm512_set1_pd(2147483647.0)));
  };
  return _mm512_inserti64x4(_mm512_castsi256_si512(eight(_mm512_castsi512_si256(sums), 0)),
                            eight(_mm512_extracti64x4_epi64(sums, 1), 8), 1);
}

}  // namespace byte_scale_avx512
}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_BYTE_SCALE_AVX512_H_
