// The portable byte packers, compiled without ISA flags (see PackBytesPortable in pack.h).
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

}  // namespace internal
}  // namespace lowbit
