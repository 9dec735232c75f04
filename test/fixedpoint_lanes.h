// Every fixedpoint primitive and a few composite functions as one list of lane-wise operations,
// written once over a raw type: over int32_t it is the reference, over a SIMD raw type (in a file
// compiled for that ISA only) the back end under test (test/fixedpoint_simd_test.cc).
#ifndef LOWBIT_TEST_FIXEDPOINT_LANES_H_
#define LOWBIT_TEST_FIXEDPOINT_LANES_H_

#include <cstdint>
#include <cstring>

#include "lowbit/fixedpoint/fixedpoint.h"

namespace lowbit {
namespace fixedpoint {
namespace lanes {

// What the second operand of an operation is.
enum class Operand {
  kValue,          // any int32
  kExponent,       // unused: the operation takes the int exponent, in [0, 31]
  kLaneExponents,  // one exponent per lane, in [0, 31]
};

enum class Operation {
  kBitAnd,
  kBitOr,
  kBitXor,
  kBitNot,
  kAdd,
  kSub,
  kNeg,
  kMul,
  kShiftLeft,
  kShiftRight,
  kShiftLeftPerLane,
  kShiftRightPerLane,
  kMaskIfZero,
  kMaskIfNonZero,
  kMaskIfEqual,
  kMaskIfNotEqual,
  kMaskIfGreaterThan,
  kMaskIfGreaterThanOrEqual,
  kMaskIfLessThan,
  kMaskIfLessThanOrEqual,
  kSelectUsingMask,
  kRoundingHalfSum,
  kSaturatingAdd,
  kSaturatingRoundingDoublingHighMul,
  kRoundingDivideByPOT,
  kRoundingDivideByPOTPerLane,
  kQuantizeDownByFixedPoint,
  kSaturatingShiftLeft,
  kSaturatingRoundingDivideByPOT,
  kTanh,
  kLogistic,
  kExpOnNegativeValues,
  kOneOverOnePlusX,
  kAccurateTanh,
  kAccurateLogistic,
  kAccurateExpOnNegativeValues,
  kAccurateOneOverOnePlusX,
};

struct OperationInfo {
  Operation operation;
  const char* name;
  Operand operand;
};

constexpr OperationInfo kOperations[] = {
    {Operation::kBitAnd, "BitAnd", Operand::kValue},
    {Operation::kBitOr, "BitOr", Operand::kValue},
    {Operation::kBitXor, "BitXor", Operand::kValue},
    {Operation::kBitNot, "BitNot", Operand::kValue},
    {Operation::kAdd, "Add", Operand::kValue},
    {Operation::kSub, "Sub", Operand::kValue},
    {Operation::kNeg, "Neg", Operand::kValue},
    {Operation::kMul, "Mul", Operand::kValue},
    {Operation::kShiftLeft, "ShiftLeft", Operand::kExponent},
    {Operation::kShiftRight, "ShiftRight", Operand::kExponent},
    {Operation::kShiftLeftPerLane, "ShiftLeft per lane", Operand::kLaneExponents},
    {Operation::kShiftRightPerLane, "ShiftRight per lane", Operand::kLaneExponents},
    {Operation::kMaskIfZero, "MaskIfZero", Operand::kValue},
    {Operation::kMaskIfNonZero, "MaskIfNonZero", Operand::kValue},
    {Operation::kMaskIfEqual, "MaskIfEqual", Operand::kValue},
    {Operation::kMaskIfNotEqual, "MaskIfNotEqual", Operand::kValue},
    {Operation::kMaskIfGreaterThan, "MaskIfGreaterThan", Operand::kValue},
    {Operation::kMaskIfGreaterThanOrEqual, "MaskIfGreaterThanOrEqual", Operand::kValue},
    {Operation::kMaskIfLessThan, "MaskIfLessThan", Operand::kValue},
    {Operation::kMaskIfLessThanOrEqual, "MaskIfLessThanOrEqual", Operand::kValue},
    {Operation::kSelectUsingMask, "SelectUsingMask", Operand::kValue},
    {Operation::kRoundingHalfSum, "RoundingHalfSum", Operand::kValue},
    {Operation::kSaturatingAdd, "SaturatingAdd", Operand::kValue},
    {Operation::kSaturatingRoundingDoublingHighMul, "SRDHM", Operand::kValue},
    {Operation::kRoundingDivideByPOT, "RoundingDivideByPOT", Operand::kExponent},
    {Operation::kRoundingDivideByPOTPerLane, "RoundingDivideByPOT per lane",
     Operand::kLaneExponents},
    {Operation::kQuantizeDownByFixedPoint, "QuantizeDownByFixedPoint", Operand::kExponent},
    {Operation::kSaturatingShiftLeft, "SaturatingRoundingMultiplyByPOT(x, exponent)",
     Operand::kExponent},
    {Operation::kSaturatingRoundingDivideByPOT, "SaturatingRoundingMultiplyByPOT(x, -exponent)",
     Operand::kExponent},
    {Operation::kTanh, "tanh", Operand::kValue},
    {Operation::kLogistic, "logistic", Operand::kValue},
    {Operation::kExpOnNegativeValues, "exp_on_negative_values", Operand::kValue},
    {Operation::kOneOverOnePlusX, "one_over_one_plus_x_for_x_in_0_1", Operand::kValue},
    {Operation::kAccurateTanh, "AccurateTanh", Operand::kValue},
    {Operation::kAccurateLogistic, "AccurateLogistic", Operand::kValue},
    {Operation::kAccurateExpOnNegativeValues, "AccurateExpOnNegativeValues", Operand::kValue},
    {Operation::kAccurateOneOverOnePlusX, "AccurateOneOverOnePlusX", Operand::kValue},
};

// A scalar Raw takes the (x, int) overloads for the per-lane operations: one lane, one exponent.
template <typename Raw>
Raw Apply(Operation operation, Raw a, Raw b, int exponent) {
  // Inputs within the transcendentals' domains: a value in [-2^31 + 1, 0] and one in [0, 1).
  const Raw non_positive = Neg(BitAnd(a, Dup<Raw>(INT32_MAX)));
  const Raw below_one = BitAnd(a, Dup<Raw>(INT32_MAX));
  switch (operation) {
    case Operation::kBitAnd:
      return BitAnd(a, b);
    case Operation::kBitOr:
      return BitOr(a, b);
    case Operation::kBitXor:
      return BitXor(a, b);
    case Operation::kBitNot:
      return BitNot(a);
    case Operation::kAdd:
      return Add(a, b);
    case Operation::kSub:
      return Sub(a, b);
    case Operation::kNeg:
      return Neg(a);
    case Operation::kMul:
      return Mul(a, b);
    case Operation::kShiftLeft:
      return ShiftLeft(a, exponent);
    case Operation::kShiftRight:
      return ShiftRight(a, exponent);
    case Operation::kShiftLeftPerLane:
      return ShiftLeft(a, b);
    case Operation::kShiftRightPerLane:
      return ShiftRight(a, b);
    case Operation::kMaskIfZero:
      return MaskIfZero(a);
    case Operation::kMaskIfNonZero:
      return MaskIfNonZero(a);
    case Operation::kMaskIfEqual:
      return MaskIfEqual(a, b);
    case Operation::kMaskIfNotEqual:
      return MaskIfNotEqual(a, b);
    case Operation::kMaskIfGreaterThan:
      return MaskIfGreaterThan(a, b);
    case Operation::kMaskIfGreaterThanOrEqual:
      return MaskIfGreaterThanOrEqual(a, b);
    case Operation::kMaskIfLessThan:
      return MaskIfLessThan(a, b);
    case Operation::kMaskIfLessThanOrEqual:
      return MaskIfLessThanOrEqual(a, b);
    case Operation::kSelectUsingMask:
      return SelectUsingMask(ShiftRight(b, 31), a, b);
    case Operation::kRoundingHalfSum:
      return RoundingHalfSum(a, b);
    case Operation::kSaturatingAdd:
      return SaturatingAdd(a, b);
    case Operation::kSaturatingRoundingDoublingHighMul:
      return SaturatingRoundingDoublingHighMul(a, b);
    case Operation::kRoundingDivideByPOT:
      return RoundingDivideByPOT(a, exponent);
    case Operation::kRoundingDivideByPOTPerLane:
      return RoundingDivideByPOT(a, b);
    case Operation::kQuantizeDownByFixedPoint:
      // b is the multiplier; an offset that differs by exponent, and wraps for some values.
      return QuantizeDownByFixedPoint(a, b, exponent, Dup<Raw>(INT32_MAX - 1000 * exponent));
    case Operation::kSaturatingShiftLeft:
      return SaturatingRoundingMultiplyByPOT(a, exponent);
    case Operation::kSaturatingRoundingDivideByPOT:
      return SaturatingRoundingMultiplyByPOT(a, -exponent);
    case Operation::kTanh:
      return tanh(FixedPoint<Raw, 3>::FromRaw(a)).raw();
    case Operation::kLogistic:
      return logistic(FixedPoint<Raw, 4>::FromRaw(a)).raw();
    case Operation::kExpOnNegativeValues:
      return exp_on_negative_values(FixedPoint<Raw, 5>::FromRaw(non_positive)).raw();
    case Operation::kOneOverOnePlusX:
      return one_over_one_plus_x_for_x_in_0_1(FixedPoint<Raw, 0>::FromRaw(below_one)).raw();
    case Operation::kAccurateTanh:
      return AccurateTanh(FixedPoint<Raw, 3>::FromRaw(a)).raw();
    case Operation::kAccurateLogistic:
      return AccurateLogistic(FixedPoint<Raw, 4>::FromRaw(a)).raw();
    case Operation::kAccurateExpOnNegativeValues:
      return AccurateExpOnNegativeValues(FixedPoint<Raw, 5>::FromRaw(non_positive)).raw();
    case Operation::kAccurateOneOverOnePlusX:
      return AccurateOneOverOnePlusX(FixedPoint<Raw, 0>::FromRaw(below_one)).raw();
  }
  return a;
}

// result[i] = operation(a[i], b[i]) for i < count, a multiple of every back end's lane count.
template <typename Raw>
void ApplyToLanes(Operation operation, const std::int32_t* a, const std::int32_t* b, int exponent,
                  std::int32_t* result, int count) {
  static_assert(sizeof(Raw) == sizeof(std::int32_t) * RawTypeTraits<Raw>::kLanes,
                "a raw value is its lanes in memory order");
  for (int i = 0; i < count; i += RawTypeTraits<Raw>::kLanes) {
    Raw x;
    Raw y;
    std::memcpy(&x, a + i, sizeof(Raw));
    std::memcpy(&y, b + i, sizeof(Raw));
    const Raw z = Apply(operation, x, y, exponent);
    std::memcpy(result + i, &z, sizeof(Raw));
  }
}

using LaneFunction = void (*)(Operation operation, const std::int32_t* a, const std::int32_t* b,
                              int exponent, std::int32_t* result, int count);

// ApplyToLanes over each SIMD back end, each defined in a file compiled for its ISA only.
#if defined(__x86_64__)
void ApplySse41(Operation operation, const std::int32_t* a, const std::int32_t* b, int exponent,
                std::int32_t* result, int count);
void ApplyAvx2(Operation operation, const std::int32_t* a, const std::int32_t* b, int exponent,
               std::int32_t* result, int count);
void ApplyAvx512(Operation operation, const std::int32_t* a, const std::int32_t* b, int exponent,
                 std::int32_t* result, int count);
#endif
#if defined(__aarch64__)
void ApplyNeon(Operation operation, const std::int32_t* a, const std::int32_t* b, int exponent,
               std::int32_t* result, int count);
#endif

}  // namespace lanes
}  // namespace fixedpoint
}  // namespace lowbit

#endif  // LOWBIT_TEST_FIXEDPOINT_LANES_H_
