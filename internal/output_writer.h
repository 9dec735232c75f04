// The vectorized output writer, written once over an ISA: walks a block of raw sums a register
// of lanes at a time, adds their offset terms, runs the OutputProgram on the fixedpoint back end of
// that ISA and stores the lanes narrowed to the result type. Included only by the per-ISA files
// (internal/output_{sse41,avx2,neon}.cc), each compiled for its ISA, so that every function here
// is instantiated for one ISA's types only.
#ifndef LOWBIT_INTERNAL_OUTPUT_WRITER_H_
#define LOWBIT_INTERNAL_OUTPUT_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "fixedpoint/fixedpoint.h"
#include "internal/output.h"

namespace lowbit {
namespace internal {
namespace output_writer {

// Isa supplies, for its fixedpoint raw type Raw of kLanes int32 lanes:
//   static Raw Load(const std::int32_t* values);    // kLanes values, unaligned
//   static Raw LoadBytes(const void* bytes, bool is_signed);  // kLanes uint8 or int8, widened
//   static void Store(Raw v, int size, void* out);  // kLanes values' low `size` bytes
//   static Raw Min(Raw a, Raw b);
//   static Raw Max(Raw a, Raw b);
//   static void Transpose(Raw (&rows)[kLanes]);     // the kLanes x kLanes square, in place
//   // The 2 * kLanes lanes of a then b narrowed with saturation to kType (int16, int8, uint8):
//   template <ElementType kType>
//   static void StoreSaturated(Raw a, Raw b, void* out);
//   // Rescale (internal/driver.h) per lane i, with kLanes doubles at along_a and along_b:
//   // round((65025 * sums + line_a * along_a[i] + line_b * along_b[i]) * reciprocal),
//   // saturated to int32.
//   static Raw RescaleLanes(Raw sums, double line_a, double line_b, const double* along_a,
//                      const double* along_b, double reciprocal);
// Min and Max are not fixedpoint primitives: only clamping and the split of an exponent into
// its shifts need them.

template <typename Isa>
inline __attribute__((always_inline)) typename Isa::Raw LoadPartial(const std::int32_t* values,
                                                                    int count) {
  if (count == Isa::kLanes) return Isa::Load(values);
  std::int32_t buffer[Isa::kLanes] = {};
  std::memcpy(buffer, values, sizeof(std::int32_t) * count);
  return Isa::Load(buffer);
}

// A parameter as one line of results sees it: the same value all along the line (one value, or
// the line's own channel), broadcast once; or one value per entry (per-channel along the line),
// loaded at each step.
template <typename Isa>
struct LineParameter {
  typename Isa::Raw broadcast;
  std::int32_t value;
  const std::int32_t* along;  // the per-channel values from the line's first entry, or null
  bool negated;

  // Whether `parameter` takes a different value at each entry of a line; `along_cols`: the line
  // is a result row (it runs along the columns).
  static bool VariesAlong(const ChannelParameter& parameter, bool along_cols) {
    return parameter.per_channel != nullptr && (parameter.axis == ChannelAxis::kRow) != along_cols;
  }

  static LineParameter For(const ChannelParameter& parameter, int row, int col, bool along_cols) {
    using Raw = typename Isa::Raw;
    if (parameter.per_channel == nullptr) {
      return {fixedpoint::Dup<Raw>(parameter.value), parameter.value, nullptr, false};
    }
    const bool per_row = parameter.axis == ChannelAxis::kRow;
    if (!VariesAlong(parameter, along_cols)) {
      // Per-channel right shifts are stored negated, as shifts in [0, 31].
      const std::int32_t stored = parameter.per_channel[per_row ? row : col];
      const std::int32_t value = parameter.negated ? -stored : stored;
      return {fixedpoint::Dup<Raw>(value), value, nullptr, false};
    }
    return {fixedpoint::Dup<Raw>(0), 0, parameter.per_channel + (per_row ? row : col),
            parameter.negated};
  }

  typename Isa::Raw Lanes(int entry, int count) const {
    if (along == nullptr) return broadcast;
    const typename Isa::Raw values = LoadPartial<Isa>(along + entry, count);
    return negated ? fixedpoint::Neg(values) : values;
  }
};

// x >> shift in unsigned arithmetic, for shift in [1, 31].
template <typename Raw>
inline __attribute__((always_inline)) Raw LogicalShiftRight(Raw x, int shift) {
  return fixedpoint::BitAnd(fixedpoint::ShiftRight(x, shift),
                            fixedpoint::Dup<Raw>(static_cast<std::int32_t>(0xffffffffU >> shift)));
}

// The hash of StochasticRoundingHash on each lane, in wrapping int32 (the bits of uint32).
template <typename Raw>
inline __attribute__((always_inline)) Raw HashLanes(Raw x) {
  using Hash = StochasticRoundingHash;
  x = fixedpoint::BitXor(x, LogicalShiftRight(x, 16));
  x = fixedpoint::Mul(x, fixedpoint::Dup<Raw>(static_cast<std::int32_t>(Hash::kFirstMultiplier)));
  x = fixedpoint::BitXor(x, LogicalShiftRight(x, 15));
  x = fixedpoint::Mul(x, fixedpoint::Dup<Raw>(static_cast<std::int32_t>(Hash::kSecondMultiplier)));
  return fixedpoint::BitXor(x, LogicalShiftRight(x, 16));
}

// 0, 1, ..., kLanes - 1: the lanes' offsets along a line.
template <typename Isa>
inline __attribute__((always_inline)) typename Isa::Raw LaneIndices() {
  alignas(64) static constexpr std::int32_t kIndices[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                            8, 9, 10, 11, 12, 13, 14, 15};
  static_assert(Isa::kLanes <= 16, "one index per lane");
  return Isa::Load(kIndices);
}

// An instruction with its parameters resolved for the current line. Only instructions with a
// per-channel parameter change from line to line.
template <typename Isa>
struct LineInstruction {
  using Raw = typename Isa::Raw;
  const OutputInstruction* instruction;
  bool per_line;
  LineParameter<Isa> first;
  LineParameter<Isa> second;
  Raw offset;
  Raw limit;
  // A kScaleByFixedPoint whose parameters are the same all along the line: its left shift and
  // its rounding, with the constants that takes derived here rather than in every batch (GCC
  // had redone that at every line: about 20 of 75 instructions a line of the QuantizeDown
  // pipeline). Unused otherwise.
  int scale_left_shift = 0;
  fixedpoint::QuantizeDownScale<Raw> scale{fixedpoint::Dup<Raw>(0), 0, fixedpoint::Dup<Raw>(0)};
  // A kStochasticShiftRight's line: whether it runs along a result row, the coordinate that
  // varies along it at its first entry (the column of a row, the row of a column), and the
  // hash's part from the coordinate that stays (a row's key, or kColStep * column). Its random
  // bits depend on each entry's row and column, so it is set up for every line.
  bool along_cols = true;
  int line_first = 0;
  Raw line_part = fixedpoint::Dup<Raw>(0);
  // A kAlignedSum's line: the residual's entry for the line's first entry, the bytes from one
  // entry to the next along the line, and the line's first row and column (for the alignment's
  // per-channel parameters, read as each batch needs them: six more LineParameters here made
  // every writer's instructions, set up per block, twice as large, and small GEMMs 10% slower).
  const char* residual_line = nullptr;
  std::ptrdiff_t residual_step = 0;
  int line_row = 0;
  int line_col = 0;
  // When no parameter varies along the line (per-tensor plans, and per-axis ones across it), their
  // values for the line, in AlignedSumOperands' order.
  bool aligned_varies = false;
  std::int32_t aligned_values[6] = {};

  static LineInstruction For(const OutputInstruction& instruction) {
    LineInstruction line{&instruction,
                         instruction.first.per_channel != nullptr ||
                             instruction.second.per_channel != nullptr ||
                             instruction.opcode == OutputOpcode::kStochasticShiftRight ||
                             instruction.opcode == OutputOpcode::kAlignedSum,
                         LineParameter<Isa>::For(instruction.first, 0, 0, true),
                         LineParameter<Isa>::For(instruction.second, 0, 0, true),
                         fixedpoint::Dup<Raw>(instruction.offset),
                         fixedpoint::Dup<Raw>(instruction.limit)};
    line.PrepareScale();
    return line;
  }

  __attribute__((always_inline)) void ForLine(int row, int col, bool line_along_cols) {
    if (!per_line) return;
    if (instruction->opcode == OutputOpcode::kStochasticShiftRight) {
      using Hash = StochasticRoundingHash;
      along_cols = line_along_cols;
      line_first = line_along_cols ? col : row;
      const std::uint32_t seed = static_cast<std::uint32_t>(instruction->offset);
      line_part = fixedpoint::Dup<Raw>(static_cast<std::int32_t>(
          line_along_cols ? Hash::RowKey(seed, row)
                          : Hash::kColStep * static_cast<std::uint32_t>(col)));
      return;
    }
    if (instruction->opcode == OutputOpcode::kAlignedSum) {
      const AlignedSumOperands& operands = *instruction->aligned_sum;
      residual_line = static_cast<const char*>(operands.residual) + row * operands.row_step +
                      col * operands.col_step;
      residual_step = line_along_cols ? operands.col_step : operands.row_step;
      along_cols = line_along_cols;
      line_row = row;
      line_col = col;
      const ChannelParameter* parameters[6] = {
          &operands.lhs_zero_point, &operands.rhs_zero_point,     &operands.lhs_multiplier,
          &operands.rhs_multiplier, &operands.lhs_low_multiplier, &operands.rhs_low_multiplier};
      aligned_varies = false;
      for (int i = 0; i < 6; ++i) {
        aligned_varies |= LineParameter<Isa>::VariesAlong(*parameters[i], line_along_cols);
        aligned_values[i] = aligned_varies ? 0 : ValueAt(*parameters[i], row, col);
      }
      return;
    }
    first = LineParameter<Isa>::For(instruction->first, row, col, line_along_cols);
    second = LineParameter<Isa>::For(instruction->second, row, col, line_along_cols);
    PrepareScale();
  }

  __attribute__((always_inline)) void PrepareScale() {
    if (instruction->opcode != OutputOpcode::kScaleByFixedPoint || first.along != nullptr ||
        second.along != nullptr) {
      return;
    }
    const std::int32_t exponent = second.value;
    scale_left_shift = exponent > 0 ? exponent : 0;
    scale =
        fixedpoint::QuantizeDownScale<Raw>(first.broadcast, exponent < 0 ? -exponent : 0, offset);
  }

  // What the stage's scalar Eval computes (internal/output_program.h), with the same fixedpoint
  // functions on the ISA's raw type: on kBatch vectors of lanes, entries from `entry` of the
  // line, all full but the last, which holds `count` entries. One dispatch per batch.
  template <int kBatch>
  void Run(Raw (&v)[kBatch], int entry, int count) const {
    switch (instruction->opcode) {
      case OutputOpcode::kAdd:
        return Apply<OutputOpcode::kAdd>(v, entry, count);
      case OutputOpcode::kScaleByFixedPoint:
        return Apply<OutputOpcode::kScaleByFixedPoint>(v, entry, count);
      case OutputOpcode::kSaturatingShiftLeft:
        return Apply<OutputOpcode::kSaturatingShiftLeft>(v, entry, count);
      case OutputOpcode::kRoundingShiftRight:
        return Apply<OutputOpcode::kRoundingShiftRight>(v, entry, count);
      case OutputOpcode::kStochasticShiftRight:
        return Apply<OutputOpcode::kStochasticShiftRight>(v, entry, count);
      case OutputOpcode::kClamp:
        return Apply<OutputOpcode::kClamp>(v, entry, count);
      case OutputOpcode::kTruncateToUint8:
        return Apply<OutputOpcode::kTruncateToUint8>(v, entry, count);
      case OutputOpcode::kAlignedSum:
        return Apply<OutputOpcode::kAlignedSum>(v, entry, count);
    }
  }

  // A kAlignedSum parameter's `count` values on the line from `entry`: one value, the line's own
  // channel, or the channels along the line.
  __attribute__((always_inline)) Raw AlignedLanes(const ChannelParameter& parameter, int entry,
                                                  int count) const {
    if (parameter.per_channel == nullptr) return fixedpoint::Dup<Raw>(parameter.value);
    const bool per_row = parameter.axis == ChannelAxis::kRow;
    const std::int32_t* const first = parameter.per_channel + (per_row ? line_row : line_col);
    if (per_row == along_cols) return fixedpoint::Dup<Raw>(*first);
    return LoadPartial<Isa>(first + entry, count);
  }

  // The residual's `count` entries of the line from `entry`, widened to int32 lanes: loaded as
  // bytes where they are contiguous along the line (through a buffer for a partial vector),
  // else gathered.
  __attribute__((always_inline)) Raw ResidualLanes(bool is_signed, int entry, int count) const {
    const char* const at = residual_line + entry * residual_step;
    if (residual_step == 1) {
      if (count == Isa::kLanes) return Isa::LoadBytes(at, is_signed);
      char bytes[Isa::kLanes] = {};
      std::memcpy(bytes, at, static_cast<std::size_t>(count));
      return Isa::LoadBytes(bytes, is_signed);
    }
    std::int32_t buffer[Isa::kLanes] = {};
    for (int i = 0; i < count; ++i) {
      const char byte = at[i * residual_step];
      buffer[i] = is_signed ? std::int32_t{static_cast<std::int8_t>(byte)}
                            : std::int32_t{static_cast<std::uint8_t>(byte)};
    }
    return Isa::Load(buffer);
  }

  // Whether this is a scale whose parameters change along a line (row if `along_cols`).
  bool ScaleVariesAlong(bool along_cols) const {
    return instruction->opcode == OutputOpcode::kScaleByFixedPoint &&
           (LineParameter<Isa>::VariesAlong(instruction->first, along_cols) ||
            LineParameter<Isa>::VariesAlong(instruction->second, along_cols));
  }

  // Run for an instruction known to be kOpcode; a kScaleByFixedPoint known to be uniform along
  // the line when kUniformScale (then the prepared scale is used without a test).
  template <OutputOpcode kOpcode, bool kUniformScale = false, int kBatch>
  __attribute__((always_inline)) void Apply(Raw (&v)[kBatch], int entry, int count) const {
    const auto lanes = [&](const LineParameter<Isa>& parameter, int j) {
      return parameter.Lanes(entry + j * Isa::kLanes, j + 1 < kBatch ? Isa::kLanes : count);
    };
    if constexpr (kOpcode == OutputOpcode::kAdd) {
      for (int j = 0; j < kBatch; ++j) v[j] = fixedpoint::Add(v[j], lanes(first, j));
    } else if constexpr (kOpcode == OutputOpcode::kScaleByFixedPoint) {
      if (kUniformScale || (first.along == nullptr && second.along == nullptr)) {
        for (int j = 0; j < kBatch; ++j) {
          v[j] = scale(fixedpoint::ShiftLeft(v[j], scale_left_shift));
        }
        return;
      }
      if (second.along == nullptr) {
        // One exponent for the line: shifts by a scalar amount, cheaper than per lane.
        const std::int32_t exponent = second.value;
        const int left = exponent > 0 ? exponent : 0, right = exponent < 0 ? -exponent : 0;
        for (int j = 0; j < kBatch; ++j) {
          v[j] = fixedpoint::QuantizeDownByFixedPoint(fixedpoint::ShiftLeft(v[j], left),
                                                      lanes(first, j), right, offset);
        }
        return;
      }
      for (int j = 0; j < kBatch; ++j) {
        const Raw exponent = lanes(second, j);
        const Raw zero = fixedpoint::Dup<Raw>(0);
        const Raw scaled = fixedpoint::SaturatingRoundingDoublingHighMul(
            fixedpoint::ShiftLeft(v[j], Isa::Max(exponent, zero)), lanes(first, j));
        v[j] = fixedpoint::Add(
            fixedpoint::RoundingDivideByPOT(scaled, Isa::Max(fixedpoint::Neg(exponent), zero)),
            offset);
      }
    } else if constexpr (kOpcode == OutputOpcode::kSaturatingShiftLeft) {
      for (int j = 0; j < kBatch; ++j) {
        v[j] = fixedpoint::SaturatingRoundingMultiplyByPOT(v[j], instruction->limit);
      }
    } else if constexpr (kOpcode == OutputOpcode::kRoundingShiftRight) {
      for (int j = 0; j < kBatch; ++j) {
        v[j] = fixedpoint::RoundingDivideByPOT(v[j], instruction->limit);
      }
    } else if constexpr (kOpcode == OutputOpcode::kStochasticShiftRight) {
      // floor((v + U) / 2^shift) for U = random >> (32 - shift) in [0, 2^shift), without the
      // 64 bits of the scalar Eval: (v >> shift) plus a carry where v's low bits and U reach
      // 2^shift, i.e. where (v & mask) > mask - U.
      using Hash = StochasticRoundingHash;
      const int shift = instruction->limit;
      const Raw mask =
          fixedpoint::Dup<Raw>(static_cast<std::int32_t>((std::uint32_t{1} << shift) - 1));
      for (int j = 0; j < kBatch; ++j) {
        const Raw positions = fixedpoint::Add(
            fixedpoint::Dup<Raw>(line_first + entry + j * Isa::kLanes), LaneIndices<Isa>());
        Raw random;
        if (along_cols) {
          random = HashLanes(fixedpoint::BitXor(
              line_part, fixedpoint::Mul(positions, fixedpoint::Dup<Raw>(static_cast<std::int32_t>(
                                                        Hash::kColStep)))));
        } else {
          const Raw row_keys = HashLanes(fixedpoint::Add(
              offset, fixedpoint::Mul(positions, fixedpoint::Dup<Raw>(
                                                     static_cast<std::int32_t>(Hash::kRowStep)))));
          random = HashLanes(fixedpoint::BitXor(row_keys, line_part));
        }
        const Raw up = LogicalShiftRight(random, 32 - shift);
        const Raw carry = fixedpoint::MaskIfGreaterThan(fixedpoint::BitAnd(v[j], mask),
                                                        fixedpoint::Sub(mask, up));
        v[j] = fixedpoint::Sub(fixedpoint::ShiftRight(v[j], shift), carry);
      }
    } else if constexpr (kOpcode == OutputOpcode::kClamp) {
      for (int j = 0; j < kBatch; ++j) v[j] = Isa::Min(Isa::Max(v[j], offset), limit);
    } else if constexpr (kOpcode == OutputOpcode::kAlignedSum) {
      // AlignedSumParameters::Sum on lanes.
      const AlignedSumOperands& operands = *instruction->aligned_sum;
      for (int j = 0; j < kBatch; ++j) {
        const int first_entry = entry + j * Isa::kLanes;
        const int lane_count = j + 1 < kBatch ? Isa::kLanes : count;
        const auto parameter = [&](int index, const ChannelParameter& values) {
          if (!aligned_varies) return fixedpoint::Dup<Raw>(aligned_values[index]);
          return AlignedLanes(values, first_entry, lane_count);
        };
        const Raw residual = ResidualLanes(operands.residual_signed, first_entry, lane_count);
        const Raw lhs_difference = fixedpoint::Sub(v[j], parameter(0, operands.lhs_zero_point));
        const Raw rhs_difference = fixedpoint::Sub(residual, parameter(1, operands.rhs_zero_point));
        Raw sum =
            fixedpoint::Add(fixedpoint::Mul(lhs_difference, parameter(2, operands.lhs_multiplier)),
                            fixedpoint::Mul(rhs_difference, parameter(3, operands.rhs_multiplier)));
        if (operands.split) {
          using Parameters = AlignedSumParameters;
          sum = Isa::Min(Isa::Max(sum, fixedpoint::Dup<Raw>(-Parameters::kHighLimit)),
                         fixedpoint::Dup<Raw>(Parameters::kHighLimit));
          const Raw low = fixedpoint::Add(
              fixedpoint::Mul(lhs_difference, parameter(4, operands.lhs_low_multiplier)),
              fixedpoint::Mul(rhs_difference, parameter(5, operands.rhs_low_multiplier)));
          sum = fixedpoint::Add(fixedpoint::ShiftLeft(sum, Parameters::kLowBits), low);
        }
        v[j] = sum;
      }
    } else {
      static_assert(kOpcode == OutputOpcode::kTruncateToUint8, "every opcode has a case");
      for (int j = 0; j < kBatch; ++j) {
        v[j] = fixedpoint::BitAnd(v[j], fixedpoint::Dup<Raw>(0xff));
      }
    }
  }
};

// The offset terms (internal/unpack.h) of the current line: the line's own values broadcast,
// the other side's loaded along the line. Separable terms are first + first_along[entry].
template <typename Isa>
struct LineTerms {
  using Raw = typename Isa::Raw;
  Raw first;
  Raw second;
  const std::int32_t* first_along = nullptr;   // null: no terms owed
  const std::int32_t* second_along = nullptr;  // null: separable terms

  // `along_cols`: the line is a result row; `line` and `offset` count from the block's first row
  // and column.
  __attribute__((always_inline)) static LineTerms For(const OffsetTerms& terms, int line,
                                                      bool along_cols) {
    if (terms.row_part != nullptr) {
      return {fixedpoint::Dup<Raw>((along_cols ? terms.row_part : terms.col_part)[line]),
              fixedpoint::Dup<Raw>(0), along_cols ? terms.col_part : terms.row_part, nullptr};
    }
    if (terms.row_first == nullptr) return {fixedpoint::Dup<Raw>(0), fixedpoint::Dup<Raw>(0)};
    const std::int32_t* line_first = along_cols ? terms.row_first : terms.col_first;
    const std::int32_t* line_second = along_cols ? terms.row_second : terms.col_second;
    return {fixedpoint::Dup<Raw>(line_first[line]), fixedpoint::Dup<Raw>(line_second[line]),
            along_cols ? terms.col_first : terms.row_first,
            along_cols ? terms.col_second : terms.row_second};
  }

  __attribute__((always_inline)) Raw AddTo(Raw v, int entry, int count) const {
    if (first_along == nullptr) return v;
    if (second_along == nullptr) return AddSeparableTo(v, entry, count);
    const Raw products =
        fixedpoint::Add(fixedpoint::Mul(first, LoadPartial<Isa>(first_along + entry, count)),
                        fixedpoint::Mul(second, LoadPartial<Isa>(second_along + entry, count)));
    return fixedpoint::Add(v, products);
  }

  // AddTo for terms known to be separable.
  __attribute__((always_inline)) Raw AddSeparableTo(Raw v, int entry, int count) const {
    return fixedpoint::Add(fixedpoint::Add(v, first), LoadPartial<Isa>(first_along + entry, count));
  }
};

// The rescale of requantized operands' sums (internal/driver.h) for the current line: the line's
// own terms as scalars, the other side's loaded along the line. It follows the offset terms and
// precedes the program. RescaleBlock (internal/unpack.cc) computes the same for the scalar
// path: every product and sum is an exact integer in double, the quotient is never a tie, and
// both round to nearest.
template <typename Isa>
struct LineRescale {
  using Raw = typename Isa::Raw;
  double line_a = 0;
  double line_b = 0;
  const double* along_a = nullptr;  // null: no rescale owed
  const double* along_b = nullptr;
  double reciprocal = 0;

  // `along_cols`: the line is result row `row`; else result column `col`. `reciprocal` is
  // 1 / rescale->divisor, divided out once per block rather than per line.
  static LineRescale For(const Rescale* rescale, double reciprocal, int row, int col,
                         bool along_cols) {
    if (rescale == nullptr) return {};
    const RescaleLineTerms& line = along_cols ? rescale->lhs : rescale->rhs;
    const RescaleLineTerms& along = along_cols ? rescale->rhs : rescale->lhs;
    const int line_index = along_cols ? row : col;
    const int first = along_cols ? col : row;
    return {line.a[line_index], line.b[line_index], along.a + first, along.b + first, reciprocal};
  }

  __attribute__((always_inline)) Raw Apply(Raw sums, int entry, int count) const {
    return along_a == nullptr ? sums : ApplyOwed(sums, entry, count);
  }

  // Apply for a rescale known to be owed.
  __attribute__((always_inline)) Raw ApplyOwed(Raw sums, int entry, int count) const {
    if (count == Isa::kLanes) {
      return Isa::RescaleLanes(sums, line_a, line_b, along_a + entry, along_b + entry, reciprocal);
    }
    double a[Isa::kLanes] = {}, b[Isa::kLanes] = {};
    std::memcpy(a, along_a + entry, sizeof(double) * count);
    std::memcpy(b, along_b + entry, sizeof(double) * count);
    return Isa::RescaleLanes(sums, line_a, line_b, a, b, reciprocal);
  }
};

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
class Writer {
 public:
  using Raw = typename Isa::Raw;

  Writer(const OutputProgram& program, const AccumulatorBlock& block, const OffsetTerms& terms,
         const Rescale* rescale, const MatrixView& result)
      : Writer(program, block, terms, rescale, result.order, result.type,
               // The view is of the caller's writable result map.
               static_cast<char*>(const_cast<void*>(result.data)) +
                   (result.order == Order::kRowMajor
                        ? static_cast<std::ptrdiff_t>(block.row_start) * result.stride +
                              block.col_start
                        : block.row_start +
                              static_cast<std::ptrdiff_t>(block.col_start) * result.stride) *
                       ElementSize(result.type),
               result.stride) {}

  void Write() {
    const int lines = row_major_ ? block_.rows : block_.cols;
    const int length = row_major_ ? block_.cols : block_.rows;
    const std::ptrdiff_t line_step = row_major_ ? block_.row_stride : block_.col_stride;
    const std::ptrdiff_t entry_step = row_major_ ? block_.col_stride : block_.row_stride;
    if (entry_step == 1) {
      (this->*write_lines_)(block_.data, line_step, 0, lines, 0, length);
      return;
    }
    if (line_step == 1 && length < kAcrossLength) {
      WriteAcross(lines, length);
      return;
    }
    int line = 0;
    if (line_step == 1) {
      // The accumulators run across the result's lines: kLanes lines at a time, loaded as
      // kLanes vectors across them and transposed in registers into a buffer of vectors along
      // them, chunk by chunk, which then runs through the lines loop like any contiguous lines.
      const int whole_length = length / Isa::kLanes * Isa::kLanes;
      alignas(64) std::int32_t buffer[Isa::kLanes][kTransposedChunk];
      for (; line + Isa::kLanes <= lines; line += Isa::kLanes) {
        for (int chunk = 0; chunk < whole_length; chunk += kTransposedChunk) {
          const int chunk_end =
              whole_length - chunk < kTransposedChunk ? whole_length : chunk + kTransposedChunk;
          for (int entry = chunk; entry < chunk_end; entry += Isa::kLanes) {
            Raw vectors[Isa::kLanes];
            for (int i = 0; i < Isa::kLanes; ++i) {
              vectors[i] = Isa::Load(block_.data + (entry + i) * entry_step + line);
            }
            Isa::Transpose(vectors);
            for (int i = 0; i < Isa::kLanes; ++i) {
              Isa::Store(vectors[i], sizeof(std::int32_t), buffer[i] + (entry - chunk));
            }
          }
          (this->*write_lines_)(buffer[0], kTransposedChunk, line, line + Isa::kLanes, chunk,
                                chunk_end);
        }
        for (int i = 0; i < Isa::kLanes && whole_length < length; ++i) {
          WriteGathered(line + i, whole_length, length, line_step, entry_step);
        }
      }
    }
    for (; line < lines; ++line) WriteGathered(line, 0, length, line_step, entry_step);
  }

 private:
  // Writes the block's results of `type` in `order`, the block's first at `out`, each next
  // result line `stride` elements further on.
  Writer(const OutputProgram& program, const AccumulatorBlock& block, const OffsetTerms& terms,
         const Rescale* rescale, Order order, ElementType type, char* out, int stride)
      : program_(program),
        block_(block),
        terms_(terms),
        rescale_(rescale),
        reciprocal_(rescale != nullptr ? 1.0 / rescale->divisor : 0.0),
        out_(out),
        stride_(stride),
        row_major_(order == Order::kRowMajor),
        size_(ElementSize(type)),
        count_(program.count) {
    for (int k = 0; k < count_; ++k) {
      instructions_[k] = LineInstruction<Isa>::For(program.instructions[k]);
    }
    switch (type) {
      case ElementType::kUint8:
        write_lines_ = LinesLoopFor<ElementType::kUint8>(program);
        break;
      case ElementType::kInt8:
        write_lines_ = LinesLoopFor<ElementType::kInt8>(program);
        break;
      case ElementType::kInt16:
        write_lines_ = LinesLoopFor<ElementType::kInt16>(program);
        break;
      case ElementType::kInt32:
        write_lines_ = LinesLoopFor<ElementType::kInt32>(program);
        break;
    }
  }

  // Entries per line that the transposed path buffers at a time.
  static constexpr int kTransposedChunk = 64;
  // Result lines shorter than this, with accumulators across them, go through WriteAcross: at
  // four vectors and more, the transposed path's lines loop repays storing and reloading them.
  static constexpr int kAcrossLength = 4 * Isa::kLanes;
  // Result lines that WriteAcross writes through its buffer at a time.
  static constexpr int kAcrossChunk = 128;

  // Short result lines across long lines of accumulators (a small batch's columns when the
  // accumulator rows are the result's rows, as with prepacked weights): the lines loop runs
  // along the accumulators, as if the result had the other storage order, into an int32 buffer
  // (the program leaves every value in the result type's range), which is then transposed into
  // the result. Going along the result's lines instead set up a line per kLanes entries: 1.7 to
  // 2.0 ns per entry of 8-entry lines in a microbenchmark, against 0.55 to 0.9 for this.
  void WriteAcross(int lines, int length) {
    alignas(64) std::int32_t buffer[kAcrossChunk * kAcrossLength];
    const std::ptrdiff_t line_step = row_major_ ? block_.row_stride : block_.col_stride;
    for (int first = 0; first < lines; first += kAcrossChunk) {
      const int count = lines - first < kAcrossChunk ? lines - first : kAcrossChunk;
      AccumulatorBlock part = block_;
      part.data += first * line_step;
      (row_major_ ? part.row_start : part.col_start) += first;
      (row_major_ ? part.rows : part.cols) = count;
      const OffsetTerms part_terms = terms_.From(row_major_ ? first : 0, row_major_ ? 0 : first);
      Writer(program_, part, part_terms, rescale_, row_major_ ? Order::kColMajor : Order::kRowMajor,
             ElementType::kInt32, reinterpret_cast<char*>(buffer), count)
          .Write();
      if (size_ == 1) {
        CopyTransposed<1>(buffer, length, count, first);
      } else if (size_ == 2) {
        CopyTransposed<2>(buffer, length, count, first);
      } else {
        CopyTransposed<4>(buffer, length, count, first);
      }
    }
  }

  // Result lines [first, first + count) from `buffer`, which holds them across: entry e of line
  // first + l at buffer[e * count + l]. Squares of kLanes lines and entries are transposed in
  // registers, the rest is copied one by one.
  template <int kSize>
  void CopyTransposed(const std::int32_t* buffer, int length, int count, int first) const {
    const std::ptrdiff_t line_bytes = static_cast<std::ptrdiff_t>(stride_) * kSize;
    char* const out = out_ + first * line_bytes;
    const int whole_length = length / Isa::kLanes * Isa::kLanes;
    const int whole_count = count / Isa::kLanes * Isa::kLanes;
    for (int line = 0; line < whole_count; line += Isa::kLanes) {
      for (int entry = 0; entry < whole_length; entry += Isa::kLanes) {
        Raw vectors[Isa::kLanes];
        for (int i = 0; i < Isa::kLanes; ++i) {
          vectors[i] = Isa::Load(buffer + (entry + i) * count + line);
        }
        Isa::Transpose(vectors);
        for (int i = 0; i < Isa::kLanes; ++i) {
          Isa::Store(vectors[i], kSize, out + (line + i) * line_bytes + entry * kSize);
        }
      }
    }
    using Element = std::conditional_t<kSize == 1, std::uint8_t,
                                       std::conditional_t<kSize == 2, std::int16_t, std::int32_t>>;
    for (int entry = 0; entry < length; ++entry) {
      for (int line = entry < whole_length ? whole_count : 0; line < count; ++line) {
        // In the result type's range: keeping the low bytes is exact.
        const auto value = static_cast<Element>(buffer[entry * count + line]);
        std::memcpy(out + line * line_bytes + entry * kSize, &value, kSize);
      }
    }
  }

  // Entries [first, end) of line `line`, gathered entry_step apart into a buffer a chunk at a
  // time, which the lines loop then writes like a contiguous line.
  void WriteGathered(int line, int first, int end, std::ptrdiff_t line_step,
                     std::ptrdiff_t entry_step) {
    const std::int32_t* acc = block_.data + line * line_step;
    std::int32_t gathered[kTransposedChunk];
    for (int chunk = first; chunk < end; chunk += kTransposedChunk) {
      const int chunk_end = end - chunk < kTransposedChunk ? end : chunk + kTransposedChunk;
      for (int entry = chunk; entry < chunk_end; ++entry) {
        gathered[entry - chunk] = acc[entry * entry_step];
      }
      (this->*write_lines_)(gathered, 0, line, line + 1, chunk, chunk_end);
    }
  }

  // Writes entries [first, end) of lines [first_line, end_line) from contiguous sums: line
  // first_line's entry `first` at `sums`, each next line's line_step further on. A block goes
  // through one call: what is the same for all its lines is set up once.
  using LinesLoop = void (Writer::*)(const std::int32_t* sums, std::ptrdiff_t line_step,
                                     int first_line, int end_line, int first, int end);

  template <ElementType kType>
  static constexpr int kSizeOf = kType == ElementType::kInt32   ? 4
                                 : kType == ElementType::kInt16 ? 2
                                                                : 1;
  // The range of a narrow result type.
  template <ElementType kType>
  static constexpr std::int32_t kTypeMin = kType == ElementType::kUint8  ? 0
                                           : kType == ElementType::kInt8 ? -128
                                                                         : -32768;
  template <ElementType kType>
  static constexpr std::int32_t kTypeMax = kType == ElementType::kUint8  ? 255
                                           : kType == ElementType::kInt8 ? 127
                                                                         : 32767;

  // The common pipelines have their own lines loop, with the program's stages inlined in order
  // and their parameters hoisted out of it. Through the generic loop, which dispatches each
  // instruction of each batch, a QuantizeDown and uint8 cast with offset terms took 0.74 ns per
  // entry in a microbenchmark here; through its own loop, 0.58; with lines set up in the loop and
  // the saturating store, 0.44 on long lines.
  template <ElementType kType, OutputOpcode... kOpcodes>
  struct Shape {
    // Selects this shape's loop for `program` if it has these opcodes, in this order, and, for
    // narrow results, if a last clamp is the saturating cast to their type (WriteLines leaves it
    // to the saturating store).
    static bool Select(const OutputProgram& program, LinesLoop* loop) {
      const OutputOpcode opcodes[] = {kOpcodes...};
      if (program.count != static_cast<int>(sizeof...(kOpcodes))) return false;
      for (int k = 0; k < program.count; ++k) {
        if (program.instructions[k].opcode != opcodes[k]) return false;
      }
      const OutputInstruction& last = program.instructions[program.count - 1];
      if (kType != ElementType::kInt32 && last.opcode == OutputOpcode::kClamp &&
          (last.offset != kTypeMin<kType> || last.limit != kTypeMax<kType>)) {
        return false;
      }
      *loop = &Writer::WriteShapeLines<kType, kOpcodes...>;
      return true;
    }
  };

  template <ElementType kType>
  static LinesLoop LinesLoopFor(const OutputProgram& program) {
    using Op = OutputOpcode;
    LinesLoop loop = &Writer::WriteLines<kType, false, Owed::kAny>;
    // Bias; QuantizeDown (after a bias, before a clamp) and a cast; ShiftByPOT and a cast; the
    // training layer's stochastic ShiftByPOT (after a bias) with a clamp to its bit width and a
    // cast.
    (void)(Shape<kType, Op::kAdd>::Select(program, &loop) ||
           Shape<kType, Op::kScaleByFixedPoint, Op::kClamp>::Select(program, &loop) ||
           Shape<kType, Op::kAdd, Op::kScaleByFixedPoint, Op::kClamp>::Select(program, &loop) ||
           Shape<kType, Op::kScaleByFixedPoint, Op::kClamp, Op::kClamp>::Select(program, &loop) ||
           Shape<kType, Op::kAdd, Op::kScaleByFixedPoint, Op::kClamp, Op::kClamp>::Select(program,
                                                                                          &loop) ||
           Shape<kType, Op::kRoundingShiftRight, Op::kClamp>::Select(program, &loop) ||
           Shape<kType, Op::kAdd, Op::kRoundingShiftRight, Op::kClamp>::Select(program, &loop) ||
           Shape<kType, Op::kStochasticShiftRight, Op::kClamp, Op::kClamp>::Select(program,
                                                                                   &loop) ||
           Shape<kType, Op::kAdd, Op::kStochasticShiftRight, Op::kClamp, Op::kClamp>::Select(
               program, &loop));
    // A layer's requantization (after an optional bias) followed by the quantized add's stage
    // and the cast: a residual block's output, in 8 bits only.
    if constexpr (kType == ElementType::kUint8 || kType == ElementType::kInt8) {
      (void)(Shape<kType, Op::kScaleByFixedPoint, Op::kClamp, Op::kAlignedSum,
                   Op::kScaleByFixedPoint, Op::kClamp, Op::kClamp>::Select(program, &loop) ||
             Shape<kType, Op::kAdd, Op::kScaleByFixedPoint, Op::kClamp, Op::kAlignedSum,
                   Op::kScaleByFixedPoint, Op::kClamp, Op::kClamp>::Select(program, &loop));
    }
    return loop;
  }

  // A shape's loop for lines whose scale parameters are the same all along each of them; lines
  // whose scale varies along them (per-channel across a row-major result's columns) take the
  // generic loop.
  template <ElementType kType, OutputOpcode... kOpcodes>
  void WriteShapeLines(const std::int32_t* sums, std::ptrdiff_t line_step, int first_line,
                       int end_line, int first, int end) {
    for (int k = 0; k < count_; ++k) {
      if (instructions_[k].ScaleVariesAlong(row_major_)) {
        return WriteLines<kType, false, Owed::kAny>(sums, line_step, first_line, end_line, first,
                                                    end);
      }
    }
    // Separable terms (uniform offsets, the common case), with or without the rescale of
    // requantized operands: loops without the product terms and the tests for what is owed,
    // whose code and registers GCC otherwise keeps in them behind run-time tests. With the
    // rescale, 101 -> 81 instructions per 16 results of L7R5's pipeline.
    if (terms_.row_part != nullptr) {
      if (rescale_ == nullptr) {
        return WriteLines<kType, true, Owed::kSeparableTerms, kOpcodes...>(
            sums, line_step, first_line, end_line, first, end);
      }
      return WriteLines<kType, true, Owed::kSeparableTermsAndRescale, kOpcodes...>(
          sums, line_step, first_line, end_line, first, end);
    }
    WriteLines<kType, true, Owed::kAny, kOpcodes...>(sums, line_step, first_line, end_line, first,
                                                     end);
  }

  // What the lines loop knows of what the sums are owed before the program: anything the
  // block's OffsetTerms and rescale say, or separable terms, with or without a rescale.
  enum class Owed { kAny, kSeparableTerms, kSeparableTermsAndRescale };

  // A LinesLoop for kType results: the program's instructions are kOpcodes when kKnown, else
  // dispatched one by one; the sums are owed what kOwed says. Each line runs batches of vectors,
  // whose programs run side by side (one vector's program is a single chain of dependent
  // operations), then the rest one vector at a time. The element size is a constant and each line's
  // parameters and output pointer are locals: a store through a char pointer could alias any
  // member, so GCC would reload each one after it, and it keeps locals in registers and moves what
  // depends only on them out of the batch loop.
  template <ElementType kType, bool kKnown, Owed kOwed, OutputOpcode... kOpcodes>
  void WriteLines(const std::int32_t* sums, std::ptrdiff_t line_step, int first_line, int end_line,
                  int first, int end) {
    constexpr int kSize = kSizeOf<kType>;
    // Dispatching instruction by instruction costs the same for any batch: four vectors share
    // it. Inlined, two vectors at a time keep everything in registers and interleave enough.
    constexpr int kBatch = kKnown ? 2 : 4;
    constexpr int kKnownCount = sizeof...(kOpcodes);
    constexpr OutputOpcode kOpcodeList[] = {kOpcodes..., OutputOpcode::kAdd};
    // A known last clamp of narrow results is the saturating cast to their type: the saturating
    // narrowing of two vectors at a time does it as it stores them, in fewer instructions than
    // clamping and narrowing each (Shape::Select checked the clamp's range).
    constexpr bool kSaturatingStore = kKnown && kType != ElementType::kInt32 &&
                                      kOpcodeList[kKnownCount - 1] == OutputOpcode::kClamp;
    const int count = count_;
    LineInstruction<Isa> known[kKnownCount + 1];
    for (int k = 0; k < kKnownCount; ++k) known[k] = instructions_[k];
    // All of the program, or all but a last clamp left to the saturating store.
    const auto run = [&](auto& vectors, int entry, int lanes, bool but_last_clamp) {
      if constexpr (kKnown) {
        const int known_count = but_last_clamp && kSaturatingStore ? kKnownCount - 1 : kKnownCount;
        int k = 0;
        ((k < known_count ? known[k].template Apply<kOpcodes, true>(vectors, entry, lanes) : void(),
          ++k),
         ...);
      } else {
        for (int k = 0; k < count; ++k) instructions_[k].Run(vectors, entry, lanes);
      }
    };
    for (int line = first_line; line < end_line; ++line, sums += line_step) {
      // A local, not a member: reading back a member just stored in pieces stalls store
      // forwarding. A profile of 16-entry lines put a tenth of the time on the first such load.
      const Line at = LineAt(line);
      char* const out = at.out;
      const LineTerms<Isa>& terms = at.terms;
      const LineRescale<Isa>& rescale = at.rescale;
      // The sums with what they are owed before the program.
      const auto owed = [&](Raw sums, int entry, int lanes) {
        if constexpr (kOwed == Owed::kSeparableTerms) {
          return terms.AddSeparableTo(sums, entry, lanes);
        } else if constexpr (kOwed == Owed::kSeparableTermsAndRescale) {
          return rescale.ApplyOwed(terms.AddSeparableTo(sums, entry, lanes), entry, lanes);
        }
        return rescale.Apply(terms.AddTo(sums, entry, lanes), entry, lanes);
      };
      if constexpr (kKnown) {
        for (int k = 0; k < kKnownCount; ++k) known[k].ForLine(at.row, at.col, row_major_);
      } else {
        for (int k = 0; k < count; ++k) instructions_[k].ForLine(at.row, at.col, row_major_);
      }
      const std::int32_t* line_sums = sums;
      int entry = first;
      for (; entry + kBatch * Isa::kLanes <= end;
           entry += kBatch * Isa::kLanes, line_sums += kBatch * Isa::kLanes) {
        Raw vectors[kBatch];
        for (int j = 0; j < kBatch; ++j) {
          const int first_entry = entry + j * Isa::kLanes;
          vectors[j] = owed(Isa::Load(line_sums + j * Isa::kLanes), first_entry, Isa::kLanes);
        }
        run(vectors, entry, Isa::kLanes, true);
        if constexpr (kSaturatingStore) {
          Isa::template StoreSaturated<kType>(vectors[0], vectors[1], out + entry * kSize);
        } else {
          for (int j = 0; j < kBatch; ++j) {
            Isa::Store(vectors[j], kSize, out + (entry + j * Isa::kLanes) * kSize);
          }
        }
      }
      for (; entry < end; entry += Isa::kLanes, line_sums += Isa::kLanes) {
        const int lanes = end - entry < Isa::kLanes ? end - entry : Isa::kLanes;
        Raw vectors[1] = {owed(LoadPartial<Isa>(line_sums, lanes), entry, lanes)};
        run(vectors, entry, lanes, false);
        StorePartial<Isa>(vectors[0], kSize, lanes, out + entry * kSize);
      }
    }
  }

  // What block line `line` needs besides its instructions: the result row and column of its
  // first entry, where that entry goes, and what its sums are owed.
  struct Line {
    int row;
    int col;
    char* out;
    LineTerms<Isa> terms;
    LineRescale<Isa> rescale;
  };

  // Inlined into the lines loop, as are ForLine, LineTerms::For and LoadPartial: as calls, with
  // the reloads and spills around them, they cost about 135 instructions per line, against 200
  // for the 64 entries of a line of the QuantizeDown pipeline; inlined, about 95.
  __attribute__((always_inline)) Line LineAt(int line) const {
    const int row = block_.row_start + (row_major_ ? line : 0);
    const int col = block_.col_start + (row_major_ ? 0 : line);
    char* const out = out_ + static_cast<std::ptrdiff_t>(line) * stride_ * size_;
    return {row, col, out, LineTerms<Isa>::For(terms_, line, row_major_),
            LineRescale<Isa>::For(rescale_, reciprocal_, row, col, row_major_)};
  }

  const OutputProgram& program_;
  const AccumulatorBlock& block_;
  const OffsetTerms& terms_;
  const Rescale* rescale_;
  const double reciprocal_;
  char* const out_;  // the block's first result
  const int stride_;
  const bool row_major_;
  const int size_;
  const int count_;
  LineInstruction<Isa> instructions_[OutputProgram::kMaxInstructions];
  LinesLoop write_lines_;
};

template <typename Isa>
void WriteOutput(const OutputProgram& program, const AccumulatorBlock& block,
                 const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result) {
  Writer<Isa>(program, block, terms, rescale, result).Write();
}

}  // namespace output_writer
}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_WRITER_H_
