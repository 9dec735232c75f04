// An output pipeline as data: built from the stage tuple (when every stage has a compiled form),
// so that the library's per-ISA writers can run it vectorized without the stage types. The
// result's element type comes with the result view, not with the program.
#ifndef LOWBIT_INTERNAL_OUTPUT_OUTPUT_PROGRAM_H_
#define LOWBIT_INTERNAL_OUTPUT_OUTPUT_PROGRAM_H_

#include <cstddef>
#include <cstdint>

#include "lowbit/public/map.h"

namespace lowbit {
namespace internal {

// Stochastic rounding's random bits (OutputStageShiftByPOT with Rounding::kStochastic):
// Mix(Mix(seed + kRowStep * row) ^ (kColStep * col)), Mix being the "lowbias32" integer hash
// (full avalanche), all in wrapping uint32. Two rounds keep it cheap in SIMD (vpmulld) and the
// row part hoistable. The stage's scalar Eval and the vectorized writers (HashLanes) compute the
// same bits from these constants.
struct StochasticRoundingHash {
  static constexpr std::uint32_t kRowStep = 0x9e3779b9U;
  static constexpr std::uint32_t kColStep = 0x85ebca6bU;
  static constexpr std::uint32_t kFirstMultiplier = 0x7feb352dU;
  static constexpr std::uint32_t kSecondMultiplier = 0x846ca68bU;

  static std::uint32_t Mix(std::uint32_t x) {
    x ^= x >> 16;
    x *= kFirstMultiplier;
    x ^= x >> 15;
    x *= kSecondMultiplier;
    x ^= x >> 16;
    return x;
  }
  static std::uint32_t RowKey(std::uint32_t seed, int row) {
    return Mix(seed + kRowStep * static_cast<std::uint32_t>(row));
  }
  static std::uint32_t Bits(std::uint32_t seed, int row, int col) {
    return Mix(RowKey(seed, row) ^ (kColStep * static_cast<std::uint32_t>(col)));
  }
};

enum class OutputOpcode : std::uint8_t {
  kAdd,                   // v + value[channel]                          (wrapping)
  kScaleByFixedPoint,     // RDBPOT(SRDHM(v << max(e, 0), M), max(-e, 0)) + offset
  kSaturatingShiftLeft,   // v * 2^shift, saturated
  kRoundingShiftRight,    // RDBPOT(v, shift)
  kStochasticShiftRight,  // floor((v + U) / 2^shift), U from (seed, row, col); seed in `offset`
  kClamp,                 // min(max(v, min), max)
  kTruncateToUint8,       // v & 0xff
  kAlignedSum,            // AlignedSum of v and the residual's entry; operands in `aligned_sum`
};

// A per-channel parameter: one value, or one per result row (kRow) / column (kCol).
struct ChannelParameter {
  std::int32_t value;
  const std::int32_t* per_channel;  // null for one value
  ChannelAxis axis;
  // Per-channel right shifts are stored as shifts; e = -shift.
  bool negated;
};

// The integer-only scale alignment of two quantized values (lowbit/public/quantized_add.h): each
// value less its zero point, times its aligned multiplier A (the scale in units of the sum's 2^-f),
// summed in int32. A split alignment has A = high 2^16 + low, for units too fine for one product:
// the sum of the high parts, clamped to +-2^14 (beyond which the output saturates whatever the
// low parts add, and which keeps the whole sum below 2^30 + 2^25), times 2^16, plus the sum of the
// low parts.
struct AlignedSumParameters {
  std::int32_t lhs_zero_point, rhs_zero_point;
  std::int32_t lhs_multiplier, rhs_multiplier;          // A, or A's high part when split
  std::int32_t lhs_low_multiplier, rhs_low_multiplier;  // A's low 16 bits when split, else 0
  bool split;

  static constexpr int kLowBits = 16;
  static constexpr std::int32_t kHighLimit = 1 << 14;

  // For differences of at most 255 in magnitude and multipliers that the plan keeps within
  // int32 (MakeQuantizedAddPlan): no product or sum wraps.
  std::int32_t Sum(std::int32_t lhs_difference, std::int32_t rhs_difference) const {
    const std::int32_t high = lhs_difference * lhs_multiplier + rhs_difference * rhs_multiplier;
    if (!split) return high;
    const std::int32_t clamped = high < -kHighLimit  ? -kHighLimit
                                 : high > kHighLimit ? kHighLimit
                                                     : high;
    return clamped * (std::int32_t{1} << kLowBits) + lhs_difference * lhs_low_multiplier +
           rhs_difference * rhs_low_multiplier;
  }
};

// A per-channel parameter's value at (row, col).
inline std::int32_t ValueAt(const ChannelParameter& parameter, int row, int col) {
  if (parameter.per_channel == nullptr) return parameter.value;
  return parameter.per_channel[parameter.axis == ChannelAxis::kRow ? row : col];
}

// kAlignedSum's operands: the alignment's six integers, each one value or one per result row or
// column (per-axis inputs), and the second operand, a uint8 or int8 matrix the result's size
// whose entry (row, col) is at residual + row * row_step + col * col_step.
struct AlignedSumOperands {
  ChannelParameter lhs_zero_point, rhs_zero_point;
  ChannelParameter lhs_multiplier, rhs_multiplier;
  ChannelParameter lhs_low_multiplier, rhs_low_multiplier;
  bool split;
  const void* residual;
  bool residual_signed;
  std::ptrdiff_t row_step, col_step;

  AlignedSumParameters ParametersAt(int row, int col) const {
    return {ValueAt(lhs_zero_point, row, col),
            ValueAt(rhs_zero_point, row, col),
            ValueAt(lhs_multiplier, row, col),
            ValueAt(rhs_multiplier, row, col),
            ValueAt(lhs_low_multiplier, row, col),
            ValueAt(rhs_low_multiplier, row, col),
            split};
  }
  std::int32_t Residual(int row, int col) const {
    const std::ptrdiff_t index = row * row_step + col * col_step;
    return residual_signed ? std::int32_t{static_cast<const std::int8_t*>(residual)[index]}
                           : std::int32_t{static_cast<const std::uint8_t*>(residual)[index]};
  }
  // What kAlignedSum computes from the value v (already in the lhs type's range) at (row, col).
  std::int32_t Eval(std::int32_t v, int row, int col) const {
    const AlignedSumParameters parameters = ParametersAt(row, col);
    return parameters.Sum(v - parameters.lhs_zero_point,
                          Residual(row, col) - parameters.rhs_zero_point);
  }
};

struct OutputInstruction {
  OutputOpcode opcode;
  ChannelParameter first;                           // kAdd: the addend; kScaleByFixedPoint: M
  ChannelParameter second;                          // kScaleByFixedPoint: e
  std::int32_t offset;                              // kScaleByFixedPoint: offset; kClamp: min
  std::int32_t limit;                               // kClamp: max; the shifts: shift
  const AlignedSumOperands* aligned_sum = nullptr;  // kAlignedSum only
};

struct OutputProgram {
  static constexpr int kMaxInstructions = 12;
  OutputInstruction instructions[kMaxInstructions];
  int count = 0;

  // False (and the program unusable) once more than kMaxInstructions are appended.
  bool Append(const OutputInstruction& instruction) {
    if (count == kMaxInstructions) return false;
    instructions[count++] = instruction;
    return true;
  }
};

inline ChannelParameter OneValue(std::int32_t value) {
  return {value, nullptr, ChannelAxis::kRow, false};
}
inline ChannelParameter PerChannel(const std::int32_t* values, ChannelAxis axis,
                                   bool negated = false) {
  return {0, values, axis, negated};
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_OUTPUT_PROGRAM_H_
