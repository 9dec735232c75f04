// The portable byte and bit-plane packers, compiled without ISA flags (see PackBytesPortable in
// pack.h).
#include "lowbit/internal/pack/pack.h"

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
