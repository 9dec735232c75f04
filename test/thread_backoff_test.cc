// ThreadBackoff's policy (internal/thread_backoff.h): after a GEMM whose threads were mostly
// kept waiting, the next ones run on one thread, more of them each time in a row, and threads
// come back as soon as they go well again.
#include "internal/thread_backoff.h"

#include <gtest/gtest.h>

namespace lowbit {
namespace internal {
namespace {

// How many of the next GEMMs run on one thread before threads are allowed again.
int SingleThreadedBeforeThreads(ThreadBackoff& backoff) {
  int single = 0;
  while (!backoff.AllowsThreads()) ++single;
  return single;
}

TEST(ThreadBackoffTest, ThreadsUntilTheyGoBadly) {
  ThreadBackoff backoff;
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(backoff.AllowsThreads());
    backoff.Record(1.9);
  }
  backoff.Record(ThreadBackoff::kMinSpeedup);
  EXPECT_TRUE(backoff.AllowsThreads());
}

TEST(ThreadBackoffTest, EachBadRunInARowDoublesTheSingleThreadedStretch) {
  ThreadBackoff backoff;
  const int expected[] = {1, 2, 4, 8, 16, 32, 64, 64, 64};
  for (int single : expected) {
    backoff.Record(0.4);
    EXPECT_EQ(SingleThreadedBeforeThreads(backoff), single);
  }
}

TEST(ThreadBackoffTest, AGoodRunStartsTheStretchesOver) {
  ThreadBackoff backoff;
  for (int i = 0; i < 4; ++i) {
    backoff.Record(0.1);
    SingleThreadedBeforeThreads(backoff);
  }
  backoff.Record(1.8);
  EXPECT_TRUE(backoff.AllowsThreads());
  backoff.Record(0.1);
  EXPECT_EQ(SingleThreadedBeforeThreads(backoff), 1);
}

TEST(ThreadBackoffTest, DisabledAlwaysAllowsThreads) {
  ThreadBackoff backoff(false);
  for (int i = 0; i < 5; ++i) {
    backoff.Record(0.0);
    EXPECT_TRUE(backoff.AllowsThreads());
  }
}

TEST(ThreadBackoffTest, ThresholdIsTheMinimumSpeedup) {
  ThreadBackoff backoff;
  backoff.Record(ThreadBackoff::kMinSpeedup - 0.01);
  EXPECT_FALSE(backoff.AllowsThreads());
  EXPECT_TRUE(backoff.AllowsThreads());
}

}  // namespace
}  // namespace internal
}  // namespace lowbit
