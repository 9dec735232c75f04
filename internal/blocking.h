// Cache blocking: how many lhs rows, rhs columns and depth values one block covers, chosen so
// that a packed lhs block stays in L2 and a packed rhs panel in L1 while the kernel runs.
#ifndef LOWBIT_INTERNAL_BLOCKING_H_
#define LOWBIT_INTERNAL_BLOCKING_H_

#include "internal/kernel.h"

namespace lowbit {
namespace internal {

struct Blocking {
  int rows;   // mc, a multiple of the format's lhs_rows
  int cols;   // nc, a multiple of the format's rhs_cols
  int depth;  // kc, a multiple of the format's depth_group
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

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_BLOCKING_H_
