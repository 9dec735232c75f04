// An elementwise add of two quantized tensors at different scales into a third, with integers
// only: the integer-only scale alignment of doc/design.md section 8 (residual branches).
#ifndef LOWBIT_PUBLIC_QUANTIZED_ADD_H_
#define LOWBIT_PUBLIC_QUANTIZED_ADD_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "public/map.h"
#include "public/quantization.h"

namespace lowbit {

// The quantization of one input of QuantizedAdd. One entry in `params`: per-tensor, for any
// shape. More than one: per-axis, one entry per row (axis kRow) or per column (kCol) of a
// row-major rows x cols matrix, each with its own scale and zero point.
struct QuantizedAddInput {
  QuantizedType type = QuantizedType::Uint8();  // must match the data's uint8_t / int8_t
  std::vector<QuantizationParams> params;
  ChannelAxis axis = ChannelAxis::kRow;
};

// Everything QuantizedAdd needs, as integers: built once (in double) by MakeQuantizedAddPlan,
// then applied to any number of tensors without floating point. For an input x with zero point z
// and aligned multiplier A (its scale s as A * 2^-fractional_bits), and the same for y:
//   sum = (x - z_x) * A_x + (y - z_y) * A_y                    (int32, never overflows)
//   out = clamp(RoundingDivideByPOT(SRDHM(sum, output_multiplier), -output_exponent)
//               + output_zero_point, output_min, output_max)
// The last line is OutputStageScaleInt32ByFixedPointAndExponent with a non-positive exponent.
// When the output scale is over 2^13 times finer than the inputs', A needs more bits than one
// int32 product holds: A = high * 2^16 + low (low_bits 16), the sum is formed from the two
// halves, and a high half's sum beyond +-2^14 means a sum that saturates the output.
struct QuantizedAddPlan {
  QuantizedType lhs_type, rhs_type, output_type;
  ChannelAxis lhs_axis, rhs_axis;
  // A = round(scale * 2^fractional_bits) per channel (one entry for a per-tensor input): with
  // low_bits 0, A itself; with low_bits 16, A >> 16 here and A's low 16 bits in low_multipliers.
  std::vector<std::int32_t> lhs_multipliers, rhs_multipliers;
  std::vector<std::int32_t> lhs_low_multipliers, rhs_low_multipliers;  // empty for low_bits 0
  int low_bits;
  std::vector<std::int32_t> lhs_zero_points, rhs_zero_points;
  int fractional_bits;
  // QuantizeMultiplier(2^-fractional_bits / output scale); the exponent is at most -8.
  std::int32_t output_multiplier;
  int output_exponent;
  std::int32_t output_zero_point, output_min, output_max;
};

// The plan for out = lhs + rhs (real values) quantized with `output` in `output_type`, clamped to
// [output_min, output_max] (quantized values; the type's range by default, the output zero point
// as output_min for a fused ReLU). The result is within 1 of
// clamp(round((real lhs + real rhs) / output.scale) + output.zero_point): see doc/quantization.md,
// "Adding tensors at different scales", for the bound and the range of scales it covers.
// Throws lowbit::Error naming the argument ("lhs.params[2].scale", "output.zero_point",
// "output_min", ...) for a type whose bits are outside [2, 8], no params, a scale that is not
// finite or is below DBL_MIN (zero, negative, subnormal), a zero point outside its type, an unknown
// axis, clamp bounds outside the output type or in the wrong order, and an output scale so much
// finer than the inputs' that even the two-part alignment could not keep the bound within int32
// ("output.scale": an input step of more than 2^29 output steps may be rejected, of more than 2^30
// always is).
QuantizedAddPlan MakeQuantizedAddPlan(const QuantizedAddInput& lhs, const QuantizedAddInput& rhs,
                                      const QuantizationParams& output,
                                      QuantizedType output_type = QuantizedType::Uint8());
QuantizedAddPlan MakeQuantizedAddPlan(const QuantizedAddInput& lhs, const QuantizedAddInput& rhs,
                                      const QuantizationParams& output, QuantizedType output_type,
                                      std::int32_t output_min, std::int32_t output_max);

// output[r * cols + c] = lhs[r * cols + c] + rhs[r * cols + c] for row-major rows x cols
// matrices, with the plan's arithmetic. Lhs, Rhs and Output are each std::uint8_t or std::int8_t
// and must match the signedness of the plan's types. Throws lowbit::Error, before writing
// anything, for a null pointer with a nonzero size, negative rows or cols, a data type that does
// not match the plan ("lhs"), or a per-axis input whose channel count is not the rows (kRow) or
// the columns (kCol).
template <typename Lhs, typename Rhs, typename Output>
void QuantizedAdd(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, int rows, int cols,
                  Output* output);

// The same for flat buffers of `count` entries: per-tensor plans only.
template <typename Lhs, typename Rhs, typename Output>
void QuantizedAdd(const QuantizedAddPlan& plan, const Lhs* lhs, const Rhs* rhs, std::size_t count,
                  Output* output);

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_QUANTIZED_ADD_H_
