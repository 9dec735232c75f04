// ThreadBackoff's policy (internal/thread_backoff.h): after a GEMM whose threads were mostly
// kept waiting, the GEMMs after it run on one thread for a stretch of time, longer each time in
// a row, and threads come back as soon as they go well again.
#include "internal/thread_backoff.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace lowbit {
namespace internal {
namespace {

// How many single-threaded GEMMs of `nanoseconds` each run before threads are allowed again.
int SingleThreadedBeforeThreads(ThreadBackoff& backoff, std::int64_t nanoseconds) {
  int single = 0;
  while (!backoff.AllowsThreads()) {
    backoff.RecordSingleThreaded(nanoseconds);
    ++single;
  }
  return single;
}

TEST(ThreadBackoffTest, ThreadsUntilTheyGoBadly) {
  ThreadBackoff backoff;
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(backoff.AllowsThreads());
    backoff.Record(1.9, 1000);
  }
  backoff.Record(ThreadBackoff::kMinSpeedup, 1000);
  EXPECT_TRUE(backoff.AllowsThreads());
}

// The stretch is time: 4, 8, ... 64 times the losing GEMM's wall time, however long the
// single-threaded GEMMs that fill it.
TEST(ThreadBackoffTest, EachBadRunInARowDoublesTheSingleThreadedStretch) {
  ThreadBackoff backoff;
  const int expected[] = {4, 8, 16, 32, 64, 64, 64};
  for (int stretch : expected) {
    backoff.Record(0.4, 1000);
    EXPECT_EQ(SingleThreadedBeforeThreads(backoff, 1000), stretch);
  }
  backoff.Record(0.4, 3000);
  EXPECT_EQ(SingleThreadedBeforeThreads(backoff, 100), 64 * 30);
  backoff.Record(0.4, 3000);
  EXPECT_EQ(SingleThreadedBeforeThreads(backoff, 1000000), 1);
}

TEST(ThreadBackoffTest, AGoodRunStartsTheStretchesOver) {
  ThreadBackoff backoff;
  for (int i = 0; i < 4; ++i) {
    backoff.Record(0.1, 1000);
    SingleThreadedBeforeThreads(backoff, 1000);
  }
  backoff.Record(1.8, 1000);
  EXPECT_TRUE(backoff.AllowsThreads());
  backoff.Record(0.1, 1000);
  EXPECT_EQ(SingleThreadedBeforeThreads(backoff, 1000), ThreadBackoff::kFirstStretch);
}

TEST(ThreadBackoffTest, DisabledAlwaysAllowsThreads) {
  ThreadBackoff backoff(false);
  for (int i = 0; i < 5; ++i) {
    backoff.Record(0.0, 1000);
    EXPECT_TRUE(backoff.AllowsThreads());
  }
}

TEST(ThreadBackoffTest, ThresholdIsTheMinimumSpeedup) {
  ThreadBackoff backoff;
  backoff.Record(ThreadBackoff::kMinSpeedup - 0.01, 1);
  EXPECT_FALSE(backoff.AllowsThreads());
  backoff.RecordSingleThreaded(ThreadBackoff::kFirstStretch - 1);
  EXPECT_FALSE(backoff.AllowsThreads());
  backoff.RecordSingleThreaded(1);
  EXPECT_TRUE(backoff.AllowsThreads());
}

}  // namespace
}  // namespace internal
}  // namespace lowbit
