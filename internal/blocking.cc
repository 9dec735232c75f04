// Block sizes from the cache sizes cpuinfo reports (Goto/BLIS: the rhs micro-panel in L1, the
// packed lhs block in L2).
#include "internal/blocking.h"

#include <cpuinfo.h>

#include <algorithm>

namespace lowbit {
namespace internal {

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
  const int element = PackedSize(format.packed_type);
  // An rhs micro-panel (rhs_cols x kc) plus an lhs micro-panel must fit in half of L1.
  int block_depth = caches.l1_bytes / 2 / ((format.lhs_rows + format.rhs_cols) * element);
  block_depth = std::max(format.depth_group, block_depth / format.depth_group * format.depth_group);
  block_depth = std::min(block_depth, RoundUp(std::max(depth, 1), format.depth_group));
  // The packed lhs block (mc x kc) takes half of L2.
  int block_rows = caches.l2_bytes / 2 / (block_depth * element);
  block_rows = std::max(format.lhs_rows, block_rows / format.lhs_rows * format.lhs_rows);
  block_rows = std::min(block_rows, RoundUp(rows, format.lhs_rows));
  // The accumulator block (mc x nc int32) and the packed rhs block share the other half.
  int block_cols = caches.l2_bytes / 2 / (block_rows * 4 + block_depth * element);
  block_cols = std::max(format.rhs_cols, block_cols / format.rhs_cols * format.rhs_cols);
  block_cols = std::min(block_cols, RoundUp(cols, format.rhs_cols));
  return {block_rows, block_cols, block_depth};
}

}  // namespace internal
}  // namespace lowbit
