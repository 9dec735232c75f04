// SSE4.1 back end of lowbit::fixedpoint: four int32 lanes, bit-exact with the scalar back end.
// Empty unless compiled with -msse4.1.
#ifndef LOWBIT_FIXEDPOINT_FIXEDPOINT_SSE41_H_
#define LOWBIT_FIXEDPOINT_FIXEDPOINT_SSE41_H_

#include "lowbit/fixedpoint/fixedpoint.h"

#if defined(__SSE4_1__)

#include <smmintrin.h>

#include <cstdint>

namespace lowbit {
namespace fixedpoint {

/// A struct rather than __m128i itself: as a template argument __m128i loses its may_alias
/// attribute, which GCC warns about.
struct Sse41Int32x4 {
  __m128i v;
};

template <>
struct RawTypeTraits<Sse41Int32x4> {
  using ScalarRawType = std::int32_t;
  static constexpr int kLanes = 4;
};

template <>
inline Sse41Int32x4 Dup<Sse41Int32x4>(std::int32_t x) {
  return {_mm_set1_epi32(x)};
}

template <>
inline Sse41Int32x4 BitAnd(Sse41Int32x4 a, Sse41Int32x4 b) {
  return {_mm_and_si128(a.v, b.v)};
}

template <>
inline Sse41Int32x4 BitOr(Sse41Int32x4 a, Sse41Int32x4 b) {
  return {_mm_or_si128(a.v, b.v)};
}

template <>
inline Sse41Int32x4 BitXor(Sse41Int32x4 a, Sse41Int32x4 b) {
  return {_mm_xor_si128(a.v, b.v)};
}

template <>
inline Sse41Int32x4 BitNot(Sse41Int32x4 a) {
  return {_mm_xor_si128(a.v, _mm_set1_epi32(-1))};
}

template <>
inline Sse41Int32x4 Add(Sse41Int32x4 a, Sse41Int32x4 b) {
  return {_mm_add_epi32(a.v, b.v)};
}

template <>
inline Sse41Int32x4 Sub(Sse41Int32x4 a, Sse41Int32x4 b) {
  return {_mm_sub_epi32(a.v, b.v)};
}

template <>
inline Sse41Int32x4 Neg(Sse41Int32x4 a) {
  return {_mm_sub_epi32(_mm_setzero_si128(), a.v)};
}

template <>
inline Sse41Int32x4 Mul(Sse41Int32x4 a, Sse41Int32x4 b) {
  return {_mm_mullo_epi32(a.v, b.v)};
}

template <>
inline Sse41Int32x4 ShiftLeft(Sse41Int32x4 a, int offset) {
  return {_mm_sll_epi32(a.v, _mm_cvtsi32_si128(offset))};
}

template <>
inline Sse41Int32x4 ShiftRight(Sse41Int32x4 a, int offset) {
  return {_mm_sra_epi32(a.v, _mm_cvtsi32_si128(offset))};
}

namespace detail {

/// SSE4.1 has no per-lane shifts: shift by 16, 8, 4, 2 and 1 in turn, each lane taking a step
/// only where its amount has that bit, moved into the lane's sign bit for blendv_ps to read.
template <bool kLeft>
Sse41Int32x4 ShiftLanes(Sse41Int32x4 a, Sse41Int32x4 offsets) {
  __m128i x = a.v;
  for (int bit = 4; bit >= 0; --bit) {
    const __m128i count = _mm_cvtsi32_si128(1 << bit);
    const __m128i shifted = kLeft ? _mm_sll_epi32(x, count) : _mm_sra_epi32(x, count);
    const __m128 take = _mm_castsi128_ps(_mm_sll_epi32(offsets.v, _mm_cvtsi32_si128(31 - bit)));
    x = _mm_castps_si128(_mm_blendv_ps(_mm_castsi128_ps(x), _mm_castsi128_ps(shifted), take));
  }
  return {x};
}

}  // namespace detail

template <>
inline Sse41Int32x4 ShiftLeft(Sse41Int32x4 a, Sse41Int32x4 offsets) {
  return detail::ShiftLanes<true>(a, offsets);
}

template <>
inline Sse41Int32x4 ShiftRight(Sse41Int32x4 a, Sse41Int32x4 offsets) {
  return detail::ShiftLanes<false>(a, offsets);
}

template <>
inline Sse41Int32x4 MaskIfEqual(Sse41Int32x4 a, Sse41Int32x4 b) {
  return {_mm_cmpeq_epi32(a.v, b.v)};
}

template <>
inline Sse41Int32x4 MaskIfGreaterThan(Sse41Int32x4 a, Sse41Int32x4 b) {
  return {_mm_cmpgt_epi32(a.v, b.v)};
}

template <>
inline Sse41Int32x4 SelectUsingMask(Sse41Int32x4 mask, Sse41Int32x4 if_mask,
                                    Sse41Int32x4 if_not_mask) {
  return {_mm_blendv_epi8(if_not_mask.v, if_mask.v, mask.v)};
}

/// floor((a*b + 2^30) / 2^31), the scalar version's nudged truncation, on the even lanes' and then
/// the odd lanes' 64-bit products. Bits 31..62 of each sum are the result: a logical shift gives
/// them as well as an arithmetic one, which SSE lacks for 64-bit lanes.
template <>
inline Sse41Int32x4 SaturatingRoundingDoublingHighMul(Sse41Int32x4 a, Sse41Int32x4 b) {
  const __m128i nudge = _mm_set1_epi64x(std::int64_t{1} << 30);
  const __m128i even = _mm_add_epi64(_mm_mul_epi32(a.v, b.v), nudge);
  const __m128i odd =
      _mm_add_epi64(_mm_mul_epi32(_mm_srli_epi64(a.v, 32), _mm_srli_epi64(b.v, 32)), nudge);
  const __m128i result = _mm_blend_epi16(_mm_srli_epi64(even, 31), _mm_slli_epi64(odd, 1), 0xcc);
  // Only INT32_MIN * INT32_MIN reaches 2^31, read as INT32_MIN; every other product lands in
  // [-2^31 + 1, 2^31 - 1]. So a lane reading INT32_MIN overflowed, and flipping its every bit
  // saturates it.
  const __m128i overflow = _mm_cmpeq_epi32(result, _mm_set1_epi32(INT32_MIN));
  return {_mm_xor_si128(result, overflow)};
}

/// The scale in one rounding, as the AVX2 version does it (fixedpoint_avx2.h has the derivation).
/// Without VEX, blendvpd takes its mask in xmm0 and each instruction overwrites an operand, so
/// register copies add to the count; the SSE4.1 writer still went from 36.9k to 32.0k instructions
/// per 64^3 GEMM.
template <>
class QuantizeDownScale<Sse41Int32x4> {
 public:
  QuantizeDownScale(Sse41Int32x4 multiplier, int exponent, Sse41Int32x4 offset)
      : even_multiplier_(multiplier.v),
        odd_multiplier_(_mm_srli_epi64(multiplier.v, 32)),
        exponent_(exponent),
        offset_(offset.v) {
    if (exponent == 0) return;
    const detail::BiasedOneRounding biased = detail::BiasedOneRoundingFor(exponent);
    positive_nudge_ = _mm_castsi128_pd(_mm_set1_epi64x(biased.positive_nudge));
    negative_nudge_ = _mm_castsi128_pd(_mm_set1_epi64x(biased.negative_nudge));
    shift_ = _mm_cvtsi32_si128(exponent - 1);
    offset_ = _mm_sub_epi32(offset_, _mm_set1_epi32(biased.excess));
  }

  Sse41Int32x4 operator()(Sse41Int32x4 x) const {
    if (exponent_ == 0) {
      return Add(SaturatingRoundingDoublingHighMul(x, Sse41Int32x4{even_multiplier_}),
                 Sse41Int32x4{offset_});
    }
    const auto nudged = [&](__m128i product) {
      return _mm_add_epi64(product, _mm_castpd_si128(_mm_blendv_pd(positive_nudge_, negative_nudge_,
                                                                   _mm_castsi128_pd(product))));
    };
    const __m128i even = nudged(_mm_mul_epi32(x.v, even_multiplier_));
    const __m128i odd = nudged(_mm_mul_epi32(_mm_srli_epi64(x.v, 32), odd_multiplier_));
    const __m128i quotients = _mm_blend_epi16(_mm_srli_epi64(_mm_srl_epi64(even, shift_), 32),
                                              _mm_srl_epi64(odd, shift_), 0xcc);
    return {_mm_add_epi32(quotients, offset_)};
  }

 private:
  __m128i even_multiplier_;
  __m128i odd_multiplier_;  // in the low halves of the 64-bit lanes
  int exponent_;
  __m128i offset_;  // less the quotients' excess when exponent_ > 0
  __m128d positive_nudge_ = _mm_setzero_pd();
  __m128d negative_nudge_ = _mm_setzero_pd();
  __m128i shift_ = _mm_setzero_si128();
};

}  // namespace fixedpoint
}  // namespace lowbit

#endif  // defined(__SSE4_1__)

#endif  // LOWBIT_FIXEDPOINT_FIXEDPOINT_SSE41_H_
