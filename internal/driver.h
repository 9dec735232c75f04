// The boundary between the header templates (output pipelines, instantiated in the caller's
// code) and the compiled library (packing, kernels and offsets, built once per ISA): type-erased
// matrix views in, blocks of final int32 accumulators out.
#ifndef LOWBIT_INTERNAL_DRIVER_H_
#define LOWBIT_INTERNAL_DRIVER_H_

#include <cstdint>
#include <type_traits>

#include "public/context.h"
#include "public/map.h"

namespace lowbit {
namespace internal {

enum class ElementType { kUint8, kInt8, kInt16, kInt32 };

template <typename Scalar>
constexpr ElementType ElementTypeOf();
template <>
constexpr ElementType ElementTypeOf<std::uint8_t>() {
  return ElementType::kUint8;
}
template <>
constexpr ElementType ElementTypeOf<std::int8_t>() {
  return ElementType::kInt8;
}
template <>
constexpr ElementType ElementTypeOf<std::int16_t>() {
  return ElementType::kInt16;
}
template <>
constexpr ElementType ElementTypeOf<std::int32_t>() {
  return ElementType::kInt32;
}

int ElementSize(ElementType type);

struct MatrixView {
  const void* data;
  ElementType type;
  int rows;
  int cols;
  Order order;
  int stride;
};

template <typename Scalar>
MatrixView ViewOf(const MatrixMap<Scalar>& map) {
  return {map.data(),  ElementTypeOf<std::remove_const_t<Scalar>>(),
          map.rows(),  map.cols(),
          map.order(), map.stride()};
}

// rows x cols final accumulators (offsets applied) for result entries starting at
// (row_start, col_start), row-major with `stride`.
struct AccumulatorBlock {
  int row_start;
  int col_start;
  int rows;
  int cols;
  const std::int32_t* data;
  int stride;
};

// Called once per block, possibly from several threads at once on disjoint blocks.
using BlockConsumer = void (*)(const void* closure, const AccumulatorBlock& block);

// Throws lowbit::Error for the first argument that breaks a rule (sizes, strides, null data,
// mismatched dimensions, offset vector lengths, int32 overflow depth, result aliasing inputs).
void ValidateGemmArguments(const Context* context, const MatrixView& lhs, const MatrixView& rhs,
                           const MatrixView& result, const Offsets& lhs_offset,
                           const Offsets& rhs_offset);

// The largest depth for which no (lhs + lhs_offset) * (rhs + rhs_offset) sum can overflow
// int32, over the full value range of the operand types and the given offsets.
std::int64_t LargestSafeDepth(const MatrixView& lhs, const MatrixView& rhs,
                              const Offsets& lhs_offset, const Offsets& rhs_offset);

// Computes acc = (lhs + lhs_offset) * (rhs + rhs_offset) block by block and hands each block to
// `consumer`. The arguments must have passed ValidateGemmArguments.
void RunGemm(Context& context, const MatrixView& lhs, const MatrixView& rhs,
             const Offsets& lhs_offset, const Offsets& rhs_offset, BlockConsumer consumer,
             const void* closure);

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_DRIVER_H_
