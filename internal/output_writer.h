// The vectorized output writer, written once over an ISA: walks a block of accumulators a
// register of lanes at a time, runs the OutputProgram on the fixedpoint back end of that ISA and
// stores the lanes narrowed to the result type. Included only by the per-ISA files
// (internal/output_{sse41,avx2,neon}.cc), each compiled for its ISA, so that every function here
// is instantiated for one ISA's types only.
#ifndef LOWBIT_INTERNAL_OUTPUT_WRITER_H_
#define LOWBIT_INTERNAL_OUTPUT_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fixedpoint/fixedpoint.h"
#include "internal/output.h"

namespace lowbit {
namespace internal {
namespace output_writer {

// Isa supplies, for its fixedpoint raw type Raw of kLanes int32 lanes:
//   static Raw Load(const std::int32_t* values);    // kLanes values, unaligned
//   static void Store(Raw v, int size, void* out);  // kLanes values' low `size` bytes
//   static Raw Min(Raw a, Raw b);
//   static Raw Max(Raw a, Raw b);
// Min and Max are not fixedpoint primitives: only clamping and the split of an exponent into
// its shifts need them.

// Where the lanes of one step sit: `count` consecutive entries of a result row (along_cols)
// or column, starting at (row, col).
struct Lanes {
  int row;
  int col;
  int count;
  bool along_cols;
};

template <typename Isa>
typename Isa::Raw LoadPartial(const std::int32_t* values, int count) {
  if (count == Isa::kLanes) return Isa::Load(values);
  std::int32_t buffer[Isa::kLanes] = {};
  std::memcpy(buffer, values, sizeof(std::int32_t) * count);
  return Isa::Load(buffer);
}

// A parameter's value for each lane: per-channel values along the lanes are loaded, across
// them broadcast.
template <typename Isa>
typename Isa::Raw ParameterLanes(const ChannelParameter& parameter, const Lanes& lanes) {
  using Raw = typename Isa::Raw;
  if (parameter.per_channel == nullptr) return fixedpoint::Dup<Raw>(parameter.value);
  const bool per_row = parameter.axis == ChannelAxis::kRow;
  const int channel = per_row ? lanes.row : lanes.col;
  const Raw values = per_row != lanes.along_cols
                         ? LoadPartial<Isa>(parameter.per_channel + channel, lanes.count)
                         : fixedpoint::Dup<Raw>(parameter.per_channel[channel]);
  return parameter.negated ? fixedpoint::Neg(values) : values;
}

// The operations compute what the stages' scalar Eval does (internal/output_program.h), with
// the same fixedpoint functions on the ISA's raw type.
template <typename Isa>
typename Isa::Raw Run(const OutputInstruction& instruction, typename Isa::Raw v,
                      const Lanes& lanes) {
  using Raw = typename Isa::Raw;
  switch (instruction.opcode) {
    case OutputOpcode::kAdd:
      return fixedpoint::Add(v, ParameterLanes<Isa>(instruction.first, lanes));
    case OutputOpcode::kScaleByFixedPoint: {
      const Raw exponent = ParameterLanes<Isa>(instruction.second, lanes);
      const Raw zero = fixedpoint::Dup<Raw>(0);
      const Raw scaled = fixedpoint::SaturatingRoundingDoublingHighMul(
          fixedpoint::ShiftLeft(v, Isa::Max(exponent, zero)),
          ParameterLanes<Isa>(instruction.first, lanes));
      const Raw right_shift = Isa::Max(fixedpoint::Neg(exponent), zero);
      return fixedpoint::Add(fixedpoint::RoundingDivideByPOT(scaled, right_shift),
                             fixedpoint::Dup<Raw>(instruction.offset));
    }
    case OutputOpcode::kSaturatingShiftLeft:
      return fixedpoint::SaturatingRoundingMultiplyByPOT(v, instruction.limit);
    case OutputOpcode::kRoundingShiftRight:
      return fixedpoint::RoundingDivideByPOT(v, instruction.limit);
    case OutputOpcode::kClamp:
      return Isa::Min(Isa::Max(v, fixedpoint::Dup<Raw>(instruction.offset)),
                      fixedpoint::Dup<Raw>(instruction.limit));
    case OutputOpcode::kTruncateToUint8:
      return fixedpoint::BitAnd(v, fixedpoint::Dup<Raw>(0xff));
  }
  return v;
}

// Stores `count` lanes as `size`-byte elements. The pipeline's last stage left every lane in
// the result type's range, so keeping the low bytes is exact.
template <typename Isa>
void StorePartial(typename Isa::Raw v, int size, int count, char* out) {
  if (count == Isa::kLanes) {
    Isa::Store(v, size, out);
    return;
  }
  std::int32_t buffer[Isa::kLanes];
  Isa::Store(v, size, buffer);
  std::memcpy(out, buffer, static_cast<std::size_t>(size) * count);
}

template <typename Isa>
void WriteOutput(const OutputProgram& program, const AccumulatorBlock& block,
                 const MatrixView& result) {
  const bool row_major = result.order == Order::kRowMajor;
  const int lines = row_major ? block.rows : block.cols;
  const int length = row_major ? block.cols : block.rows;
  const std::ptrdiff_t line_step = row_major ? block.row_stride : block.col_stride;
  const std::ptrdiff_t entry_step = row_major ? block.col_stride : block.row_stride;
  const int size = ElementSize(result.type);
  std::int32_t gathered[Isa::kLanes];
  for (int line = 0; line < lines; ++line) {
    const std::int32_t* acc = block.data + line * line_step;
    const int row = block.row_start + (row_major ? line : 0);
    const int col = block.col_start + (row_major ? 0 : line);
    // The view is of the caller's writable result map.
    char* out = static_cast<char*>(const_cast<void*>(result.data)) +
                (row_major ? static_cast<std::ptrdiff_t>(row) * result.stride + col
                           : row + static_cast<std::ptrdiff_t>(col) * result.stride) *
                    size;
    for (int i = 0; i < length; i += Isa::kLanes) {
      const int count = length - i < Isa::kLanes ? length - i : Isa::kLanes;
      const Lanes lanes{row + (row_major ? 0 : i), col + (row_major ? i : 0), count, row_major};
      typename Isa::Raw v;
      if (entry_step == 1) {
        v = LoadPartial<Isa>(acc + i, count);
      } else {
        for (int lane = 0; lane < count; ++lane) gathered[lane] = acc[(i + lane) * entry_step];
        v = LoadPartial<Isa>(gathered, count);
      }
      for (int k = 0; k < program.count; ++k) v = Run<Isa>(program.instructions[k], v, lanes);
      StorePartial<Isa>(v, size, count, out + static_cast<std::ptrdiff_t>(i) * size);
    }
  }
}

}  // namespace output_writer
}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_WRITER_H_
