// An output pipeline as data: built from the stage tuple (when every stage has a compiled form),
// so that the library's per-ISA writers can run it vectorized without the stage types. The
// result's element type comes with the result view, not with the program.
#ifndef LOWBIT_INTERNAL_OUTPUT_PROGRAM_H_
#define LOWBIT_INTERNAL_OUTPUT_PROGRAM_H_

#include <cstdint>

#include "public/map.h"

namespace lowbit {
namespace internal {

enum class OutputOpcode : std::uint8_t {
  kAdd,                  // v + value[channel]                          (wrapping)
  kScaleByFixedPoint,    // RDBPOT(SRDHM(v << max(e, 0), M), max(-e, 0)) + offset
  kSaturatingShiftLeft,  // v * 2^shift, saturated
  kRoundingShiftRight,   // RDBPOT(v, shift)
  kClamp,                // min(max(v, min), max)
  kTruncateToUint8,      // v & 0xff
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
