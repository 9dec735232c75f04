// Cache blocking: how much depth one kernel call covers, how many lhs rows one task packs and
// how many result columns one accumulator block holds, chosen so that the rhs micro-panel stays
// in L1 and the packed lhs slice and the accumulator block in L2 while the kernel runs.
#ifndef LOWBIT_INTERNAL_DRIVER_BLOCKING_H_
#define LOWBIT_INTERNAL_DRIVER_BLOCKING_H_

#include "lowbit/internal/kernel/kernel.h"

namespace lowbit {
namespace internal {

struct Blocking {
  int rows;      // mc: the most lhs rows one task packs, a multiple of the format's lhs_rows
  int cols;      // nc: columns of one accumulator block, a multiple of the format's rhs_cols
  int depth;     // kc: depth of one kernel call, a multiple of the format's depth_group
  int rhs_cols;  // columns of rhs packed at once (whole depth), a multiple of rhs_cols
  // nc when a task packs the rhs columns it needs itself, block by block just before use
  // (when no other task needs them): the packed rhs block (whole depth) then stays in L2.
  int streamed_cols;
};

struct CacheSizes {
  int l1_bytes;
  int l2_bytes;
};

// The data caches of the core we run on (cpuinfo), with conservative defaults where it
// reports none.
CacheSizes DetectCacheSizes();

Blocking ComputeBlocking(const KernelFormat& format, const CacheSizes& caches, int rows, int cols,
                         int depth);

// ComputeBlocking, remembering its last answer: a program calls GEMMs of the same few shapes over
// and over, and the divisions of ComputeBlocking took 3% of a 64 x 64 x 64 GEMM.
class BlockingCache {
 public:
  Blocking For(const KernelFormat& format, const CacheSizes& caches, int rows, int cols,
               int depth) {
    const Key key{format, caches, rows, cols, depth};
    if (!valid_ || !(key == key_)) {
      blocking_ = ComputeBlocking(format, caches, rows, cols, depth);
      key_ = key;
      valid_ = true;
    }
    return blocking_;
  }

 private:
  struct Key {
    KernelFormat format;
    CacheSizes caches;
    int rows, cols, depth;
    bool operator==(const Key& other) const {
      return format.lhs_rows == other.format.lhs_rows && format.rhs_cols == other.format.rhs_cols &&
             format.depth_group == other.format.depth_group &&
             format.lhs_type == other.format.lhs_type && format.rhs_type == other.format.rhs_type &&
             format.lhs_chunk == other.format.lhs_chunk &&
             format.rhs_panel_from_l2 == other.format.rhs_panel_from_l2 &&
             caches.l1_bytes == other.caches.l1_bytes && caches.l2_bytes == other.caches.l2_bytes &&
             rows == other.rows && cols == other.cols && depth == other.depth;
    }
  };
  bool valid_ = false;
  Key key_{};
  Blocking blocking_{};
};

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_DRIVER_BLOCKING_H_
