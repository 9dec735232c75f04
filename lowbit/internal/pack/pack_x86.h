// The x86 packing routines: int16 values in depth pairs or groups of 4 (kernel.h's layout with
// depth_group 2 or 4), which is what pmaddwd / vpmaddwd multiply, and byte groups, whole or
// split into nibbles, for the pmaddubsw and vpdpbusd kernels. The SSE4.1 routines
// (pack_sse41.cc) handle every layout; the AVX2 ones (pack_avx2.cc) take the common case twice as
// wide and hand the rest to them, and the AVX-512 one (pack_avx512.cc) wide byte-group panels.
#ifndef LOWBIT_INTERNAL_PACK_PACK_X86_H_
#define LOWBIT_INTERNAL_PACK_PACK_X86_H_

#include <cstddef>
#include <cstdint>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack.h"

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

// The same layout as PackByteGroupsSse41, kUint8 panels of 16 or 32 rows of a row-major source in
// AVX-512 steps of 64 depth values (the rest as PackByteGroupsAvx2 packs it). Only call it on a
// CPU with AVX-512 F, BW and VNNI and AVX2.
void PackByteGroupsAvx512(const MatrixView& source, PackedType type, int panel_width, int start,
                          int count, int depth_start, int depth, void* packed, std::int32_t* sums);

// PackByteGroupsAvx512 checking the values against a declared range as it reads them: each value
// plus range->bias ORed into range->bits (RangeBits, driver.h), with no pass of its own over the
// lines. The same CPUs.
void PackByteGroupsCheckingAvx512(const MatrixView& source, PackedType type, int panel_width,
                                  int start, int count, int depth_start, int depth, void* packed,
                                  std::int32_t* sums, RangeBits* range);

// PackByteGroupsAvx512's layout for kUint8 panels of 16 or 32 rows and kInt8 panels of 8, of
// lines along the depth requantized as they are read (kernel.h, RequantizingPackFunction). The
// same CPUs.
void PackByteGroupsRequantizingAvx512(const MatrixView& source,
                                      const PackRequantization& requantization, PackedType type,
                                      int panel_width, int start, int count, int depth,
                                      void* packed, std::int32_t* sums);

// A PackFunction (kernel.h) for bit planes (`type` kOneBitPlane or kTwoBitPlanes, kBitPlaneGroup's
// layout) in panels of `panel_width` rows. Only call it on a CPU with AVX2.
void PackBitPlanesAvx2(const MatrixView& source, PackedType type, int panel_width, int start,
                       int count, int depth_start, int depth, void* packed, std::int32_t* sums);

// PackBitPlanesAvx2 with AVX-512 for sources whose lines run along the depth (kRowMajor), 64
// values a step. Only call it on a CPU with AVX-512 F and BW.
void PackBitPlanesAvx512(const MatrixView& source, PackedType type, int panel_width, int start,
                         int count, int depth_start, int depth, void* packed, std::int32_t* sums);

// Its layout of lines along the depth requantized as they are read (kernel.h,
// RequantizingPackFunction). The same CPUs.
void PackBitPlanesRequantizingAvx512(const MatrixView& source,
                                     const PackRequantization& requantization, PackedType type,
                                     int panel_width, int start, int count, int depth, void* packed,
                                     std::int32_t* sums);

// The walk the vector packers share. `steps(rows_base, stepped_depth, panels_out, panels_sums)`
// packs the whole steps of `step_panels` adjacent whole panels of a depth-contiguous source
// (`stepped`), and their depth tail too where `steps_take_tail` (stepped_depth is then the
// depth); `rest(first_row, rows, depth_start, depth, out, sums)`, a narrower packer of the same
// layout, packs each of those panels' depth tails otherwise and every other panel. The tail's
// groups follow the steps' in a panel: stepped_depth / depth_group groups of panel_width rows in.
template <typename Packed, typename Steps, typename Rest>
void PackWholePanelsInSteps(const MatrixView& source, bool stepped, int panel_width, int start,
                            int count, int depth_start, int depth, int step, int depth_group,
                            Packed* out, std::int32_t* sums, Steps steps, Rest rest,
                            int step_panels = 1, bool steps_take_tail = false) {
  const int step_rows = step_panels * panel_width;
  const int whole_steps = stepped && source.order == Order::kRowMajor ? count / step_rows : 0;
  const int stepped_depth = steps_take_tail ? depth : depth / step * step;
  const int padded_depth = (depth + depth_group - 1) / depth_group * depth_group;
  const std::ptrdiff_t panel_size = static_cast<std::ptrdiff_t>(panel_width) * padded_depth;
  const auto* data = static_cast<const std::uint8_t*>(source.data);
  for (int index = 0; index < whole_steps * step_panels; index += step_panels) {
    const int first_row = start + index * panel_width;
    Packed* panels_out = out + index * panel_size;
    std::int32_t* panels_sums = sums + index * panel_width;
    steps(data + static_cast<std::ptrdiff_t>(first_row) * source.stride + depth_start,
          stepped_depth, panels_out, panels_sums);
    for (int panel = 0; panel < step_panels && stepped_depth < depth; ++panel) {
      rest(first_row + panel * panel_width, panel_width, depth_start + stepped_depth,
           depth - stepped_depth, panels_out + panel * panel_size + stepped_depth * panel_width,
           panels_sums + panel * panel_width);
    }
  }
  const int done = whole_steps * step_rows;
  if (done < count) {
    rest(start + done, count - done, depth_start, depth,
         out + static_cast<std::ptrdiff_t>(whole_steps) * step_panels * panel_size, sums + done);
  }
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_PACK_PACK_X86_H_
