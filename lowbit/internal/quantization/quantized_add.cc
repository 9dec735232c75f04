// The quantized add of lowbit/public/quantized_add.h: the plan is derived in double once, the add
// runs on integers only (fixedpoint::QuantizeDownScale, the SRDHM and RoundingDivideByPOT of the
// stages).
#include "lowbit/public/quantized_add.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lowbit/fixedpoint/fixedpoint.h"
#include "lowbit/internal/output/output.h"
#include "lowbit/internal/output/output_program.h"
#include "lowbit/internal/quantization/quantization_checks.h"
#include "lowbit/public/context.h"
#include "lowbit/public/error.h"

namespace lowbit {
namespace {

// |q - zero_point| <= 255 for any q and zero point of a type of at most 8 bits: the largest
// factor an aligned multiplier is ever multiplied by.
constexpr std::int64_t kMaxDifference = 255;
constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();

// Error bound (doc/quantization.md, "Adding tensors at different scales"). Write m for the
// real 2^-f / output scale (f = fractional_bits), y for the exact real sum in output steps,
// and r for the integer the stage computes before the output zero point and the clamp:
// - each aligned multiplier A = round(s * 2^f) is within 1/2 of s * 2^f, so the integer sum
//   times m is within (|dx| + |dy|) / 2 * m <= 255 m of y;
// - QuantizeMultiplier's m' is within m 2^-31 of m, and |sum| < 2^31: at most m more;
// - the SRDHM rounds by 1/2 of its unit, which the right shift by k = -exponent makes 2^(-k-1)
//   output steps, at most m' (m' >= 2^30 2^(-31-k)); the final shift rounds by 1/2.
// So |r - y| <= 1/2 + 257 m (with m' <= m (1 + 2^-31)), and |r - round(y)| <= 1 + 257 m, an
// integer below 2 when m < 1/257: within 1 LSB of the correctly rounded sum; the clamp,
// monotone, keeps that. The plan requires m <= 2^-9 (257 m <= 0.502), and usually m is far
// smaller (about 2^-22 (lhs scale + rhs scale) / output scale), so the result is then the
// correctly rounded sum except within 257 m of a tie.
constexpr int kMaxOutputMultiplierLog2 = -9;

// When m <= 2^-9 needs a unit so fine that 255 (A_lhs + A_rhs) leaves int32 (an input step of
// more than 2^13 output steps), A = high 2^16 + low with low in [0, 2^16), and the add forms
// H = sum of (q - z) high and L = sum of (q - z) low, |L| <= 510 (2^16 - 1) < 2^25
// (internal::AlignedSumParameters). If |H| >= 2^14 the sum H 2^16 + L is at least 2^30 - 2^25
// in magnitude, which is more than 2^19 output steps since m > 2^-10 there: the output saturates
// to the clamp bound of H's sign, as the reference does, and stays so with H clamped to +-2^14,
// which keeps H 2^16 + L within int32 (below 2^30 + 2^25). Otherwise H 2^16 + L goes through the
// output requantization as before, with the same bound. The plan needs 255 (high_lhs +
// high_rhs) in int32.
constexpr int kLowBits = internal::AlignedSumParameters::kLowBits;

using internal::CheckPointer;
using internal::CheckType;
using internal::CheckZeroPoint;
using internal::Text;

// Subnormal scales are rejected as ChooseQuantizationParams never gives them: 2^-f, the sum's
// unit, must stay exact in a double for every f the plan may take.
void CheckNormalScale(double scale, const std::string& name) {
  if (!std::isfinite(scale) || scale < std::numeric_limits<double>::min()) {
    throw Error(
        name, "must be finite and at least DBL_MIN (positive, not subnormal), got " + Text(scale));
  }
}

// Checks one input and returns its largest scale.
double CheckInput(const QuantizedAddInput& input, const std::string& name) {
  CheckType(input.type, name + ".type");
  if (input.params.empty()) {
    throw Error(name + ".params", "must have one entry (per-tensor) or one per channel, got none");
  }
  if (input.axis != ChannelAxis::kRow && input.axis != ChannelAxis::kCol) {
    throw Error(name + ".axis", "must be ChannelAxis::kRow or kCol, got " +
                                    std::to_string(static_cast<int>(input.axis)));
  }
  double largest = 0;
  for (std::size_t c = 0; c < input.params.size(); ++c) {
    const std::string entry = name + ".params[" + std::to_string(c) + "]";
    CheckNormalScale(input.params[c].scale, entry + ".scale");
    CheckZeroPoint(input.params[c].zero_point, input.type, entry + ".zero_point");
    largest = std::max(largest, input.params[c].scale);
  }
  return largest;
}

// Whether 255 * (round(lhs_scale 2^f) + round(rhs_scale 2^f)) fits in int32: the largest
// |sum| of the add, for the largest scale of each input.
bool SumFits(double lhs_scale, double rhs_scale, int f) {
  const double lhs = std::round(std::ldexp(lhs_scale, f));
  const double rhs = std::round(std::ldexp(rhs_scale, f));
  // Both are below 2^32 when this is asked with a sensible f; compare in double first so that
  // a huge value does not overflow the conversion.
  if (lhs + rhs > 1e12) return false;
  return kMaxDifference * (static_cast<std::int64_t>(lhs) + static_cast<std::int64_t>(rhs)) <=
         kInt32Max;
}

// Whether 255 (high_lhs + high_rhs) fits in int32, high = round(scale 2^f) >> low_bits.
bool HighSumFits(double lhs_scale, double rhs_scale, int f) {
  const double lhs = std::round(std::ldexp(lhs_scale, f));
  const double rhs = std::round(std::ldexp(rhs_scale, f));
  if (lhs + rhs > std::ldexp(1.0, 46)) return false;  // also keeps A exact in a double
  return kMaxDifference * ((static_cast<std::int64_t>(lhs) >> kLowBits) +
                           (static_cast<std::int64_t>(rhs) >> kLowBits)) <=
         kInt32Max;
}

// A = round(scale 2^f) for each channel: whole, or split into A >> low_bits and the low bits.
void AlignedMultipliers(const QuantizedAddInput& input, int f, int low_bits,
                        std::vector<std::int32_t>* multipliers,
                        std::vector<std::int32_t>* low_multipliers) {
  for (const QuantizationParams& params : input.params) {
    const auto aligned = static_cast<std::int64_t>(std::round(std::ldexp(params.scale, f)));
    multipliers->push_back(static_cast<std::int32_t>(aligned >> low_bits));
    if (low_bits > 0) {
      low_multipliers->push_back(
          static_cast<std::int32_t>(aligned & ((std::int64_t{1} << low_bits) - 1)));
    }
  }
}

std::vector<std::int32_t> ZeroPoints(const QuantizedAddInput& input) {
  std::vector<std::int32_t> zero_points;
  for (const QuantizationParams& params : input.params) zero_points.push_back(params.zero_point);
  return zero_points;
}

template <typename Data>
void CheckData(const Data* data, std::size_t size, const QuantizedType& type, const char* name) {
  CheckPointer(data, size, name);
  if (type.is_signed != std::is_signed<Data>::value) {
    throw Error(name, type.is_signed ? "must be int8_t data: the plan's type is signed"
                                     : "must be uint8_t data: the plan's type is unsigned");
  }
}

// The plan's alignment as kAlignedSum's operands: each integer one value, or the channels along
// its axis, read at each entry's row and column (the residual's fields are the caller's).
internal::AlignedSumOperands OperandsOf(const QuantizedAddPlan& plan) {
  const auto channels = [](const std::vector<std::int32_t>& values, ChannelAxis axis) {
    if (values.empty()) return internal::OneValue(0);  // the low multipliers of a plain plan
    if (values.size() == 1) return internal::OneValue(values[0]);
    return internal::PerChannel(values.data(), axis);
  };
  internal::AlignedSumOperands operands{};
  operands.lhs_zero_point = channels(plan.lhs_zero_points, plan.lhs_axis);
  operands.rhs_zero_point = channels(plan.rhs_zero_points, plan.rhs_axis);
  operands.lhs_multiplier = channels(plan.lhs_multipliers, plan.lhs_axis);
  operands.rhs_multiplier = channels(plan.rhs_multipliers, plan.rhs_axis);
  operands.lhs_low_multiplier = channels(plan.lhs_low_multipliers, plan.lhs_axis);
  operands.rhs_low_multiplier = channels(plan.rhs_low_multipliers, plan.rhs_axis);
  operands.split = plan.low_bits > 0;
  return operands;
}

// The operands of an add of row-major rows x `cols` matrices whose rhs is `rhs`.
template <typename Rhs>
internal::AlignedSumOperands RowMajorOperands(const QuantizedAddPlan& plan, const Rhs* rhs,
                                              int cols) {
  internal::AlignedSumOperands operands = OperandsOf(plan);
  operands.residual = rhs;
  operands.residual_signed = std::is_signed<Rhs>::value;
  operands.row_step = cols;
  operands.col_step = 1;
  return operands;
}

// The add, integers only, on the scalar path: kAlignedSum's Eval (whose products and sums the
// plan keeps within int32), then the output's QuantizeDownScale and clamp.
template <typename Lhs, typename Rhs, typename Output>
void AddRows(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, int rows, int cols,
             Output* output) {
  const internal::AlignedSumOperands operands = RowMajorOperands(plan, rhs, cols);
  // The plan keeps the output multiplier below 1 (m <= 2^-9): a right shift only.
  const fixedpoint::QuantizeDownScale<std::int32_t> scale(
      plan.output_multiplier, -plan.output_exponent, plan.output_zero_point);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) {
      const std::size_t i = static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + c;
      // |scaled| <= |sum| m' + 1 < 2^23: adding the zero point cannot wrap.
      const std::int32_t scaled = scale(operands.Eval(lhs[i], r, c));
      output[i] = static_cast<Output>(std::min(std::max(scaled, plan.output_min), plan.output_max));
    }
  }
}

// Entries an add widens and writes at a time.
constexpr int kChunk = 1024;

// The add on the output writer of the kernel a default Context runs (LOWBIT_KERNEL or the best),
// which gives AddRows' bits (test/output_writer_test.cc checks every writer against the scalar
// stages): the lhs widened to int32 a chunk of a row at a time as a one-row block of
// "accumulators" at its place in the result, the rhs as kAlignedSum's residual, then the output
// requantization and clamp. False, with nothing written, where the kernel has no writer (the
// reference kernel).
template <typename Lhs, typename Rhs, typename Output>
bool AddOnWriter(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, int rows, int cols,
                 Output* output) {
  const internal::OutputWriter writer = internal::OutputWriterFor(Context().ResolvedKernel());
  if (writer == nullptr) return false;
  const internal::AlignedSumOperands operands = RowMajorOperands(plan, rhs, cols);
  internal::OutputProgram program;
  program.Append({internal::OutputOpcode::kAlignedSum, {}, {}, 0, 0, &operands});
  program.Append({internal::OutputOpcode::kScaleByFixedPoint,
                  internal::OneValue(plan.output_multiplier),
                  internal::OneValue(plan.output_exponent), plan.output_zero_point, 0});
  program.Append({internal::OutputOpcode::kClamp, {}, {}, plan.output_min, plan.output_max});
  const internal::MatrixView result{
      output,
      std::is_signed<Output>::value ? internal::ElementType::kInt8 : internal::ElementType::kUint8,
      rows,
      cols,
      Order::kRowMajor,
      cols};
  std::int32_t widened[kChunk];
  for (int row = 0; row < rows; ++row) {
    for (int first_col = 0; first_col < cols; first_col += kChunk) {
      const std::size_t first =
          static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) + first_col;
      const int size = cols - first_col < kChunk ? cols - first_col : kChunk;
      for (int i = 0; i < size; ++i) widened[i] = lhs[first + i];
      const internal::AccumulatorBlock block{row, first_col, 1, size, widened, size, 1};
      writer(program, block, internal::OffsetTerms{}, nullptr, result);
    }
  }
  return true;
}

template <typename Lhs, typename Rhs, typename Output>
void Add(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, int rows, int cols,
         Output* output) {
  if (!AddOnWriter(plan, lhs, rhs, rows, cols, output)) AddRows(plan, lhs, rhs, rows, cols, output);
}

// A per-tensor add of `count` entries, any shape giving the same bits: as rows of kChunk entries
// (at most 2^20 of them at a time, so that every index fits int) and a last shorter row.
template <typename Lhs, typename Rhs, typename Output>
void AddFlat(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, std::size_t count,
             Output* output) {
  constexpr std::size_t kMostRows = std::size_t{1} << 20;
  while (count > 0) {
    const std::size_t rows = std::min(count / kChunk, kMostRows);
    const std::size_t done = rows > 0 ? rows * kChunk : count;
    if (rows > 0) {
      Add(plan, lhs, rhs, static_cast<int>(rows), kChunk, output);
    } else {
      Add(plan, lhs, rhs, 1, static_cast<int>(count), output);
    }
    lhs += done;
    rhs += done;
    output += done;
    count -= done;
  }
}

template <typename Lhs, typename Rhs, typename Output>
void CheckBuffers(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, std::size_t size,
                  Output* output) {
  CheckData(lhs, size, plan.lhs_type, "lhs");
  CheckData(rhs, size, plan.rhs_type, "rhs");
  CheckData(output, size, plan.output_type, "output");
}

}  // namespace

namespace internal {

void CheckChannelsFit(std::size_t channels, ChannelAxis axis, int rows, int cols,
                      const std::string& name, const char* input) {
  const int expected = axis == ChannelAxis::kRow ? rows : cols;
  if (channels != 1 && channels != static_cast<std::size_t>(expected)) {
    throw Error(name, std::string("has a per-axis ") + input + " of " + std::to_string(channels) +
                          " channels; it needs one per result " +
                          (axis == ChannelAxis::kRow ? "row" : "column") + " (" +
                          std::to_string(expected) + ") or one for the whole tensor");
  }
}

}  // namespace internal

QuantizedAddPlan MakeQuantizedAddPlan(const QuantizedAddInput& lhs, const QuantizedAddInput& rhs,
                                      const QuantizationParams& output, QuantizedType output_type) {
  CheckType(output_type, "output_type");
  return MakeQuantizedAddPlan(lhs, rhs, output, output_type, output_type.min(), output_type.max());
}

QuantizedAddPlan MakeQuantizedAddPlan(const QuantizedAddInput& lhs, const QuantizedAddInput& rhs,
                                      const QuantizationParams& output, QuantizedType output_type,
                                      std::int32_t output_min, std::int32_t output_max) {
  // The plan is derived in double; the add that uses it is integers only.
  const double lhs_largest = CheckInput(lhs, "lhs");
  const double rhs_largest = CheckInput(rhs, "rhs");
  CheckType(output_type, "output_type");
  CheckNormalScale(output.scale, "output.scale");
  CheckZeroPoint(output.zero_point, output_type, "output.zero_point");
  CheckZeroPoint(output_min, output_type, "output_min");
  CheckZeroPoint(output_max, output_type, "output_max");
  if (output_min > output_max) {
    throw Error("output_min", "must not exceed output_max (" + std::to_string(output_max) +
                                  "), got " + std::to_string(output_min));
  }
  // f: the finest common unit 2^-f of the sum such that the sum fits in int32 (design section 8
  // aligns both inputs to the finer f; here the coarser input gets as many mantissa bits as
  // int32 leaves, because the output scale may be far finer than the inputs'). 2^f is near
  // 2^31 / (255 (lhs + rhs)) <= 2^23 / max(lhs, rhs); start above and step down (from the
  // larger scale, as lhs + rhs may overflow to infinity).
  int f = 24 - std::ilogb(std::max(lhs_largest, rhs_largest));
  while (!SumFits(lhs_largest, rhs_largest, f)) --f;
  // A unit finer than 2^-31 output steps buys nothing (the bound's 255 m is already below 2^-23)
  // and would leave QuantizeMultiplier's range.
  while (std::ldexp(1.0, -f) / output.scale < std::ldexp(1.0, -31)) --f;
  const double largest_multiplier = std::ldexp(1.0, kMaxOutputMultiplierLog2);
  int low_bits = 0;
  if (!(std::ldexp(1.0, -f) / output.scale <= largest_multiplier)) {
    // The unit that keeps the bound is finer than one int32 product allows: the two-part sum
    // (kLowBits) at the coarsest unit of at most 2^-9 output steps.
    low_bits = kLowBits;
    while (!(std::ldexp(1.0, -f) / output.scale <= largest_multiplier)) ++f;
    if (!HighSumFits(lhs_largest, rhs_largest, f)) {
      throw Error("output.scale",
                  "is too fine for the inputs' scales: lhs scale + rhs scale must be at most "
                  "2^29 output scales for an int32 sum within 1 LSB, got " +
                      Text(output.scale) + " for lhs scale " + Text(lhs_largest) +
                      " and rhs scale " + Text(rhs_largest));
    }
  }
  const double output_multiplier = std::ldexp(1.0, -f) / output.scale;
  const FixedPointMultiplier multiplier = QuantizeMultiplier(output_multiplier);

  QuantizedAddPlan plan;
  plan.lhs_type = lhs.type;
  plan.rhs_type = rhs.type;
  plan.output_type = output_type;
  plan.lhs_axis = lhs.axis;
  plan.rhs_axis = rhs.axis;
  AlignedMultipliers(lhs, f, low_bits, &plan.lhs_multipliers, &plan.lhs_low_multipliers);
  AlignedMultipliers(rhs, f, low_bits, &plan.rhs_multipliers, &plan.rhs_low_multipliers);
  plan.low_bits = low_bits;
  plan.lhs_zero_points = ZeroPoints(lhs);
  plan.rhs_zero_points = ZeroPoints(rhs);
  plan.fractional_bits = f;
  plan.output_multiplier = multiplier.multiplier;
  plan.output_exponent = multiplier.exponent;
  plan.output_zero_point = output.zero_point;
  plan.output_min = output_min;
  plan.output_max = output_max;
  return plan;
}

template <typename Lhs, typename Rhs, typename Output>
void QuantizedAdd(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, int rows, int cols,
                  Output* output) {
  if (rows < 0) throw Error("rows", "must not be negative, got " + std::to_string(rows));
  if (cols < 0) throw Error("cols", "must not be negative, got " + std::to_string(cols));
  const std::size_t size = static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
  CheckBuffers(plan, lhs, rhs, size, output);
  internal::CheckChannelsFit(plan.lhs_multipliers.size(), plan.lhs_axis, rows, cols, "lhs", "lhs");
  internal::CheckChannelsFit(plan.rhs_multipliers.size(), plan.rhs_axis, rows, cols, "rhs", "rhs");
  if (plan.lhs_multipliers.size() == 1 && plan.rhs_multipliers.size() == 1) {
    AddFlat(plan, lhs, rhs, size, output);  // long rows, whatever the matrix's shape
  } else {
    Add(plan, lhs, rhs, rows, cols, output);
  }
}

template <typename Lhs, typename Rhs, typename Output>
void QuantizedAdd(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, std::size_t count,
                  Output* output) {
  CheckBuffers(plan, lhs, rhs, count, output);
  if (plan.lhs_multipliers.size() != 1) {
    throw Error("lhs", "is per-axis in the plan: pass rows and cols, not a flat count");
  }
  if (plan.rhs_multipliers.size() != 1) {
    throw Error("rhs", "is per-axis in the plan: pass rows and cols, not a flat count");
  }
  AddFlat(plan, lhs, rhs, count, output);
}

template <typename Residual>
OutputStageQuantizedAdd<Residual> MakeOutputStageQuantizedAdd(
    const QuantizedAddPlan& plan, const MatrixMap<const Residual>& residual) {
  if (plan.rhs_type.is_signed != std::is_signed<Residual>::value) {
    throw Error("residual", plan.rhs_type.is_signed
                                ? "must be int8_t data: the plan's rhs type is signed"
                                : "must be uint8_t data: the plan's rhs type is unsigned");
  }
  auto aligned = std::make_shared<internal::QuantizedAddStageOperands>();
  aligned->plan = plan;
  internal::AlignedSumOperands& operands = aligned->operands;
  operands = OperandsOf(aligned->plan);
  operands.residual = residual.data();
  operands.residual_signed = std::is_signed<Residual>::value;
  const bool row_major = residual.order() == Order::kRowMajor;
  operands.row_step = row_major ? residual.stride() : 1;
  operands.col_step = row_major ? 1 : residual.stride();
  return OutputStageQuantizedAdd<Residual>(plan, residual, std::move(aligned));
}

template OutputStageQuantizedAdd<std::uint8_t> MakeOutputStageQuantizedAdd(
    const QuantizedAddPlan&, const MatrixMap<const std::uint8_t>&);
template OutputStageQuantizedAdd<std::int8_t> MakeOutputStageQuantizedAdd(
    const QuantizedAddPlan&, const MatrixMap<const std::int8_t>&);

// The eight combinations of uint8_t and int8_t.
#define LOWBIT_INSTANTIATE_QUANTIZED_ADD(Lhs, Rhs, Output)                                      \
  template void QuantizedAdd<Lhs, Rhs, Output>(const QuantizedAddPlan&, const Lhs*, const Rhs*, \
                                               int, int, Output*);                              \
  template void QuantizedAdd<Lhs, Rhs, Output>(const QuantizedAddPlan&, const Lhs*, const Rhs*, \
                                               std::size_t, Output*);
LOWBIT_INSTANTIATE_QUANTIZED_ADD(std::uint8_t, std::uint8_t, std::uint8_t)
LOWBIT_INSTANTIATE_QUANTIZED_ADD(std::uint8_t, std::uint8_t, std::int8_t)
LOWBIT_INSTANTIATE_QUANTIZED_ADD(std::uint8_t, std::int8_t, std::uint8_t)
LOWBIT_INSTANTIATE_QUANTIZED_ADD(std::uint8_t, std::int8_t, std::int8_t)
LOWBIT_INSTANTIATE_QUANTIZED_ADD(std::int8_t, std::uint8_t, std::uint8_t)
LOWBIT_INSTANTIATE_QUANTIZED_ADD(std::int8_t, std::uint8_t, std::int8_t)
LOWBIT_INSTANTIATE_QUANTIZED_ADD(std::int8_t, std::int8_t, std::uint8_t)
LOWBIT_INSTANTIATE_QUANTIZED_ADD(std::int8_t, std::int8_t, std::int8_t)
#undef LOWBIT_INSTANTIATE_QUANTIZED_ADD

}  // namespace lowbit
