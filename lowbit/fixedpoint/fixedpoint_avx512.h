// AVX-512 back end of lowbit::fixedpoint: sixteen int32 lanes, bit-exact with the scalar back end.
// Empty unless compiled with -mavx512f.
#ifndef LOWBIT_FIXEDPOINT_FIXEDPOINT_AVX512_H_
#define LOWBIT_FIXEDPOINT_FIXEDPOINT_AVX512_H_

#include "lowbit/fixedpoint/fixedpoint.h"

#if defined(__AVX512F__)

// GCC 12's AVX-512 intrinsics start many results from _mm512_undefined_*(), which its
// -W(maybe-)uninitialized then reports wherever they are inlined (GCC bug 105593, fixed in 13). The
// diagnostic state follows source lines, so this holds where the header is first included: files
// that use the AVX-512 intrinsics include them through this header.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // a GCC warning only
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>

namespace lowbit {
namespace fixedpoint {

/// A struct for the reason Avx2Int32x8 is one (fixedpoint_avx2.h).
struct Avx512Int32x16 {
  __m512i v;
};

template <>
struct RawTypeTraits<Avx512Int32x16> {
  using ScalarRawType = std::int32_t;
  static constexpr int kLanes = 16;
};

namespace detail {
/// A comparison's lanes as fixedpoint masks: all ones where true.
inline Avx512Int32x16 MaskFromBits(__mmask16 bits) {
  return {_mm512_maskz_mov_epi32(bits, _mm512_set1_epi32(-1))};
}
constexpr __mmask16 kOddLanes = 0xaaaa;
/// Each 64-bit lane's odd int32 lane copied into its even one, where vpmuldq reads it. A vpshufd
/// rather than a 64-bit shift: for 512-bit vectors shifts run on one port of two, and the
/// multiplications that follow keep it busy.
inline __m512i OddToEven(__m512i v) { return _mm512_shuffle_epi32(v, _MM_PERM_DDBB); }
}  // namespace detail

template <>
inline Avx512Int32x16 Dup<Avx512Int32x16>(std::int32_t x) {
  return {_mm512_set1_epi32(x)};
}

template <>
inline Avx512Int32x16 BitAnd(Avx512Int32x16 a, Avx512Int32x16 b) {
  return {_mm512_and_si512(a.v, b.v)};
}

template <>
inline Avx512Int32x16 BitOr(Avx512Int32x16 a, Avx512Int32x16 b) {
  return {_mm512_or_si512(a.v, b.v)};
}

template <>
inline Avx512Int32x16 BitXor(Avx512Int32x16 a, Avx512Int32x16 b) {
  return {_mm512_xor_si512(a.v, b.v)};
}

template <>
inline Avx512Int32x16 BitNot(Avx512Int32x16 a) {
  return {_mm512_xor_si512(a.v, _mm512_set1_epi32(-1))};
}

template <>
inline Avx512Int32x16 Add(Avx512Int32x16 a, Avx512Int32x16 b) {
  return {_mm512_add_epi32(a.v, b.v)};
}

template <>
inline Avx512Int32x16 Sub(Avx512Int32x16 a, Avx512Int32x16 b) {
  return {_mm512_sub_epi32(a.v, b.v)};
}

template <>
inline Avx512Int32x16 Neg(Avx512Int32x16 a) {
  return {_mm512_sub_epi32(_mm512_setzero_si512(), a.v)};
}

template <>
inline Avx512Int32x16 Mul(Avx512Int32x16 a, Avx512Int32x16 b) {
  return {_mm512_mullo_epi32(a.v, b.v)};
}

template <>
inline Avx512Int32x16 ShiftLeft(Avx512Int32x16 a, int offset) {
  return {_mm512_sll_epi32(a.v, _mm_cvtsi32_si128(offset))};
}

template <>
inline Avx512Int32x16 ShiftRight(Avx512Int32x16 a, int offset) {
  return {_mm512_sra_epi32(a.v, _mm_cvtsi32_si128(offset))};
}

template <>
inline Avx512Int32x16 ShiftLeft(Avx512Int32x16 a, Avx512Int32x16 offsets) {
  return {_mm512_sllv_epi32(a.v, offsets.v)};
}

template <>
inline Avx512Int32x16 ShiftRight(Avx512Int32x16 a, Avx512Int32x16 offsets) {
  return {_mm512_srav_epi32(a.v, offsets.v)};
}

template <>
inline Avx512Int32x16 MaskIfEqual(Avx512Int32x16 a, Avx512Int32x16 b) {
  return detail::MaskFromBits(_mm512_cmpeq_epi32_mask(a.v, b.v));
}

template <>
inline Avx512Int32x16 MaskIfGreaterThan(Avx512Int32x16 a, Avx512Int32x16 b) {
  return detail::MaskFromBits(_mm512_cmpgt_epi32_mask(a.v, b.v));
}

/// Bitwise (mask & if_mask) | (~mask & if_not_mask) in one vpternlogd: the same as a lane select
/// for masks whose lanes are all ones or all zeros.
template <>
inline Avx512Int32x16 SelectUsingMask(Avx512Int32x16 mask, Avx512Int32x16 if_mask,
                                      Avx512Int32x16 if_not_mask) {
  return {_mm512_ternarylogic_epi32(mask.v, if_mask.v, if_not_mask.v, 0xca)};
}

/// floor((a*b + 2^30) / 2^31) on the even lanes' and then the odd lanes' 64-bit products, as in
/// fixedpoint_avx2.h, whose comment has the reasoning; the lone overflowing lane, INT32_MIN *
/// INT32_MIN, is replaced by INT32_MAX under a mask.
template <>
inline Avx512Int32x16 SaturatingRoundingDoublingHighMul(Avx512Int32x16 a, Avx512Int32x16 b) {
  const __m512i nudge = _mm512_set1_epi64(std::int64_t{1} << 30);
  const __m512i even = _mm512_add_epi64(_mm512_mul_epi32(a.v, b.v), nudge);
  const __m512i odd =
      _mm512_add_epi64(_mm512_mul_epi32(detail::OddToEven(a.v), detail::OddToEven(b.v)), nudge);
  const __m512i result = _mm512_mask_blend_epi32(detail::kOddLanes, _mm512_srli_epi64(even, 31),
                                                 _mm512_slli_epi64(odd, 1));
  const __mmask16 overflow = _mm512_cmpeq_epi32_mask(result, _mm512_set1_epi32(INT32_MIN));
  return {_mm512_mask_mov_epi32(result, overflow, _mm512_set1_epi32(INT32_MAX))};
}

/// The scale in one rounding, floor((p + 2^30 + (2^(e-1) - s) * 2^31) / 2^(31+e)) for the product
/// p = x * multiplier, s = 1 where p is negative: fixedpoint_avx2.h derives it. AVX-512 shifts
/// 64-bit lanes arithmetically, so the sums need no bias; the negative products' smaller nudge is
/// a masked subtraction. The odd lanes' quotients are left in the high halves of their 64-bit
/// lanes, where the odd lanes are: a shift by e - 1 puts floor(n / 2^(31+e)) there, one shift
/// instead of two.
template <>
class QuantizeDownScale<Avx512Int32x16> {
 public:
  QuantizeDownScale(Avx512Int32x16 multiplier, int exponent, Avx512Int32x16 offset)
      : even_multiplier_(multiplier.v),
        odd_multiplier_(detail::OddToEven(multiplier.v)),
        exponent_(exponent),
        offset_(offset.v) {
    if (exponent == 0) return;
    nudge_ = _mm512_set1_epi64(detail::OneRoundingNudge(exponent));
    even_shift_ = _mm512_set1_epi64(31 + exponent);
    odd_shift_ = _mm512_set1_epi64(exponent - 1);
  }

  Avx512Int32x16 operator()(Avx512Int32x16 x) const {
    if (exponent_ == 0) {
      return Add(SaturatingRoundingDoublingHighMul(x, Avx512Int32x16{even_multiplier_}),
                 Avx512Int32x16{offset_});
    }
    const auto shifted = [&](__m512i product, __m512i shift) {
      const __mmask8 negative = _mm512_cmplt_epi64_mask(product, _mm512_setzero_si512());
      const __m512i nudged = _mm512_add_epi64(product, nudge_);
      return _mm512_srav_epi64(
          _mm512_mask_sub_epi64(nudged, negative, nudged, _mm512_set1_epi64(std::int64_t{1} << 31)),
          shift);
    };
    // Each quotient fits 32 bits: the even ones are the low halves of their lanes, the odd ones
    // the high halves.
    const __m512i even = shifted(_mm512_mul_epi32(x.v, even_multiplier_), even_shift_);
    const __m512i odd =
        shifted(_mm512_mul_epi32(detail::OddToEven(x.v), odd_multiplier_), odd_shift_);
    return {_mm512_add_epi32(_mm512_mask_blend_epi32(detail::kOddLanes, even, odd), offset_)};
  }

 private:
  __m512i even_multiplier_;
  __m512i odd_multiplier_;  // in the low halves of the 64-bit lanes
  int exponent_;
  __m512i offset_;
  __m512i nudge_ = _mm512_setzero_si512();
  __m512i even_shift_ = _mm512_setzero_si512();
  __m512i odd_shift_ = _mm512_setzero_si512();
};

}  // namespace fixedpoint
}  // namespace lowbit

#endif  // defined(__AVX512F__)

#endif  // LOWBIT_FIXEDPOINT_FIXEDPOINT_AVX512_H_
