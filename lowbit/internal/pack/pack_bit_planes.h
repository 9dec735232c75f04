// What the bit-plane packers (kBitPlaneGroup's layout) share: where each packed row's words go,
// and the walk over sources whose rows hold their depth values adjacent (a row-major lhs, a
// column-major rhs), 32 values of a row to a word of each plane. Include it only from a file
// compiled for the ISA its `Planes` uses.
#ifndef LOWBIT_INTERNAL_PACK_PACK_BIT_PLANES_H_
#define LOWBIT_INTERNAL_PACK_PACK_BIT_PLANES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "lowbit/internal/kernel/kernel.h"

namespace lowbit {
namespace internal {

// The words of a packed block: word (group, plane) of packed row `row` is
// Row(row)[group * planes * panel_width + plane * panel_width].
struct BitPlaneRows {
  std::uint32_t* out;
  int planes;
  int panel_width;
  int padded_depth;

  // The block for `count` rows of `depth` values at `packed`, zeroed, so that rows past `count`
  // in the last panel and depth past `depth` stay zero.
  static BitPlaneRows Cleared(PackedType type, int panel_width, int count, int depth,
                              void* packed) {
    const int padded_depth = RoundUp(depth, kBitPlaneGroup);
    std::memset(
        packed, 0,
        PackedBytes(type, static_cast<std::int64_t>(RoundUp(count, panel_width)) * padded_depth));
    return {static_cast<std::uint32_t*>(packed), BitPlanes(type), panel_width, padded_depth};
  }

  std::uint32_t* Row(int row) const {
    const int panel = row / panel_width;
    return out +
           static_cast<std::ptrdiff_t>(panel) * panel_width * planes *
               (padded_depth / kBitPlaneGroup) +
           row % panel_width;
  }
};

// Packs rows whose depth values are adjacent in `source` (source.order kRowMajor) into `rows`.
// `planes` provides Load(32 bytes), the values minus the packed type's shift, and Word(values,
// plane), bit `plane` of each as one word.
template <typename Planes>
void PackBitPlanesAlongDepth(const MatrixView& source, const BitPlaneRows& rows,
                             const Planes& planes, int start, int count, int depth_start, int depth,
                             std::int32_t* sums) {
  const int group_stride = rows.planes * rows.panel_width;
  for (int row = 0; row < count; ++row) {
    const auto* values = static_cast<const std::uint8_t*>(source.data) +
                         (start + row) * static_cast<std::ptrdiff_t>(source.stride) + depth_start;
    std::uint32_t* out = rows.Row(row);
    std::int32_t sum = 0;
    for (int group = 0; group * kBitPlaneGroup < depth; ++group) {
      const int valid = std::min(kBitPlaneGroup, depth - group * kBitPlaneGroup);
      const std::uint8_t* group_values = values + group * kBitPlaneGroup;
      // The last, partial group is read from a copy: the bytes past the source may not be.
      alignas(32) std::uint8_t buffer[kBitPlaneGroup] = {};
      if (valid < kBitPlaneGroup) {
        std::memcpy(buffer, group_values, valid);
        group_values = buffer;
      }
      const auto packed_values = planes.Load(group_values);
      const std::uint32_t valid_bits = valid == kBitPlaneGroup ? ~0u : (1u << valid) - 1;
      for (int plane = 0; plane < rows.planes; ++plane) {
        const std::uint32_t word = planes.Word(packed_values, plane) & valid_bits;
        out[group * group_stride + plane * rows.panel_width] = word;
        sum += __builtin_popcount(word) << plane;
      }
    }
    sums[row] += sum;
  }
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_PACK_PACK_BIT_PLANES_H_
