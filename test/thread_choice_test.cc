// ThreadChoice's policy (lowbit/internal/driver/thread_choice.h): each shape class runs on the
// faster of one thread and threads, tries the slower again after stretches that grow while it keeps
// losing, and switches as soon as a try wins.
#include "lowbit/internal/driver/thread_choice.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace lowbit {
namespace internal {
namespace {

constexpr double kMacs = 1000;

// Runs one GEMM of a 64^3 shape that takes `threads_ns` on threads and `single_ns` on one
// thread, and returns what was decided for it.
ThreadChoice::Decision RunOne(ThreadChoice& choice, std::int64_t threads_ns,
                              std::int64_t single_ns) {
  const ThreadChoice::Decision decision = choice.Choose(64, 64, 64);
  choice.Record(decision, decision.threads ? threads_ns : single_ns, kMacs);
  return decision;
}

// Runs such GEMMs until the next try of the slower choice is over, and returns how many runs of
// the faster came first.
int RunsBeforeTheNextTry(ThreadChoice& choice, std::int64_t threads_ns, std::int64_t single_ns) {
  int runs = 0;
  while (!RunOne(choice, threads_ns, single_ns).trial) ++runs;
  for (int i = 1; i < ThreadChoice::kTryRuns; ++i) {
    EXPECT_TRUE(RunOne(choice, threads_ns, single_ns).trial);
  }
  return runs;
}

// The first GEMMs of a shape try threads, then one thread.
void MeasureBoth(ThreadChoice& choice, std::int64_t threads_ns, std::int64_t single_ns) {
  for (const bool threads : {true, false}) {
    for (int i = 0; i < ThreadChoice::kTryRuns; ++i) {
      const ThreadChoice::Decision decision = RunOne(choice, threads_ns, single_ns);
      ASSERT_EQ(decision.threads, threads);
      ASSERT_TRUE(decision.trial);
    }
  }
}

TEST(ThreadChoiceTest, RunsTheFasterAndTriesTheSlowerAfterAStretch) {
  ThreadChoice choice;
  MeasureBoth(choice, 500, 1000);
  // One thread lost: threads run for 4 times its 1000 ns before it is tried again.
  EXPECT_TRUE(choice.Choose(64, 64, 64).threads);
  EXPECT_EQ(RunsBeforeTheNextTry(choice, 500, 1000), 4 * 1000 / 500);
}

TEST(ThreadChoiceTest, EachLosingTryDoublesTheStretchUpToTheMaximum) {
  ThreadChoice choice;
  MeasureBoth(choice, 500, 1000);
  for (std::int64_t stretch = ThreadChoice::kFirstStretch; stretch <= 4 * ThreadChoice::kMaxStretch;
       stretch *= 2) {
    EXPECT_EQ(RunsBeforeTheNextTry(choice, 500, 1000),
              std::min(stretch, ThreadChoice::kMaxStretch) * 1000 / 500);
  }
}

TEST(ThreadChoiceTest, OneThreadWinsWhereThreadsAreSlower) {
  ThreadChoice choice;
  MeasureBoth(choice, 2000, 1000);
  EXPECT_FALSE(choice.Choose(64, 64, 64).threads);
  EXPECT_EQ(RunsBeforeTheNextTry(choice, 2000, 1000), 4 * 2000 / 1000);
}

TEST(ThreadChoiceTest, AWinningTrySwitchesAndStartsTheStretchesOver) {
  ThreadChoice choice;
  MeasureBoth(choice, 2000, 1000);
  for (int i = 0; i < 3; ++i) RunsBeforeTheNextTry(choice, 2000, 1000);
  // The machine gets idle: threads now take 500 ns, and their next try wins.
  RunsBeforeTheNextTry(choice, 500, 1000);
  EXPECT_TRUE(choice.Choose(64, 64, 64).threads);
  // One thread, at its 1000 ns, is tried after threads ran 4 times that.
  EXPECT_EQ(RunsBeforeTheNextTry(choice, 500, 1000), 4 * 1000 / 500);
}

TEST(ThreadChoiceTest, TheFasterGettingSlowerIsSeenWithinAFewRuns) {
  ThreadChoice choice;
  MeasureBoth(choice, 500, 1000);
  // The machine gets busy: threads take 3000 ns from now on.
  int runs = 0;
  for (; runs < 10; ++runs) {
    const ThreadChoice::Decision decision = choice.Choose(64, 64, 64);
    if (!decision.threads) break;
    choice.Record(decision, 3000, kMacs);
  }
  EXPECT_LE(runs, 2);
}

TEST(ThreadChoiceTest, OneSlowRunOfTheFasterDoesNotSwitch) {
  ThreadChoice choice;
  MeasureBoth(choice, 500, 1000);
  ThreadChoice::Decision decision = choice.Choose(64, 64, 64);
  ASSERT_TRUE(decision.threads);
  ASSERT_FALSE(decision.trial);
  // Preempted once, 200 times as long: it counts as twice the average, which becomes 625. Its
  // wall time ends the stretch, so one thread is tried next, and loses.
  choice.Record(decision, 100000, kMacs);
  for (int i = 0; i < ThreadChoice::kTryRuns; ++i) {
    decision = RunOne(choice, 500, 1000);
    EXPECT_TRUE(decision.trial);
    EXPECT_FALSE(decision.threads) << "threads are still the faster";
  }
  decision = choice.Choose(64, 64, 64);
  EXPECT_TRUE(decision.threads);
  EXPECT_FALSE(decision.trial);
}

TEST(ThreadChoiceTest, ATryMustWinByTheMargin) {
  ThreadChoice choice;
  MeasureBoth(choice, 1000, 1030);
  EXPECT_TRUE(choice.Choose(64, 64, 64).threads);
  // One thread 2% faster than threads: not enough to swap.
  RunsBeforeTheNextTry(choice, 1000, 980);
  EXPECT_TRUE(choice.Choose(64, 64, 64).threads);
  // 10% faster: it swaps.
  RunsBeforeTheNextTry(choice, 1000, 900);
  EXPECT_FALSE(choice.Choose(64, 64, 64).threads);
}

TEST(ThreadChoiceTest, TimesArePerMultiplyAdd) {
  ThreadChoice choice;
  for (int i = 0; i < ThreadChoice::kTryRuns; ++i) {
    choice.Record(choice.Choose(64, 64, 64), 1000, 1000);
  }
  // Larger GEMMs of the same class on one thread, as fast per multiply-add.
  for (int i = 0; i < ThreadChoice::kTryRuns; ++i) {
    choice.Record(choice.Choose(64, 64, 64), 1900, 2000);
  }
  EXPECT_FALSE(choice.Choose(64, 64, 64).threads);
}

TEST(ThreadChoiceTest, ATryTakesItsFasterRun) {
  ThreadChoice choice;
  MeasureBoth(choice, 500, 1000);
  for (int i = 0; i < 3; ++i) RunsBeforeTheNextTry(choice, 500, 1000);
  // One thread's first run after threads is slow (its data in the other core's cache), the
  // second is faster than threads: the try wins.
  while (!choice.Choose(64, 64, 64).trial) RunOne(choice, 500, 1000);
  EXPECT_FALSE(RunOne(choice, 500, 1400).threads);
  EXPECT_FALSE(RunOne(choice, 500, 400).threads);
  const ThreadChoice::Decision decision = choice.Choose(64, 64, 64);
  EXPECT_FALSE(decision.threads);
  EXPECT_FALSE(decision.trial);
}

TEST(ThreadChoiceTest, ShapeClassesAreSeparate) {
  ThreadChoice choice;
  MeasureBoth(choice, 1100, 1000);
  const ThreadChoice::Decision other = choice.Choose(1024, 1024, 1024);
  EXPECT_TRUE(other.threads);
  EXPECT_TRUE(other.trial);
  EXPECT_FALSE(choice.Choose(64, 64, 64).threads);
}

TEST(ThreadChoiceTest, DisabledAlwaysChoosesThreads) {
  ThreadChoice choice(false);
  for (int i = 0; i < 10; ++i) {
    const ThreadChoice::Decision decision = choice.Choose(64, 64, 64);
    EXPECT_TRUE(decision.threads);
    EXPECT_LT(decision.shape_class, 0);
    choice.Record(decision, i % 2 ? 1 : 1000000, kMacs);
  }
}

}  // namespace
}  // namespace internal
}  // namespace lowbit
