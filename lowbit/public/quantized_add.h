// An elementwise add of two quantized tensors at different scales into a third, with integers
// only: the integer-only scale alignment of doc/design.md section 8 (residual branches).
#ifndef LOWBIT_PUBLIC_QUANTIZED_ADD_H_
#define LOWBIT_PUBLIC_QUANTIZED_ADD_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/output/output_program.h"
#include "lowbit/public/error.h"
#include "lowbit/public/map.h"
#include "lowbit/public/output_stages.h"
#include "lowbit/public/quantization.h"

namespace lowbit {

/// The quantization of one input of QuantizedAdd. One entry in `params`: per-tensor, for any
/// shape. More than one: per-axis, one entry per row (axis kRow) or per column (kCol) of a
/// row-major rows x cols matrix, each with its own scale and zero point.
struct QuantizedAddInput {
  QuantizedType type = QuantizedType::Uint8();  // must match the data's uint8_t / int8_t
  std::vector<QuantizationParams> params;
  ChannelAxis axis = ChannelAxis::kRow;
};

/// Everything QuantizedAdd needs, as integers: built once (in double) by MakeQuantizedAddPlan,
/// then applied to any number of tensors without floating point. For an input x with zero point z
/// and aligned multiplier A (its scale s as A * 2^-fractional_bits), and the same for y:
///   sum = (x - z_x) * A_x + (y - z_y) * A_y                    (int32, never overflows)
///   out = clamp(RoundingDivideByPOT(SRDHM(sum, output_multiplier), -output_exponent)
///               + output_zero_point, output_min, output_max)
/// The last line is OutputStageScaleInt32ByFixedPointAndExponent with a non-positive exponent.
/// When the output scale is over 2^13 times finer than the inputs', A needs more bits than one
/// int32 product holds: A = high * 2^16 + low (low_bits 16), the sum is formed from the two
/// halves, and a high half's sum beyond +-2^14 means a sum that saturates the output.
struct QuantizedAddPlan {
  QuantizedType lhs_type, rhs_type, output_type;
  ChannelAxis lhs_axis, rhs_axis;
  /// A = round(scale * 2^fractional_bits) per channel (one entry for a per-tensor input): with
  /// low_bits 0, A itself; with low_bits 16, A >> 16 here and A's low 16 bits in low_multipliers.
  std::vector<std::int32_t> lhs_multipliers, rhs_multipliers;
  std::vector<std::int32_t> lhs_low_multipliers, rhs_low_multipliers;  // empty for low_bits 0
  int low_bits;
  std::vector<std::int32_t> lhs_zero_points, rhs_zero_points;
  int fractional_bits;
  /// QuantizeMultiplier(2^-fractional_bits / output scale); the exponent is at most -8.
  std::int32_t output_multiplier;
  int output_exponent;
  std::int32_t output_zero_point, output_min, output_max;
};

/// The plan for out = lhs + rhs (real values) quantized with `output` in `output_type`, clamped to
/// [output_min, output_max] (quantized values; the type's range by default, the output zero point
/// as output_min for a fused ReLU). The result is within 1 of
/// clamp(round((real lhs + real rhs) / output.scale) + output.zero_point): see doc/quantization.md,
/// "Adding tensors at different scales", for the bound and the range of scales it covers.
/// Throws lowbit::Error naming the argument ("lhs.params[2].scale", "output.zero_point",
/// "output_min", ...) for a type whose bits are outside [2, 8], no params, a scale that is not
/// finite or is below DBL_MIN (zero, negative, subnormal), a zero point outside its type, an
/// unknown axis, clamp bounds outside the output type or in the wrong order, and an output scale so
/// much finer than the inputs' that even the two-part alignment could not keep the bound within
/// int32
/// ("output.scale": an input step of more than 2^29 output steps may be rejected, of more than 2^30
/// always is).
QuantizedAddPlan MakeQuantizedAddPlan(const QuantizedAddInput& lhs, const QuantizedAddInput& rhs,
                                      const QuantizationParams& output,
                                      QuantizedType output_type = QuantizedType::Uint8());
QuantizedAddPlan MakeQuantizedAddPlan(const QuantizedAddInput& lhs, const QuantizedAddInput& rhs,
                                      const QuantizationParams& output, QuantizedType output_type,
                                      std::int32_t output_min, std::int32_t output_max);

/// output[r * cols + c] = lhs[r * cols + c] + rhs[r * cols + c] for row-major rows x cols
/// matrices, with the plan's arithmetic. Lhs, Rhs and Output are each std::uint8_t or std::int8_t
/// and must match the signedness of the plan's types. Throws lowbit::Error, before writing
/// anything, for a null pointer with a nonzero size, negative rows or cols, a data type that does
/// not match the plan ("lhs"), or a per-axis input whose channel count is not the rows (kRow) or
/// the columns (kCol).
template <typename Lhs, typename Rhs, typename Output>
void QuantizedAdd(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, int rows, int cols,
                  Output* output);

/// The same for flat buffers of `count` entries: per-tensor plans only.
template <typename Lhs, typename Rhs, typename Output>
void QuantizedAdd(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, std::size_t count,
                  Output* output);

namespace internal {

/// The quantized add stage's alignment: a copy of the plan and the operands that point into its
/// per-channel values, shared by the stage's copies (a copy must not point into an original that
/// a std::make_tuple may already have destroyed) and never changed after construction.
struct QuantizedAddStageOperands {
  QuantizedAddPlan plan;
  AlignedSumOperands operands;
};

/// Throws lowbit::Error naming `name` unless the plan's `input` ("lhs" or "rhs"), of `channels`
/// channels along `axis`, fits a rows x cols result: one channel for the whole tensor, or one per
/// result row (kRow) or column (kCol). QuantizedAdd and the stage's Validate share it.
void CheckChannelsFit(std::size_t channels, ChannelAxis axis, int rows, int cols,
                      const std::string& name, const char* input);

}  // namespace internal

/// The quantized add as an output stage: a residual branch added to a GEMM's result before it is
/// stored, in the same pass (fused into the vectorized writers like the other stages). The value
/// reaching the stage is the GEMM's result quantized as the plan's lhs, as a requantization stage
/// (OutputStageScaleInt32ByFixedPointAndExponent, say) leaves it; the stage saturates it to the
/// lhs type, as a cast to that type would, adds residual(row, col), quantized as the plan's rhs,
/// and leaves the sum quantized as the plan's output, clamped to [output_min, output_max]. Bit for
/// bit QuantizedAdd(plan, stored, residual) for `stored` the GEMM's result stored in the lhs type
/// by the same pipeline up to the stage; end the pipeline with the saturating cast to the output
/// type. A per-axis input of the plan has one channel per result row (ChannelAxis::kRow) or
/// column (kCol). Build it with MakeOutputStageQuantizedAdd; the residual's memory must outlive the
/// GEMM call and lie outside the result.
template <typename Residual>
class OutputStageQuantizedAdd {
  static_assert(std::is_same<Residual, std::uint8_t>::value ||
                    std::is_same<Residual, std::int8_t>::value,
                "the residual is uint8_t or int8_t");

 public:
  const MatrixMap<const Residual>& residual() const { return residual_; }

  void Validate(int rows, int cols, const std::string& name) const {
    internal::ValidateMatrix((name + ".residual").c_str(), internal::ViewOf(residual_));
    if (residual_.rows() != rows || residual_.cols() != cols) {
      throw Error(name + ".residual", "must be the result's size (" + std::to_string(rows) + " x " +
                                          std::to_string(cols) + "), got " +
                                          std::to_string(residual_.rows()) + " x " +
                                          std::to_string(residual_.cols()));
    }
    const QuantizedAddPlan& plan = aligned_->plan;
    internal::CheckChannelsFit(plan.lhs_multipliers.size(), plan.lhs_axis, rows, cols,
                               name + ".plan", "lhs");
    internal::CheckChannelsFit(plan.rhs_multipliers.size(), plan.rhs_axis, rows, cols,
                               name + ".plan", "rhs");
  }
  template <typename Visit>
  void VisitInputs(Visit&& visit) const {
    visit("residual", residual_);
  }
  /// The lhs saturation, the alignment (reading the residual), the output requantization and
  /// its clamp: four instructions.
  bool Compile(internal::OutputProgram* program) const {
    using internal::OneValue;
    using internal::OutputOpcode;
    return program->Append({OutputOpcode::kClamp, {}, {}, lhs_min_, lhs_max_}) &&
           program->Append({OutputOpcode::kAlignedSum, {}, {}, 0, 0, &aligned_->operands}) &&
           program->Append({OutputOpcode::kScaleByFixedPoint, OneValue(output_multiplier_),
                            OneValue(output_exponent_), output_zero_point_, 0}) &&
           program->Append({OutputOpcode::kClamp, {}, {}, output_min_, output_max_});
  }
  std::int32_t Eval(std::int32_t acc, int row, int col) const {
    const std::int32_t lhs = std::min(std::max(acc, lhs_min_), lhs_max_);
    // The plan keeps the output exponent negative: a right shift only.
    const std::int32_t scaled =
        stage_detail::ScaleByFixedPoint(aligned_->operands.Eval(lhs, row, col), output_multiplier_,
                                        0, -output_exponent_, output_zero_point_);
    return std::min(std::max(scaled, output_min_), output_max_);
  }

 private:
  template <typename R>
  friend OutputStageQuantizedAdd<R> MakeOutputStageQuantizedAdd(const QuantizedAddPlan&,
                                                                const MatrixMap<const R>&);
  OutputStageQuantizedAdd(const QuantizedAddPlan& plan, const MatrixMap<const Residual>& residual,
                          std::shared_ptr<const internal::QuantizedAddStageOperands> aligned)
      : residual_(residual),
        aligned_(std::move(aligned)),
        lhs_min_(plan.lhs_type.min()),
        lhs_max_(plan.lhs_type.max()),
        output_multiplier_(plan.output_multiplier),
        output_exponent_(plan.output_exponent),
        output_zero_point_(plan.output_zero_point),
        output_min_(plan.output_min),
        output_max_(plan.output_max) {}

  MatrixMap<const Residual> residual_;
  std::shared_ptr<const internal::QuantizedAddStageOperands> aligned_;
  std::int32_t lhs_min_, lhs_max_;  // the range of the plan's lhs type
  std::int32_t output_multiplier_;
  int output_exponent_;
  std::int32_t output_zero_point_, output_min_, output_max_;
};

/// The stage for `plan` and `residual` (the rhs of the add, in the plan's rhs type). Throws
/// lowbit::Error for a residual whose signedness is not the plan's rhs type's ("residual"). The
/// residual's shape and storage, and a per-axis input's channel count, are checked with the
/// GEMM's arguments ("pipeline[i].residual...", "pipeline[i].plan").
template <typename Residual>
OutputStageQuantizedAdd<Residual> MakeOutputStageQuantizedAdd(
    const QuantizedAddPlan& plan, const MatrixMap<const Residual>& residual);

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_QUANTIZED_ADD_H_
