// Block sizes from the cache sizes cpuinfo reports (Goto/BLIS: the rhs micro-panel in L1, the
// packed lhs slice and the accumulator block in L2, the packed rhs in L3 or memory).
#include "lowbit/internal/driver/blocking.h"

#include <cpuinfo.h>

#include <algorithm>
#include <cstdint>

namespace lowbit {
namespace internal {
namespace {

// value rounded down to a multiple of `multiple`, and at least `multiple`.
int FloorTo(std::int64_t value, int multiple) {
  return static_cast<int>(std::max<std::int64_t>(multiple, value / multiple * multiple));
}

}  // namespace

CacheSizes DetectCacheSizes() {
  CacheSizes sizes{32 * 1024, 256 * 1024};
  if (!cpuinfo_initialize()) return sizes;
  const cpuinfo_processor* processor = cpuinfo_get_current_processor();
  if (processor == nullptr) processor = cpuinfo_get_processor(0);
  if (processor == nullptr) return sizes;
  if (processor->cache.l1d != nullptr)
    sizes.l1_bytes = static_cast<int>(processor->cache.l1d->size);
  if (processor->cache.l2 != nullptr) sizes.l2_bytes = static_cast<int>(processor->cache.l2->size);
  return sizes;
}

Blocking ComputeBlocking(const KernelFormat& format, const CacheSizes& caches, int rows, int cols,
                         int depth) {
  // In bits: bit-plane operands take less than a byte a value.
  const int lhs_bits = PackedBits(format.lhs_type);
  const int rhs_bits = PackedBits(format.rhs_type);
  const int group = format.depth_group;
  const std::int64_t l1_bits = std::int64_t{8} * caches.l1_bytes;
  const std::int64_t l2_bits = std::int64_t{8} * caches.l2_bytes;
  const std::int64_t padded_depth = RoundUp(std::max(depth, 1), group);
  // The rhs micro-panel (rhs_cols x kc) takes three quarters of L1; the lhs micro-panel streams
  // through the rest. Equal slices, so that the last one is not a sliver. (With half of L1 and
  // the lhs slice below in half of L2, 2048^3 ran 3 to 5% slower on an Intel Xeon with 48 KiB
  // of L1 and 2 MiB of L2: three slices of depth instead of two.) A tile that L2 keeps up with
  // (KernelFormat::rhs_panel_from_l2) lets the panel take twice L1: fewer slices, each of which
  // costs a pass through the accumulators, and longer runs of the packed rhs read in order. On
  // the Zen 4 host (32 KiB of L1) the AVX-512 VNNI GEMM ran 3% faster at 1024^3 (one slice, not
  // two) and at 2048^3 (one, not three), and 8 x 4096 x 4096 on prepacked weights 13%; the AVX2
  // GEMM 5% at 1024^3 and 2048^3.
  // Slices start at whole lhs chunks, where the lhs has them.
  const int slice_multiple = std::max(group, format.lhs_chunk);
  const std::int64_t panel_bits = format.rhs_panel_from_l2 ? 2 * l1_bits : l1_bits * 3 / 4;
  const int max_depth = FloorTo(panel_bits / (format.rhs_cols * rhs_bits), slice_multiple);
  const std::int64_t slices = (padded_depth + max_depth - 1) / max_depth;
  const int block_depth =
      RoundUp(static_cast<int>((padded_depth + slices - 1) / slices), slice_multiple);
  // The packed lhs slice (mc x kc) takes a quarter of L2, beside the accumulator block and what
  // streams through; the whole-depth packed lhs block of a task stays within 4 x L2, which only
  // very deep GEMMs reach.
  int block_rows = FloorTo(l2_bits / 4 / (block_depth * lhs_bits), format.lhs_rows);
  block_rows =
      std::min(block_rows, FloorTo(4 * l2_bits / (padded_depth * lhs_bits), format.lhs_rows));
  block_rows = std::min(block_rows, RoundUp(std::max(rows, 1), format.lhs_rows));
  // The accumulator block (mc x nc int32) takes a quarter of L2, and at most 128 KiB: on an
  // Intel Xeon with 2 MiB of L2, 512 KiB blocks (at 512^3 and 1024^3) and 256 KiB ones (at 256^3)
  // ran the AMX GEMM up to 14% slower than 128 KiB ones and the AVX-512 VNNI GEMM at 256^3 2 to
  // 5% slower, and 64 KiB ones were no faster (in one process, alternating).
  constexpr std::int64_t kMaxAccumulatorBits = std::int64_t{8} * 128 * 1024;
  int block_cols =
      FloorTo(std::min(l2_bits / 4, kMaxAccumulatorBits) / (block_rows * 32), format.rhs_cols);
  block_cols = std::min(block_cols, RoundUp(std::max(cols, 1), format.rhs_cols));
  // The packed rhs (whole depth) is shared by all tasks; at most 32 x L2 of it at once.
  int rhs_cols = FloorTo(32 * l2_bits / (padded_depth * rhs_bits), format.rhs_cols);
  rhs_cols = std::min(rhs_cols, RoundUp(std::max(cols, 1), format.rhs_cols));
  const int streamed_cols =
      std::min(block_cols, FloorTo(l2_bits / 4 / (padded_depth * rhs_bits), format.rhs_cols));
  return {block_rows, block_cols, block_depth, rhs_cols, streamed_cols};
}

}  // namespace internal
}  // namespace lowbit
