// An output pipeline as data: built from the stage tuple (when every stage has a compiled form),
// so that the library's per-ISA writers can run it vectorized without the stage types. The
// result's element type comes with the result view, not with the program.
#ifndef LOWBIT_INTERNAL_OUTPUT_PROGRAM_H_
#define LOWBIT_INTERNAL_OUTPUT_PROGRAM_H_

#include <cstdint>

#include "public/map.h"

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
};

// A per-channel parameter: one value, or one per result row (kRow) / column (kCol).
struct ChannelParameter {
  std::int32_t value;
  const std::int32_t* per_channel;  // null for one value
  ChannelAxis axis;
  // Per-channel right shifts are stored as shifts; e = -shift.
  bool negated;
};

struct OutputInstruction {
  OutputOpcode opcode;
  ChannelParameter first;   // kAdd: the addend; kScaleByFixedPoint: M
  ChannelParameter second;  // kScaleByFixedPoint: e
  std::int32_t offset;      // kScaleByFixedPoint: offset; kClamp: min
  std::int32_t limit;       // kClamp: max; the shifts: shift
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

#endif  // LOWBIT_INTERNAL_OUTPUT_PROGRAM_H_
