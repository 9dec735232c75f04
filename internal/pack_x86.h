// The packing routine both x86 kernels use: int16 values in depth pairs (kernel.h's layout with
// depth_group 2), which is what pmaddwd / vpmaddwd multiply. Written with SSE4.1 only, so the
// SSE4.1 and AVX2 kernels share one object file and one set of tests.
#ifndef LOWBIT_INTERNAL_PACK_X86_H_
#define LOWBIT_INTERNAL_PACK_X86_H_

#include <cstdint>

#include "internal/kernel.h"

namespace lowbit {
namespace internal {

// A PackFunction (kernel.h) for int16 values, depth_group 2 and panels of `panel_width` rows;
// panel_width must be even and at most 16. Only call it on a CPU with SSE4.1.
void PackInt16PairsSse41(const MatrixView& source, int panel_width, int start, int count,
                         int depth_start, int depth, void* packed, std::int32_t* sums);

// A PackFunction (kernel.h) for one-byte values of `type` (kUint8 or kInt8), depth_group 4 and
// panels of `panel_width` rows (any width). Only call it on a CPU with SSE4.1.
void PackByteGroupsSse41(const MatrixView& source, PackedType type, int panel_width, int start,
                         int count, int depth_start, int depth, void* packed, std::int32_t* sums);

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_PACK_X86_H_
