// The x86 packing routines: int16 values in depth pairs or groups of 4 (kernel.h's layout with
// depth_group 2 or 4), which is what pmaddwd / vpmaddwd multiply, and byte groups, whole or
// split into nibbles, for the pmaddubsw kernels. The SSE4.1 routines (pack_sse41.cc) handle every
// layout; the AVX2 ones (pack_avx2.cc) take the common case twice as wide and hand the rest to
// them.
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

// The same layout as PackInt16PairsSse41. Only call it on a CPU with AVX2.
void PackInt16PairsAvx2(const MatrixView& source, int panel_width, int start, int count,
                        int depth_start, int depth, void* packed, std::int32_t* sums);

// A PackFunction (kernel.h) for int16 values, depth_group 4 and panels of `panel_width` rows, an
// even number at most 16. Only call it on a CPU with SSE4.1.
void PackInt16QuadsSse41(const MatrixView& source, int panel_width, int start, int count,
                         int depth_start, int depth, void* packed, std::int32_t* sums);

// The same layout as PackInt16QuadsSse41, row-major sources in AVX2 steps. Only call it on a CPU
// with AVX2.
void PackInt16QuadsAvx2(const MatrixView& source, int panel_width, int start, int count,
                        int depth_start, int depth, void* packed, std::int32_t* sums);

// A PackFunction (kernel.h) for one-byte values of `type` (kUint8 or kInt8), depth_group 4 and
// panels of `panel_width` rows (any width). Only call it on a CPU with SSE4.1.
void PackByteGroupsSse41(const MatrixView& source, PackedType type, int panel_width, int start,
                         int count, int depth_start, int depth, void* packed, std::int32_t* sums);

// The same layout as PackByteGroupsSse41. Only call it on a CPU with AVX2.
void PackByteGroupsAvx2(const MatrixView& source, PackedType type, int panel_width, int start,
                        int count, int depth_start, int depth, void* packed, std::int32_t* sums);

// A PackFunction (kernel.h) for PackedType::kNibbles (kernel_nibbles_x86.h's layout), depth_group
// 4 and panels of `panel_width` rows, an even number. Only call it on a CPU with SSE4.1.
void PackNibbleGroupsSse41(const MatrixView& source, int panel_width, int start, int count,
                           int depth_start, int depth, void* packed, std::int32_t* sums);

// The same layout as PackNibbleGroupsSse41. Only call it on a CPU with AVX2.
void PackNibbleGroupsAvx2(const MatrixView& source, int panel_width, int start, int count,
                          int depth_start, int depth, void* packed, std::int32_t* sums);

// The byte-group packers, one signature.
using PackByteGroupsFunction = void (*)(const MatrixView& source, PackedType type, int panel_width,
                                        int start, int count, int depth_start, int depth,
                                        void* packed, std::int32_t* sums);

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_PACK_X86_H_
