// Cache blocking (lowbit/internal/driver/blocking.h): how deep a kernel call's slice of depth runs
// for tiles that keep their rhs micro-panel in L1 and for those that stream it from L2, and the
// cache of the last answer telling such formats apart.
#include "lowbit/internal/driver/blocking.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>

namespace lowbit {
namespace test {
namespace {

using internal::Blocking;
using internal::BlockingCache;
using internal::CacheSizes;
using internal::ComputeBlocking;
using internal::KernelFormat;
using internal::PackedType;

// The AVX-512 VNNI tile's format (8 rows, 32 columns of uint8 rhs), in L1 and from L2.
constexpr KernelFormat kInL1{8, 32, 4, PackedType::kInt8, PackedType::kUint8};
constexpr KernelFormat kFromL2 = internal::RhsPanelFromL2(kInL1);
// The Zen 4 host's caches, and an Intel Xeon's.
constexpr CacheSizes kZen4{32 * 1024, 1024 * 1024};
constexpr CacheSizes kXeon{48 * 1024, 2 * 1024 * 1024};

// Bytes of the rhs micro-panel a kernel call reads: rhs_cols columns of the slice's depth.
std::int64_t RhsPanelBytes(const KernelFormat& format, const Blocking& blocking) {
  return static_cast<std::int64_t>(
      internal::PackedBytes(format.rhs_type, std::int64_t{format.rhs_cols} * blocking.depth));
}

TEST(BlockingTest, SlicesKeepTheRhsPanelInThreeQuartersOfL1OrTwiceL1FromL2) {
  for (const CacheSizes& caches : {kZen4, kXeon}) {
    for (int depth = 1; depth <= 20000; depth += depth < 64 ? 1 : 37) {
      const Blocking in_l1 = ComputeBlocking(kInL1, caches, 256, 256, depth);
      const Blocking from_l2 = ComputeBlocking(kFromL2, caches, 256, 256, depth);
      EXPECT_LE(RhsPanelBytes(kInL1, in_l1), caches.l1_bytes * 3 / 4) << "depth " << depth;
      EXPECT_LE(RhsPanelBytes(kFromL2, from_l2), 2 * caches.l1_bytes) << "depth " << depth;
      // Equal slices but for their rounding to whole depth groups: the last one is no sliver.
      for (const Blocking& blocking : {in_l1, from_l2}) {
        const int group = kInL1.depth_group;
        EXPECT_EQ(blocking.depth % group, 0) << "depth " << depth;
        const int padded = (depth + group - 1) / group * group;
        const int slices = (padded + blocking.depth - 1) / blocking.depth;
        const int last = padded - (slices - 1) * blocking.depth;
        EXPECT_GE(last + slices * group, blocking.depth) << "depth " << depth;
      }
      EXPECT_GE(from_l2.depth, in_l1.depth) << "depth " << depth;
    }
  }
  // 1024 deep on the Zen 4 host: two slices of 512 in L1, one of 1024 from L2; 2048 deep three
  // slices of 684, and one of 2048.
  EXPECT_EQ(ComputeBlocking(kInL1, kZen4, 1024, 1024, 1024).depth, 512);
  EXPECT_EQ(ComputeBlocking(kFromL2, kZen4, 1024, 1024, 1024).depth, 1024);
  EXPECT_EQ(ComputeBlocking(kInL1, kZen4, 2048, 2048, 2048).depth, 684);
  EXPECT_EQ(ComputeBlocking(kFromL2, kZen4, 2048, 2048, 2048).depth, 2048);
}

TEST(BlockingTest, TheCacheTellsApartFormatsThatBlockDifferently) {
  BlockingCache cache;
  const Blocking in_l1 = ComputeBlocking(kInL1, kZen4, 1024, 1024, 1024);
  const Blocking from_l2 = ComputeBlocking(kFromL2, kZen4, 1024, 1024, 1024);
  ASSERT_NE(in_l1.depth, from_l2.depth);
  EXPECT_EQ(cache.For(kInL1, kZen4, 1024, 1024, 1024).depth, in_l1.depth);
  EXPECT_EQ(cache.For(kFromL2, kZen4, 1024, 1024, 1024).depth, from_l2.depth);
  EXPECT_EQ(cache.For(kInL1, kZen4, 1024, 1024, 1024).depth, in_l1.depth);
  // Lhs chunks (the AMX layout) start the slices at multiples of the chunk: 1000 deep, two slices
  // of 512 where the chunkless format has two of 500.
  KernelFormat chunked = kInL1;
  chunked.lhs_chunk = 64;
  EXPECT_EQ(cache.For(kInL1, kZen4, 1024, 1024, 1000).depth, 500);
  EXPECT_EQ(cache.For(chunked, kZen4, 1024, 1024, 1000).depth, 512);
}

}  // namespace
}  // namespace test
}  // namespace lowbit
