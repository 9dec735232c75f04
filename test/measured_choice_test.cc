// MeasuredChoice's policy (lowbit/internal/driver/measured_choice.h): each shape class runs the
// faster of two ways, tries the slower again after stretches that grow while it keeps losing, and
// switches as soon as a try wins. The two ways here are the thread choice's: threads (preferred)
// and one thread.
#include "lowbit/internal/driver/measured_choice.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace lowbit {
namespace internal {
namespace {

constexpr double kMacs = 1000;

// Runs one GEMM of a 64^3 shape that takes `threads_ns` on threads and `single_ns` on one
// thread, and returns what was decided for it.
MeasuredChoice::Decision RunOne(MeasuredChoice& choice, std::int64_t threads_ns,
                                std::int64_t single_ns) {
  const MeasuredChoice::Decision decision = choice.Choose(64, 64, 64);
  choice.Record(decision, decision.preferred ? threads_ns : single_ns, kMacs);
  return decision;
}

// Runs such GEMMs until the next try of the slower choice is over, and returns how many runs of
// the faster came first.
int RunsBeforeTheNextTry(MeasuredChoice& choice, std::int64_t threads_ns, std::int64_t single_ns) {
  int runs = 0;
  while (!RunOne(choice, threads_ns, single_ns).trial) ++runs;
  for (int i = 1; i < MeasuredChoice::kTryRuns; ++i) {
    EXPECT_TRUE(RunOne(choice, threads_ns, single_ns).trial);
  }
  return runs;
}

// The first GEMMs of a shape try threads, then one thread.
void MeasureBoth(MeasuredChoice& choice, std::int64_t threads_ns, std::int64_t single_ns) {
  for (const bool threads : {true, false}) {
    for (int i = 0; i < MeasuredChoice::kTryRuns; ++i) {
      const MeasuredChoice::Decision decision = RunOne(choice, threads_ns, single_ns);
      ASSERT_EQ(decision.preferred, threads);
      ASSERT_TRUE(decision.trial);
    }
  }
}

TEST(MeasuredChoiceTest, RunsTheFasterAndTriesTheSlowerAfterAStretch) {
  MeasuredChoice choice;
  MeasureBoth(choice, 500, 1000);
  // One thread lost: threads run for 4 times its 1000 ns before it is tried again.
  EXPECT_TRUE(choice.Choose(64, 64, 64).preferred);
  EXPECT_EQ(RunsBeforeTheNextTry(choice, 500, 1000), 4 * 1000 / 500);
}

TEST(MeasuredChoiceTest, EachLosingTryDoublesTheStretchUpToTheMaximum) {
  MeasuredChoice choice;
  MeasureBoth(choice, 500, 1000);
  for (std::int64_t stretch = MeasuredChoice::kFirstStretch;
       stretch <= 4 * MeasuredChoice::kMaxStretch; stretch *= 2) {
    EXPECT_EQ(RunsBeforeTheNextTry(choice, 500, 1000),
              std::min(stretch, MeasuredChoice::kMaxStretch) * 1000 / 500);
  }
}

TEST(MeasuredChoiceTest, OneThreadWinsWhereThreadsAreSlower) {
  MeasuredChoice choice;
  MeasureBoth(choice, 2000, 1000);
  EXPECT_FALSE(choice.Choose(64, 64, 64).preferred);
  EXPECT_EQ(RunsBeforeTheNextTry(choice, 2000, 1000), 4 * 2000 / 1000);
}

TEST(MeasuredChoiceTest, AWinningTrySwitchesAndStartsTheStretchesOver) {
  MeasuredChoice choice;
  MeasureBoth(choice, 2000, 1000);
  for (int i = 0; i < 3; ++i) RunsBeforeTheNextTry(choice, 2000, 1000);
  // The machine gets idle: threads now take 500 ns, and their next try wins.
  RunsBeforeTheNextTry(choice, 500, 1000);
  EXPECT_TRUE(choice.Choose(64, 64, 64).preferred);
  // One thread, at its 1000 ns, is tried after threads ran 4 times that.
  EXPECT_EQ(RunsBeforeTheNextTry(choice, 500, 1000), 4 * 1000 / 500);
}

TEST(MeasuredChoiceTest, TheFasterGettingSlowerIsSeenWithinAFewRuns) {
  MeasuredChoice choice;
  MeasureBoth(choice, 500, 1000);
  // The machine gets busy: threads take 3000 ns from now on.
  int runs = 0;
  for (; runs < 10; ++runs) {
    const MeasuredChoice::Decision decision = choice.Choose(64, 64, 64);
    if (!decision.preferred) break;
    choice.Record(decision, 3000, kMacs);
  }
  EXPECT_LE(runs, 2);
}

TEST(MeasuredChoiceTest, OneSlowRunOfTheFasterDoesNotSwitch) {
  MeasuredChoice choice;
  MeasureBoth(choice, 500, 1000);
  MeasuredChoice::Decision decision = choice.Choose(64, 64, 64);
  ASSERT_TRUE(decision.preferred);
  ASSERT_FALSE(decision.trial);
  // Preempted once, 200 times as long: it counts as twice the average, which becomes 625. Its
  // wall time ends the stretch, so one thread is tried next, and loses.
  choice.Record(decision, 100000, kMacs);
  for (int i = 0; i < MeasuredChoice::kTryRuns; ++i) {
    decision = RunOne(choice, 500, 1000);
    EXPECT_TRUE(decision.trial);
    EXPECT_FALSE(decision.preferred) << "threads are still the faster";
  }
  decision = choice.Choose(64, 64, 64);
  EXPECT_TRUE(decision.preferred);
  EXPECT_FALSE(decision.trial);
}

TEST(MeasuredChoiceTest, ATryMustWinByTheMargin) {
  MeasuredChoice choice;
  MeasureBoth(choice, 1000, 1030);
  EXPECT_TRUE(choice.Choose(64, 64, 64).preferred);
  // One thread 2% faster than threads: not enough to swap.
  RunsBeforeTheNextTry(choice, 1000, 980);
  EXPECT_TRUE(choice.Choose(64, 64, 64).preferred);
  // 10% faster: it swaps.
  RunsBeforeTheNextTry(choice, 1000, 900);
  EXPECT_FALSE(choice.Choose(64, 64, 64).preferred);
}

TEST(MeasuredChoiceTest, TimesArePerMultiplyAdd) {
  MeasuredChoice choice;
  for (int i = 0; i < MeasuredChoice::kTryRuns; ++i) {
    choice.Record(choice.Choose(64, 64, 64), 1000, 1000);
  }
  // Larger GEMMs of the same class on one thread, as fast per multiply-add.
  for (int i = 0; i < MeasuredChoice::kTryRuns; ++i) {
    choice.Record(choice.Choose(64, 64, 64), 1900, 2000);
  }
  EXPECT_FALSE(choice.Choose(64, 64, 64).preferred);
}

TEST(MeasuredChoiceTest, ATryTakesItsFasterRun) {
  MeasuredChoice choice;
  MeasureBoth(choice, 500, 1000);
  for (int i = 0; i < 3; ++i) RunsBeforeTheNextTry(choice, 500, 1000);
  // One thread's first run after threads is slow (its data in the other core's cache), the
  // second is faster than threads: the try wins.
  while (!choice.Choose(64, 64, 64).trial) RunOne(choice, 500, 1000);
  EXPECT_FALSE(RunOne(choice, 500, 1400).preferred);
  EXPECT_FALSE(RunOne(choice, 500, 400).preferred);
  const MeasuredChoice::Decision decision = choice.Choose(64, 64, 64);
  EXPECT_FALSE(decision.preferred);
  EXPECT_FALSE(decision.trial);
}

TEST(MeasuredChoiceTest, ShapeClassesAreSeparate) {
  MeasuredChoice choice;
  MeasureBoth(choice, 1100, 1000);
  const MeasuredChoice::Decision other = choice.Choose(1024, 1024, 1024);
  EXPECT_TRUE(other.preferred);
  EXPECT_TRUE(other.trial);
  EXPECT_FALSE(choice.Choose(64, 64, 64).preferred);
}

TEST(MeasuredChoiceTest, VariantsOfAShapeAreSeparate) {
  MeasuredChoice choice;
  MeasureBoth(choice, 1100, 1000);
  const MeasuredChoice::Decision other = choice.Choose(64, 64, 64, 1);
  EXPECT_TRUE(other.preferred);
  EXPECT_TRUE(other.trial);
  EXPECT_FALSE(choice.Choose(64, 64, 64).preferred);
}

TEST(MeasuredChoiceTest, DisabledAlwaysChoosesThePreferred) {
  MeasuredChoice choice(false);
  for (int i = 0; i < 10; ++i) {
    const MeasuredChoice::Decision decision = choice.Choose(64, 64, 64);
    EXPECT_TRUE(decision.preferred);
    EXPECT_LT(decision.shape_class, 0);
    choice.Record(decision, i % 2 ? 1 : 1000000, kMacs);
  }
}

}  // namespace
}  // namespace internal
}  // namespace lowbit
