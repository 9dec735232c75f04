// The portable packing routines, generic over the panel width and packed type: the reference
// kernel's packer, and the fallback any ISA packer is tested against.
#ifndef LOWBIT_INTERNAL_PACK_PACK_H_
#define LOWBIT_INTERNAL_PACK_PACK_H_

#include <cstdint>

#include "lowbit/internal/kernel/kernel.h"

namespace lowbit {
namespace internal {

template <typename Source>
inline std::int32_t LoadSource(const MatrixView& source, int row, int col) {
  const auto* data = static_cast<const Source*>(source.data);
  return source.order == Order::kRowMajor
             ? data[static_cast<std::ptrdiff_t>(row) * source.stride + col]
             : data[row + static_cast<std::ptrdiff_t>(col) * source.stride];
}

template <typename Packed, typename Source>
void PackPanels(const MatrixView& source, int panel_width, int depth_group, int value_shift,
                int start, int count, int depth_start, int depth, Packed* packed,
                std::int32_t* sums) {
  const int padded_depth = RoundUp(depth, depth_group);
  for (int panel_start = 0; panel_start < count; panel_start += panel_width) {
    for (int group = 0; group < padded_depth; group += depth_group) {
      for (int i = 0; i < panel_width; ++i) {
        const int row = panel_start + i;
        for (int j = 0; j < depth_group; ++j) {
          const int d = group + j;
          std::int32_t value = 0;
          if (row < count && d < depth) {
            value = LoadSource<Source>(source, start + row, depth_start + d) - value_shift;
            sums[row] += value;
          }
          *packed++ = static_cast<Packed>(value);
        }
      }
    }
  }
}

// Packs with the layout of `format` for a panel of `panel_width` rows.
template <typename Packed>
void PackWithFormat(const MatrixView& source, const KernelFormat& format, int panel_width,
                    int start, int count, int depth_start, int depth, void* packed,
                    std::int32_t* sums) {
  const int shift = PackedValueShift(kPackedTypeOf<Packed>, source);
  auto* out = static_cast<Packed*>(packed);
  if (source.type == ElementType::kUint8) {
    PackPanels<Packed, std::uint8_t>(source, panel_width, format.depth_group, shift, start, count,
                                     depth_start, depth, out, sums);
  } else {
    PackPanels<Packed, std::int8_t>(source, panel_width, format.depth_group, shift, start, count,
                                    depth_start, depth, out, sums);
  }
}

// The lhs layout of a format with lhs_chunk (kernel.h): each panel of `panel_width` rows holds
// padded_depth = round_up(depth, depth_group) values per row in chunks of `chunk` values, the
// last one what is left: for each chunk, for each row i of the panel, the chunk's values of row
// i. Rows past `count` and depth past `depth` are zero. One-byte packed types only (kInt8,
// kUint8): the packer the AMX kernel's is tested against.
void PackRowChunksPortable(const MatrixView& source, PackedType type, const KernelFormat& format,
                           int panel_width, int start, int count, int depth_start, int depth,
                           void* packed, std::int32_t* sums);

// PackWithFormat for one-byte packed types (kInt8, kUint8), compiled once without ISA flags:
// the ISA files call this rather than instantiate the template themselves, which would leave
// the linker a copy built with their instruction set to pick for every caller.
void PackBytesPortable(const MatrixView& source, PackedType type, const KernelFormat& format,
                       int panel_width, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums);

// A PackFunction (kernel.h) for bit planes (`type` kOneBitPlane or kTwoBitPlanes; kBitPlaneGroup's
// layout) of values that fit them, in panels of `panel_width` rows: the packer the ISA ones are
// tested against, and NEON's.
void PackBitPlanesPortable(const MatrixView& source, PackedType type, int panel_width, int start,
                           int count, int depth_start, int depth, void* packed, std::int32_t* sums);

// The byte-group packers (pack_x86.h, and the NEON 4-bit weights' portable one), one signature.
using PackByteGroupsFunction = void (*)(const MatrixView& source, PackedType type, int panel_width,
                                        int start, int count, int depth_start, int depth,
                                        void* packed, std::int32_t* sums);

// A PackFunction's work for weights of at most 4 bits stored two to a byte (kUint4Pairs,
// kInt4Pairs): `pack` packs each panel of `panel_width` rows as byte groups of `byte_type` (kUint8
// or kInt8) into a buffer of the depth rounded up to `depth_group`, the layout's group (a multiple
// of the packer's own: the bytes past those it writes stay zero, the layout's padding), and each
// step of `step_bytes` there is folded into half as many, byte j of its first half into the low
// nibble of byte j and of its second half into the high nibble, kInt8 values plus 8. Only
// prepacking calls it, once per set of weights.
void PackNibblePairs(PackByteGroupsFunction pack, PackedType byte_type, int panel_width,
                     int depth_group, int step_bytes, const MatrixView& source, int start,
                     int count, int depth_start, int depth, void* packed, std::int32_t* sums);

#if defined(__aarch64__)
// The same for kInt8, with NEON where each row's depth values are contiguous and the depth group
// is 4, 8 or 16. In kernel_neon.cc, compiled without extension flags, so that the dot-product
// kernel's file calls it rather than compile a packer of its own with +dotprod.
void PackInt8Neon(const MatrixView& source, const KernelFormat& format, int panel_width, int start,
                  int count, int depth_start, int depth, void* packed, std::int32_t* sums);
#endif

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_PACK_PACK_H_
