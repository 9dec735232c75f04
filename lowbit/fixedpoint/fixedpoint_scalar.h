// Scalar (int32_t / int16_t) back end of lowbit::fixedpoint: the raw-type traits and the primitive
// operations that every generic fixed-point function is written with.
#ifndef LOWBIT_FIXEDPOINT_FIXEDPOINT_SCALAR_H_
#define LOWBIT_FIXEDPOINT_FIXEDPOINT_SCALAR_H_

#include <cassert>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace lowbit {
namespace fixedpoint {

/// A raw type is what one FixedPoint value is stored in: a scalar integer, or (in SIMD back ends) a
/// register holding kLanes such integers. Every back end specializes this.
template <typename Raw>
struct RawTypeTraits;

template <>
struct RawTypeTraits<std::int32_t> {
  using ScalarRawType = std::int32_t;
  static constexpr int kLanes = 1;
};

template <>
struct RawTypeTraits<std::int16_t> {
  using ScalarRawType = std::int16_t;
  static constexpr int kLanes = 1;
};

template <typename Raw>
using ScalarRawTypeOf = typename RawTypeTraits<Raw>::ScalarRawType;

namespace detail {

template <typename Raw>
constexpr bool kIsScalarRaw =
    std::is_same<Raw, std::int32_t>::value || std::is_same<Raw, std::int16_t>::value;

/// Wrapping arithmetic is done on uint32_t, where overflow is defined, and converted back. The
/// conversion to a narrower or signed type is modular (C++20 guarantees it; GCC, Clang and MSVC
/// always did).
template <typename Raw>
constexpr Raw FromUnsignedBits(std::uint32_t bits) {
  return static_cast<Raw>(bits);
}

template <typename Raw>
constexpr std::uint32_t ToUnsignedBits(Raw x) {
  return static_cast<std::uint32_t>(x);
}

template <typename Raw>
constexpr Raw MaskFromBool(bool condition) {
  return condition ? static_cast<Raw>(-1) : static_cast<Raw>(0);
}

template <typename Raw>
constexpr int kScalarBits = 8 * static_cast<int>(sizeof(ScalarRawTypeOf<Raw>));

/// Removes an overload for scalar raw types, where an (x, int) overload already does the job and
/// an (x, x) one would make every scalar call ambiguous.
template <typename Raw>
using EnableIfSimd = std::enable_if_t<!kIsScalarRaw<Raw>, int>;

}  // namespace detail

// The primitives below are function templates whose primary definitions implement the scalar
// types, and where noted every raw type, in terms of other primitives. A SIMD back end provides
// explicit specializations for its register type (e.g.
// `template <> inline Sse41Int32x4 BitAnd(Sse41Int32x4 a, Sse41Int32x4 b)`); generic code
// calling them from templates then picks the specialization at instantiation time.
#define LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw)                                                 \
  static_assert(::lowbit::fixedpoint::detail::kIsScalarRaw<Raw>,                              \
                "no implementation of this fixed-point primitive for this raw type: include " \
                "the back end that specializes it")

template <typename Raw>
Raw Dup(ScalarRawTypeOf<Raw> x) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return x;
}

template <typename Raw>
Raw BitAnd(Raw a, Raw b) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return static_cast<Raw>(a & b);
}

template <typename Raw>
Raw BitOr(Raw a, Raw b) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return static_cast<Raw>(a | b);
}

template <typename Raw>
Raw BitXor(Raw a, Raw b) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return static_cast<Raw>(a ^ b);
}

template <typename Raw>
Raw BitNot(Raw a) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return static_cast<Raw>(~a);
}

/// Add, Sub, Neg and Mul wrap modulo 2^bits, like SIMD integer instructions.
template <typename Raw>
Raw Add(Raw a, Raw b) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return detail::FromUnsignedBits<Raw>(detail::ToUnsignedBits(a) + detail::ToUnsignedBits(b));
}

template <typename Raw>
Raw Sub(Raw a, Raw b) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return detail::FromUnsignedBits<Raw>(detail::ToUnsignedBits(a) - detail::ToUnsignedBits(b));
}

template <typename Raw>
Raw Neg(Raw a) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return detail::FromUnsignedBits<Raw>(0u - detail::ToUnsignedBits(a));
}

template <typename Raw>
Raw Mul(Raw a, Raw b) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return detail::FromUnsignedBits<Raw>(detail::ToUnsignedBits(a) * detail::ToUnsignedBits(b));
}

/// Shift amounts must lie in [0, bits of the scalar type).
template <typename Raw>
Raw ShiftLeft(Raw a, int offset) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  assert(offset >= 0 && offset < static_cast<int>(8 * sizeof(Raw)));
  return detail::FromUnsignedBits<Raw>(detail::ToUnsignedBits(a) << offset);
}

/// Arithmetic (sign-propagating) shift; C++20 guarantees it for negative values and every
/// supported compiler already implements >> that way.
template <typename Raw>
Raw ShiftRight(Raw a, int offset) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  assert(offset >= 0 && offset < static_cast<int>(8 * sizeof(Raw)));
  return static_cast<Raw>(a >> offset);
}

/// The same shifts by one amount per lane, each in [0, bits of the scalar type). SIMD raw types
/// only: every SIMD back end specializes them.
template <typename Raw, detail::EnableIfSimd<Raw> = 0>
Raw ShiftLeft(Raw a, Raw offsets);

template <typename Raw, detail::EnableIfSimd<Raw> = 0>
Raw ShiftRight(Raw a, Raw offsets);

/// Masks are all-ones where the condition holds and all-zeros elsewhere, per lane. A back end
/// specializes MaskIfEqual and MaskIfGreaterThan; the others follow from those two for every raw
/// type, unless a back end has a more direct instruction.
template <typename Raw>
Raw MaskIfEqual(Raw a, Raw b) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return detail::MaskFromBool<Raw>(a == b);
}

template <typename Raw>
Raw MaskIfGreaterThan(Raw a, Raw b) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return detail::MaskFromBool<Raw>(a > b);
}

template <typename Raw>
Raw MaskIfZero(Raw a) {
  return MaskIfEqual(a, Dup<Raw>(0));
}

template <typename Raw>
Raw MaskIfNonZero(Raw a) {
  return BitNot(MaskIfZero(a));
}

template <typename Raw>
Raw MaskIfNotEqual(Raw a, Raw b) {
  return BitNot(MaskIfEqual(a, b));
}

template <typename Raw>
Raw MaskIfLessThan(Raw a, Raw b) {
  return MaskIfGreaterThan(b, a);
}

template <typename Raw>
Raw MaskIfGreaterThanOrEqual(Raw a, Raw b) {
  return BitNot(MaskIfLessThan(a, b));
}

template <typename Raw>
Raw MaskIfLessThanOrEqual(Raw a, Raw b) {
  return BitNot(MaskIfGreaterThan(a, b));
}

/// Branch-free per-lane choice: mask must be a mask (all-ones or all-zeros per lane).
template <typename Raw>
Raw SelectUsingMask(Raw mask, Raw if_mask, Raw if_not_mask) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  return static_cast<Raw>((mask & if_mask) | (~mask & if_not_mask));
}

/// (a + b) / 2 computed without intermediate overflow, rounded to nearest with ties away from zero.
/// Without 64-bit lanes: a + b = 2 h + low with h = (a >> 1) + (b >> 1), which cannot overflow,
/// and low in {0, 1, 2}. The half is h + 1 for low == 2; for low == 1 it is a tie, rounded away
/// from zero: up exactly when h >= 0. Both are (low + [h >= 0]) >> 1, where
/// [h >= 0] = 1 + (h >> (bits - 1)).
template <typename Raw>
Raw RoundingHalfSum(Raw a, Raw b) {
  if constexpr (detail::kIsScalarRaw<Raw>) {
    const std::int64_t sum = std::int64_t{a} + std::int64_t{b};
    const std::int64_t away_from_zero = sum >= 0 ? 1 : -1;
    return static_cast<Raw>((sum + away_from_zero) / 2);
  } else {
    const Raw one = Dup<Raw>(1);
    const Raw h = Add(ShiftRight(a, 1), ShiftRight(b, 1));
    const Raw low = Add(BitAnd(a, one), BitAnd(b, one));
    const Raw h_non_negative = Add(one, ShiftRight(h, detail::kScalarBits<Raw> - 1));
    return Add(h, ShiftRight(Add(low, h_non_negative), 1));
  }
}

/// a + b clamped to the range of the scalar type. Without 64-bit lanes: the wrapped sum
/// overflowed exactly when both operands have the sign it lacks, and then saturates towards the
/// sign of the operands.
template <typename Raw>
Raw SaturatingAdd(Raw a, Raw b) {
  if constexpr (detail::kIsScalarRaw<Raw>) {
    const std::int64_t sum = std::int64_t{a} + std::int64_t{b};
    const std::int64_t lowest = std::numeric_limits<Raw>::lowest();
    const std::int64_t highest = std::numeric_limits<Raw>::max();
    return static_cast<Raw>(sum < lowest ? lowest : (sum > highest ? highest : sum));
  } else {
    constexpr int kSignBit = detail::kScalarBits<Raw> - 1;
    const Raw sum = Add(a, b);
    const Raw overflow = ShiftRight(BitAnd(BitXor(a, sum), BitXor(b, sum)), kSignBit);
    const Raw saturated =
        BitXor(ShiftRight(a, kSignBit), Dup<Raw>(std::numeric_limits<ScalarRawTypeOf<Raw>>::max()));
    return SelectUsingMask(overflow, saturated, sum);
  }
}

/// ARM VQRDMULH: the high half of 2*a*b rounded to nearest, computed as
/// (a*b + nudge) / 2^(bits-1) with truncating division and nudge = 2^(bits-2) for a*b >= 0,
/// 1 - 2^(bits-2) otherwise. That is floor(a*b / 2^(bits-1) + 1/2): exact halves round towards
/// +infinity, so a negative product ending in exactly one half rounds towards zero. Saturates to
/// the maximum only for a == b == lowest, the one product whose doubled high half overflows.
/// Bit-exact with gemmlowp, TFLite and the NEON instruction.
template <typename Raw>
Raw SaturatingRoundingDoublingHighMul(Raw a, Raw b) {
  LOWBIT_FIXEDPOINT_REQUIRE_SCALAR(Raw);
  constexpr int kBits = 8 * sizeof(Raw);
  if (a == b && a == std::numeric_limits<Raw>::lowest()) {
    return std::numeric_limits<Raw>::max();
  }
  const std::int64_t ab = std::int64_t{a} * std::int64_t{b};
  const std::int64_t half = std::int64_t{1} << (kBits - 2);
  const std::int64_t nudge = ab >= 0 ? half : 1 - half;
  return static_cast<Raw>((ab + nudge) / (std::int64_t{1} << (kBits - 1)));
}

#undef LOWBIT_FIXEDPOINT_REQUIRE_SCALAR

}  // namespace fixedpoint
}  // namespace lowbit

#endif  // LOWBIT_FIXEDPOINT_FIXEDPOINT_SCALAR_H_
