// AVX2 back end of lowbit::fixedpoint: eight int32 lanes, bit-exact with the scalar back end.
// Empty unless compiled with -mavx2.
#ifndef LOWBIT_FIXEDPOINT_FIXEDPOINT_AVX2_H_
#define LOWBIT_FIXEDPOINT_FIXEDPOINT_AVX2_H_

#include "lowbit/fixedpoint/fixedpoint.h"

#if defined(__AVX2__)

#include <immintrin.h>

#include <cstdint>

namespace lowbit {
namespace fixedpoint {

/// A struct rather than __m256i itself: as a template argument __m256i loses its may_alias
/// attribute, which GCC warns about.
struct Avx2Int32x8 {
  __m256i v;
};

template <>
struct RawTypeTraits<Avx2Int32x8> {
  using ScalarRawType = std::int32_t;
  static constexpr int kLanes = 8;
};

template <>
inline Avx2Int32x8 Dup<Avx2Int32x8>(std::int32_t x) {
  return {_mm256_set1_epi32(x)};
}

template <>
inline Avx2Int32x8 BitAnd(Avx2Int32x8 a, Avx2Int32x8 b) {
  return {_mm256_and_si256(a.v, b.v)};
}

template <>
inline Avx2Int32x8 BitOr(Avx2Int32x8 a, Avx2Int32x8 b) {
  return {_mm256_or_si256(a.v, b.v)};
}

template <>
inline Avx2Int32x8 BitXor(Avx2Int32x8 a, Avx2Int32x8 b) {
  return {_mm256_xor_si256(a.v, b.v)};
}

template <>
inline Avx2Int32x8 BitNot(Avx2Int32x8 a) {
  return {_mm256_xor_si256(a.v, _mm256_set1_epi32(-1))};
}

template <>
inline Avx2Int32x8 Add(Avx2Int32x8 a, Avx2Int32x8 b) {
  return {_mm256_add_epi32(a.v, b.v)};
}

template <>
inline Avx2Int32x8 Sub(Avx2Int32x8 a, Avx2Int32x8 b) {
  return {_mm256_sub_epi32(a.v, b.v)};
}

template <>
inline Avx2Int32x8 Neg(Avx2Int32x8 a) {
  return {_mm256_sub_epi32(_mm256_setzero_si256(), a.v)};
}

template <>
inline Avx2Int32x8 Mul(Avx2Int32x8 a, Avx2Int32x8 b) {
  return {_mm256_mullo_epi32(a.v, b.v)};
}

template <>
inline Avx2Int32x8 ShiftLeft(Avx2Int32x8 a, int offset) {
  return {_mm256_sll_epi32(a.v, _mm_cvtsi32_si128(offset))};
}

template <>
inline Avx2Int32x8 ShiftRight(Avx2Int32x8 a, int offset) {
  return {_mm256_sra_epi32(a.v, _mm_cvtsi32_si128(offset))};
}

template <>
inline Avx2Int32x8 ShiftLeft(Avx2Int32x8 a, Avx2Int32x8 offsets) {
  return {_mm256_sllv_epi32(a.v, offsets.v)};
}

template <>
inline Avx2Int32x8 ShiftRight(Avx2Int32x8 a, Avx2Int32x8 offsets) {
  return {_mm256_srav_epi32(a.v, offsets.v)};
}

template <>
inline Avx2Int32x8 MaskIfEqual(Avx2Int32x8 a, Avx2Int32x8 b) {
  return {_mm256_cmpeq_epi32(a.v, b.v)};
}

template <>
inline Avx2Int32x8 MaskIfGreaterThan(Avx2Int32x8 a, Avx2Int32x8 b) {
  return {_mm256_cmpgt_epi32(a.v, b.v)};
}

template <>
inline Avx2Int32x8 SelectUsingMask(Avx2Int32x8 mask, Avx2Int32x8 if_mask, Avx2Int32x8 if_not_mask) {
  return {_mm256_blendv_epi8(if_not_mask.v, if_mask.v, mask.v)};
}

/// floor((a*b + 2^30) / 2^31), the scalar version's nudged truncation, on the even lanes' and then
/// the odd lanes' 64-bit products. Bits 31..62 of each sum are the result: a logical shift gives
/// them as well as an arithmetic one, which AVX2 lacks for 64-bit lanes.
template <>
inline Avx2Int32x8 SaturatingRoundingDoublingHighMul(Avx2Int32x8 a, Avx2Int32x8 b) {
  const __m256i nudge = _mm256_set1_epi64x(std::int64_t{1} << 30);
  const __m256i even = _mm256_add_epi64(_mm256_mul_epi32(a.v, b.v), nudge);
  const __m256i odd = _mm256_add_epi64(
      _mm256_mul_epi32(_mm256_srli_epi64(a.v, 32), _mm256_srli_epi64(b.v, 32)), nudge);
  const __m256i result =
      _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xaa);
  // Only INT32_MIN * INT32_MIN reaches 2^31, read as INT32_MIN; every other product lands in
  // [-2^31 + 1, 2^31 - 1]. So a lane reading INT32_MIN overflowed, and flipping its every bit
  // saturates it.
  const __m256i overflow = _mm256_cmpeq_epi32(result, _mm256_set1_epi32(INT32_MIN));
  return {_mm256_xor_si256(result, overflow)};
}

/// The scale in one rounding. With s = 1 for a negative product, RoundingDivideByPOT(y, e) is
/// floor((y + 2^(e-1) - s) / 2^e) for e >= 1, and the SRDHM y is floor((p + 2^30) / 2^31) for
/// p = x * multiplier (s may follow the sign of p rather than of y: they differ only where y is 0,
/// and both then give 0). Nested floors of integers merge: the result is
///   floor((p + 2^30 + (2^(e-1) - s) * 2^31) / 2^(31+e)).
/// That keeps the one product SRDHM saturates, 2^62, right as well: 2^31 and the saturated
/// 2^31 - 1 give the same quotient. Adding 2^63 makes every sum positive and below 2^64, so that
/// a logical shift, all AVX2 has for 64-bit lanes, divides it; the quotient comes out 2^(32-e)
/// too large, which the offset takes back. 12 instructions for eight lanes against 17 for the two
/// roundings and the offset, with the constants derived from the parameters once.
template <>
class QuantizeDownScale<Avx2Int32x8> {
 public:
  QuantizeDownScale(Avx2Int32x8 multiplier, int exponent, Avx2Int32x8 offset)
      : even_multiplier_(multiplier.v),
        odd_multiplier_(_mm256_srli_epi64(multiplier.v, 32)),
        exponent_(exponent),
        offset_(offset.v) {
    if (exponent == 0) return;
    const detail::BiasedOneRounding biased = detail::BiasedOneRoundingFor(exponent);
    positive_nudge_ = _mm256_castsi256_pd(_mm256_set1_epi64x(biased.positive_nudge));
    negative_nudge_ = _mm256_castsi256_pd(_mm256_set1_epi64x(biased.negative_nudge));
    shift_ = _mm_cvtsi32_si128(exponent - 1);
    offset_ = _mm256_sub_epi32(offset_, _mm256_set1_epi32(biased.excess));
  }

  Avx2Int32x8 operator()(Avx2Int32x8 x) const {
    if (exponent_ == 0) {
      return Add(SaturatingRoundingDoublingHighMul(x, Avx2Int32x8{even_multiplier_}),
                 Avx2Int32x8{offset_});
    }
    // vblendvpd picks by the sign bit of each 64-bit lane: the product's own sign.
    const auto nudged = [&](__m256i product) {
      return _mm256_add_epi64(product,
                              _mm256_castpd_si256(_mm256_blendv_pd(positive_nudge_, negative_nudge_,
                                                                   _mm256_castsi256_pd(product))));
    };
    const __m256i even = nudged(_mm256_mul_epi32(x.v, even_multiplier_));
    const __m256i odd = nudged(_mm256_mul_epi32(_mm256_srli_epi64(x.v, 32), odd_multiplier_));
    // Shifted by e - 1, each sum holds its quotient, which is below 2^32, in its high half: the
    // odd lanes' are in place, the even lanes' move down. One shift count keeps one register free.
    const __m256i quotients = _mm256_blend_epi32(
        _mm256_srli_epi64(_mm256_srl_epi64(even, shift_), 32), _mm256_srl_epi64(odd, shift_), 0xaa);
    return {_mm256_add_epi32(quotients, offset_)};
  }

 private:
  __m256i even_multiplier_;
  __m256i odd_multiplier_;  // in the low halves of the 64-bit lanes
  int exponent_;
  __m256i offset_;  // less the quotients' excess when exponent_ > 0
  __m256d positive_nudge_ = _mm256_setzero_pd();
  __m256d negative_nudge_ = _mm256_setzero_pd();
  __m128i shift_ = _mm_setzero_si128();
};

}  // namespace fixedpoint
}  // namespace lowbit

#endif  // defined(__AVX2__)

#endif  // LOWBIT_FIXEDPOINT_FIXEDPOINT_AVX2_H_
