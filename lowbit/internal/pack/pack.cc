// The portable byte and bit-plane packers, compiled without ISA flags (see PackBytesPortable in
// pack.h).
#include "lowbit/internal/pack/pack.h"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace lowbit {
namespace internal {

void PackBytesPortable(const MatrixView& source, PackedType type, const KernelFormat& format,
                       int panel_width, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  if (type == PackedType::kUint8) {
    PackWithFormat<std::uint8_t>(source, format, panel_width, start, count, depth_start, depth,
                                 packed, sums);
  } else {
    PackWithFormat<std::int8_t>(source, format, panel_width, start, count, depth_start, depth,
                                packed, sums);
  }
}

void PackNibblePairs(PackByteGroupsFunction pack, PackedType byte_type, int panel_width,
                     int depth_group, int step_bytes, const MatrixView& source, int start,
                     int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  const int half = step_bytes / 2;
  const int bias = byte_type == PackedType::kInt8 ? 8 : 0;
  std::vector<std::uint8_t> panel(static_cast<std::size_t>(panel_width) *
                                  RoundUp(depth, depth_group));
  auto* out = static_cast<std::uint8_t*>(packed);
  for (int first = 0; first < count; first += panel_width) {
    pack(source, byte_type, panel_width, start + first, std::min(panel_width, count - first),
         depth_start, depth, panel.data(), sums + first);
    for (std::size_t step = 0; step < panel.size(); step += step_bytes) {
      for (int j = 0; j < half; ++j) {
        *out++ = static_cast<std::uint8_t>(((panel[step + j] + bias) & 0x0f) |
                                           (panel[step + half + j] + bias) << 4);
      }
    }
  }
}

namespace {

template <typename Packed, typename Source>
void PackRowChunks(const MatrixView& source, int panel_width, int depth_group, int chunk, int start,
                   int count, int depth_start, int depth, Packed* out, std::int32_t* sums) {
  const int shift = PackedValueShift(kPackedTypeOf<Packed>, source);
  const int padded_depth = RoundUp(depth, depth_group);
  for (int panel_start = 0; panel_start < count; panel_start += panel_width) {
    for (int chunk_start = 0; chunk_start < padded_depth; chunk_start += chunk) {
      const int chunk_end = std::min(chunk_start + chunk, padded_depth);
      for (int i = 0; i < panel_width; ++i) {
        const int row = panel_start + i;
        for (int d = chunk_start; d < chunk_end; ++d) {
          std::int32_t value = 0;
          if (row < count && d < depth) {
            value = LoadSource<Source>(source, start + row, depth_start + d) - shift;
            sums[row] += value;
          }
          *out++ = static_cast<Packed>(value);
        }
      }
    }
  }
}

}  // namespace

void PackRowChunksPortable(const MatrixView& source, PackedType type, const KernelFormat& format,
                           int panel_width, int start, int count, int depth_start, int depth,
                           void* packed, std::int32_t* sums) {
  const auto run = [&](auto packed_type, auto source_type) {
    using Packed = decltype(packed_type);
    PackRowChunks<Packed, decltype(source_type)>(source, panel_width, format.depth_group,
                                                 format.lhs_chunk, start, count, depth_start, depth,
                                                 static_cast<Packed*>(packed), sums);
  };
  const bool uint8_source = source.type == ElementType::kUint8;
  if (type == PackedType::kUint8) {
    uint8_source ? run(std::uint8_t(), std::uint8_t()) : run(std::uint8_t(), std::int8_t());
  } else {
    uint8_source ? run(std::int8_t(), std::uint8_t()) : run(std::int8_t(), std::int8_t());
  }
}

namespace {

template <typename Source>
void PackBitPlanesFrom(const MatrixView& source, PackedType type, int panel_width, int start,
                       int count, int depth_start, int depth, std::uint32_t* out,
                       std::int32_t* sums) {
  const int planes = BitPlanes(type);
  const int shift = PackedValueShift(type, source);
  const int padded_depth = RoundUp(depth, kBitPlaneGroup);
  for (int panel_start = 0; panel_start < count; panel_start += panel_width) {
    for (int group = 0; group < padded_depth; group += kBitPlaneGroup) {
      for (int plane = 0; plane < planes; ++plane) {
        for (int i = 0; i < panel_width; ++i) {
          const int row = panel_start + i;
          std::uint32_t word = 0;
          for (int b = 0; b < kBitPlaneGroup && row < count && group + b < depth; ++b) {
            const int value =
                LoadSource<Source>(source, start + row, depth_start + group + b) - shift;
            word |= static_cast<std::uint32_t>((value >> plane) & 1) << b;
            if (plane == 0) sums[row] += value;
          }
          *out++ = word;
        }
      }
    }
  }
}

}  // namespace

void PackBitPlanesPortable(const MatrixView& source, PackedType type, int panel_width, int start,
                           int count, int depth_start, int depth, void* packed,
                           std::int32_t* sums) {
  auto* out = static_cast<std::uint32_t*>(packed);
  if (source.type == ElementType::kUint8) {
    PackBitPlanesFrom<std::uint8_t>(source, type, panel_width, start, count, depth_start, depth,
                                    out, sums);
  } else {
    PackBitPlanesFrom<std::int8_t>(source, type, panel_width, start, count, depth_start, depth, out,
                                   sums);
  }
}

}  // namespace internal
}  // namespace lowbit
