// NEON back end of lowbit::fixedpoint: four int32 lanes in an int32x4_t, bit-exact with the
// scalar back end, on the native saturating and rounding instructions. Empty without NEON.
#ifndef LOWBIT_FIXEDPOINT_FIXEDPOINT_NEON_H_
#define LOWBIT_FIXEDPOINT_FIXEDPOINT_NEON_H_

#include "lowbit/fixedpoint/fixedpoint.h"

#if defined(__ARM_NEON)

#include <arm_neon.h>

#include <cstdint>

namespace lowbit {
namespace fixedpoint {

template <>
struct RawTypeTraits<int32x4_t> {
  using ScalarRawType = std::int32_t;
  static constexpr int kLanes = 4;
};

template <>
inline int32x4_t Dup<int32x4_t>(std::int32_t x) {
  return vdupq_n_s32(x);
}

template <>
inline int32x4_t BitAnd(int32x4_t a, int32x4_t b) {
  return vandq_s32(a, b);
}

template <>
inline int32x4_t BitOr(int32x4_t a, int32x4_t b) {
  return vorrq_s32(a, b);
}

template <>
inline int32x4_t BitXor(int32x4_t a, int32x4_t b) {
  return veorq_s32(a, b);
}

template <>
inline int32x4_t BitNot(int32x4_t a) {
  return vmvnq_s32(a);
}

template <>
inline int32x4_t Add(int32x4_t a, int32x4_t b) {
  return vaddq_s32(a, b);
}

template <>
inline int32x4_t Sub(int32x4_t a, int32x4_t b) {
  return vsubq_s32(a, b);
}

template <>
inline int32x4_t Neg(int32x4_t a) {
  return vnegq_s32(a);
}

template <>
inline int32x4_t Mul(int32x4_t a, int32x4_t b) {
  return vmulq_s32(a, b);
}

/// VSHL shifts each lane left by a signed amount, right (arithmetic, truncating) when negative.
template <>
inline int32x4_t ShiftLeft(int32x4_t a, int offset) {
  return vshlq_s32(a, vdupq_n_s32(offset));
}

template <>
inline int32x4_t ShiftRight(int32x4_t a, int offset) {
  return vshlq_s32(a, vdupq_n_s32(-offset));
}

template <>
inline int32x4_t ShiftLeft(int32x4_t a, int32x4_t offsets) {
  return vshlq_s32(a, offsets);
}

template <>
inline int32x4_t ShiftRight(int32x4_t a, int32x4_t offsets) {
  return vshlq_s32(a, vnegq_s32(offsets));
}

template <>
inline int32x4_t MaskIfZero(int32x4_t a) {
  return vreinterpretq_s32_u32(vceqq_s32(a, vdupq_n_s32(0)));
}

template <>
inline int32x4_t MaskIfNonZero(int32x4_t a) {
  return vreinterpretq_s32_u32(vtstq_s32(a, a));
}

template <>
inline int32x4_t MaskIfEqual(int32x4_t a, int32x4_t b) {
  return vreinterpretq_s32_u32(vceqq_s32(a, b));
}

template <>
inline int32x4_t MaskIfNotEqual(int32x4_t a, int32x4_t b) {
  return vmvnq_s32(MaskIfEqual(a, b));
}

template <>
inline int32x4_t MaskIfGreaterThan(int32x4_t a, int32x4_t b) {
  return vreinterpretq_s32_u32(vcgtq_s32(a, b));
}

template <>
inline int32x4_t MaskIfGreaterThanOrEqual(int32x4_t a, int32x4_t b) {
  return vreinterpretq_s32_u32(vcgeq_s32(a, b));
}

template <>
inline int32x4_t MaskIfLessThan(int32x4_t a, int32x4_t b) {
  return vreinterpretq_s32_u32(vcltq_s32(a, b));
}

template <>
inline int32x4_t MaskIfLessThanOrEqual(int32x4_t a, int32x4_t b) {
  return vreinterpretq_s32_u32(vcleq_s32(a, b));
}

template <>
inline int32x4_t SelectUsingMask(int32x4_t mask, int32x4_t if_mask, int32x4_t if_not_mask) {
  return vbslq_s32(vreinterpretq_u32_s32(mask), if_mask, if_not_mask);
}

template <>
inline int32x4_t SaturatingAdd(int32x4_t a, int32x4_t b) {
  return vqaddq_s32(a, b);
}

/// VQRDMULH is the definition the scalar version follows.
template <>
inline int32x4_t SaturatingRoundingDoublingHighMul(int32x4_t a, int32x4_t b) {
  return vqrdmulhq_s32(a, b);
}

namespace detail {

/// VRSHL by -exponent rounds ties up; taking 1 from negative x first moves their ties below the
/// halfway point, so they round down, away from zero, and changes nothing else. The saturating
/// subtraction leaves INT32_MIN, which has no remainder to round, unchanged.
inline int32x4_t RoundingShiftRightAwayFromZero(int32x4_t x, int32x4_t negated_exponent) {
  const int32x4_t fixup = vshrq_n_s32(vandq_s32(x, negated_exponent), 31);
  return vrshlq_s32(vqaddq_s32(x, fixup), negated_exponent);
}

template <>
inline int32x4_t SaturatingShiftLeft(int32x4_t x, int exponent) {
  return vqshlq_s32(x, vdupq_n_s32(exponent));
}

}  // namespace detail

template <>
inline int32x4_t RoundingDivideByPOT(int32x4_t x, int exponent) {
  return detail::RoundingShiftRightAwayFromZero(x, vdupq_n_s32(-exponent));
}

template <>
inline int32x4_t RoundingDivideByPOT(int32x4_t x, int32x4_t exponent) {
  return detail::RoundingShiftRightAwayFromZero(x, vnegq_s32(exponent));
}

}  // namespace fixedpoint
}  // namespace lowbit

#endif  // defined(__ARM_NEON)

#endif  // LOWBIT_FIXEDPOINT_FIXEDPOINT_NEON_H_
