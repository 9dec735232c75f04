// The kernel-format vocabulary every micro-kernel implements, and the packed-block layout its
// packing routine produces. One KernelImplementation per ISA file (kernel_<isa>.cc).
#ifndef LOWBIT_INTERNAL_KERNEL_H_
#define LOWBIT_INTERNAL_KERNEL_H_

#include <cstdint>

#include "internal/driver.h"
#include "public/context.h"

namespace lowbit {
namespace internal {

// How a packed operand stores each value. kInt8 stores uint8 sources as value - 128 so that
// kernels multiply signed bytes; the driver adds the 128 back through the offsets.
enum class PackedType { kInt16, kInt8 };

inline int PackedSize(PackedType type) { return type == PackedType::kInt16 ? 2 : 1; }

// What packing subtracts from each source value of this element type.
inline int PackedValueShift(PackedType packed, ElementType source) {
  return packed == PackedType::kInt8 && source == ElementType::kUint8 ? 128 : 0;
}

// The packed type a C++ element type stores.
template <typename Packed>
constexpr PackedType kPackedTypeOf = sizeof(Packed) == 2 ? PackedType::kInt16 : PackedType::kInt8;

// A register tile of lhs_rows x rhs_cols accumulators, consuming depth in groups of
// depth_group values, from operands packed as lhs_type and rhs_type.
struct KernelFormat {
  int lhs_rows;
  int rhs_cols;
  int depth_group;
  PackedType lhs_type;
  PackedType rhs_type;
};

// A packed block of `count` rows (lhs rows, or rhs columns) by `depth` holds
// ceil(count / panel_width) panels, panel_width being lhs_rows or rhs_cols. A panel holds
// padded_depth = round_up(depth, depth_group) values per row, as consecutive groups: for each
// group g, for each row i of the panel, the depth_group values (i, g * depth_group + j).
// Rows past `count` and depth past `depth` are zero, so they add nothing to any product.
//
// A pack function reads `source` rows [start, start + count) and columns
// [depth_start, depth_start + depth) (for the rhs the driver passes the transposed view), writes
// the packed block, and adds each row's sum of packed values to sums[0 .. count).
using PackFunction = void (*)(const MatrixView& source, int start, int count, int depth_start,
                              int depth, void* packed, std::int32_t* sums);

// acc[i * acc_stride + j] (+)= sum over d of lhs_panel(i, d) * rhs_panel(j, d), for rows
// i < `rows` (1 .. lhs_rows) of the lhs_rows x rhs_cols tile, in wrapping int32 arithmetic.
// Stores when `accumulate` is false. Rows from `rows` on may be written too: the accumulator
// block always has room for whole tiles.
using MicroKernelFunction = void (*)(const void* lhs_panel, const void* rhs_panel, int padded_depth,
                                     int rows, std::int32_t* acc, int acc_stride, bool accumulate);

struct KernelImplementation {
  Kernel kernel;
  KernelFormat format;
  PackFunction pack_lhs;
  PackFunction pack_rhs;
  MicroKernelFunction micro_kernel;
};

const KernelImplementation& ReferenceKernel();
#if defined(__x86_64__)
// Call only when cpuinfo reports SSE4.1 (AVX2): their code uses those instructions.
const KernelImplementation& Sse41Kernel();
const KernelImplementation& Avx2Kernel();
// AVX2 with the rhs packed as int8: the one PrepackedRhs uses.
const KernelImplementation& Avx2Int8RhsKernel();
#endif
#if defined(__aarch64__)
const KernelImplementation& NeonKernel();
#endif

// The implementation for a resolved (non-kAuto) kernel.
const KernelImplementation& GetKernelImplementation(Kernel kernel);
// The implementation that packs prepacked weights (PrepackedRhs) for `kernel` and multiplies
// with them: the same, or one whose rhs layout suits an operand read from memory on every call.
const KernelImplementation& GetPrepackedRhsKernelImplementation(Kernel kernel);

inline int RoundUp(int value, int multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_KERNEL_H_
