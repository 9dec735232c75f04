// A Context's rules (lowbit/public/context.h): threads may share one, their GEMMs taking turns with
// its scratch memory and pool; a GEMM cannot re-enter the context that runs it; and its thread pool
// holds no more threads than the work and the cores can use. Run under ThreadSanitizer too.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "lowbit/internal/driver/context_state.h"
#include "lowbit/lowbit.h"
#include "test/test_util.h"

namespace lowbit {
namespace test {
namespace {

// One GEMM a thread repeats, with its own operands and the exact result to expect.
struct Job {
  OwnedMatrix<std::uint8_t> lhs;
  OwnedMatrix<std::uint8_t> rhs;
  std::vector<std::int64_t> expected;

  Job(Shape shape, std::mt19937* random)
      : lhs(shape.rows, shape.depth, Order::kRowMajor, 0, random),
        rhs(shape.depth, shape.cols, Order::kColMajor, 0, random),
        expected(ReferenceAccumulators(lhs.const_map(), rhs.const_map(), -7, -100)) {}

  // Runs the GEMM `repeats` times on `context` (plain, prepacked or on narrow declared
  // operands in turn) and returns how many result entries differed from the reference.
  int Run(Context* context, const PrepackedRhs& packed, int repeats) const {
    const int rows = lhs.map.rows(), cols = rhs.map.cols();
    std::vector<std::int32_t> result(static_cast<std::size_t>(rows) * cols);
    MatrixMap<std::int32_t> result_map(result.data(), rows, cols, Order::kRowMajor);
    int wrong = 0;
    for (int i = 0; i < repeats; ++i) {
      std::fill(result.begin(), result.end(), 0);
      if (i % 3 == 0) {
        Gemm(context, lhs.const_map(), rhs.const_map(), &result_map, -7, -100);
      } else if (i % 3 == 1) {
        Gemm(context, lhs.const_map(), packed, &result_map, -7, -100);
      } else {
        const BitDepthParams eight_bits{8, 8, BitDepthRounding::kAuto, 0,
                                        BitDepthMode::kDeclaredRange};
        Gemm(context, lhs.const_map(), rhs.const_map(), &result_map, -7, -100, eight_bits);
      }
      for (std::size_t j = 0; j < result.size(); ++j) wrong += result[j] != expected[j];
    }
    return wrong;
  }
};

// The reported failure: two threads running GEMMs of different shapes on one Context got
// thousands of wrong entries, and once heap corruption.
TEST(ContextTest, ThreadsSharingAContextGetExactResults) {
  for (int threads : {1, 2}) {
    Context context;
    context.set_max_num_threads(threads);
    context.state().cores = std::max(context.state().cores, threads);
    std::mt19937 random(threads);
    const Job small(Shape{50, 100, 37}, &random);
    const Job large(Shape{150, 100, 37}, &random);
    const PrepackedRhs small_packed(&context, small.rhs.const_map());
    const PrepackedRhs large_packed(&context, large.rhs.const_map());
    std::atomic<int> wrong{0};
    std::thread other([&] { wrong += small.Run(&context, small_packed, 150); });
    wrong += large.Run(&context, large_packed, 150);
    other.join();
    EXPECT_EQ(wrong.load(), 0) << threads << " threads";
  }
}

// Settings may change from another thread while GEMMs run: each GEMM runs wholly with the
// settings it started with.
TEST(ContextTest, SettingsChangeWhileAnotherThreadRunsGemms) {
  Context context;
  context.state().cores = std::max(context.state().cores, 3);
  std::mt19937 random(5);
  const Job job(Shape{70, 90, 130}, &random);
  const PrepackedRhs packed(&context, job.rhs.const_map());
  std::atomic<bool> done{false};
  std::thread changer([&] {
    for (int i = 0; !done; ++i) context.set_max_num_threads(1 + i % 3);
  });
  // The prepacked rhs ties GEMMs to one kernel, so only the thread count changes here.
  const int wrong = job.Run(&context, packed, 60);
  done = true;
  changer.join();
  EXPECT_EQ(wrong, 0);
}

// A stage that runs a GEMM on the context that runs it, catching what that call throws: an
// exception cannot leave a pool worker.
struct ReenteringStage {
  Context* context;
  std::atomic<int>* refusals;

  std::int32_t Eval(std::int32_t acc, int, int) const {
    const std::uint8_t one = 1;
    std::int32_t out = 0;
    const MatrixMap<const std::uint8_t> unit(&one, 1, 1, Order::kRowMajor);
    MatrixMap<std::int32_t> out_map(&out, 1, 1, Order::kRowMajor);
    try {
      Gemm(context, unit, unit, &out_map, 0, 0);
    } catch (const Error& error) {
      if (error.argument() == "context" &&
          std::string(error.what()).find("is in use by a GEMM running on this thread") !=
              std::string::npos) {
        ++*refusals;
      }
    }
    return acc;
  }
};

TEST(ContextTest, AGemmInsideAGemmOnTheSameContextIsAnError) {
  for (int threads : {1, 2}) {
    Context context;
    context.set_max_num_threads(threads);
    context.state().cores = std::max(context.state().cores, threads);
    context.state().DisableMeasuredChoices();
    std::mt19937 random(9);
    // Enough work for two threads, so that pool workers run the stage too.
    const Job job(Shape{100, 200, 120}, &random);
    std::vector<std::int32_t> result(100 * 120);
    MatrixMap<std::int32_t> result_map(result.data(), 100, 120, Order::kRowMajor);
    std::atomic<int> refusals{0};
    GemmWithOutputPipeline(&context, job.lhs.const_map(), job.rhs.const_map(), &result_map, -7,
                           -100, std::make_tuple(ReenteringStage{&context, &refusals}));
    EXPECT_EQ(refusals.load(), 100 * 120) << threads << " threads";
    for (std::size_t i = 0; i < result.size(); ++i) ASSERT_EQ(result[i], job.expected[i]);
    // And the context is free again afterwards.
    Gemm(&context, job.lhs.const_map(), job.rhs.const_map(), &result_map, -7, -100);
  }
  // A GEMM on another context from inside a stage is fine.
  Context outer, inner;
  std::atomic<int> refusals{0};
  const std::uint8_t value = 3;
  const MatrixMap<const std::uint8_t> one(&value, 1, 1, Order::kRowMajor);
  std::int32_t out = 0;
  MatrixMap<std::int32_t> out_map(&out, 1, 1, Order::kRowMajor);
  GemmWithOutputPipeline(&outer, one, one, &out_map, 0, 0,
                         std::make_tuple(ReenteringStage{&inner, &refusals}));
  EXPECT_EQ(refusals.load(), 0);
  EXPECT_EQ(out, 9);
}

// set_max_num_threads(1024) made a 256^3 GEMM take seconds: a pool of 1024 threads, each woken
// for nothing. Threads beyond the cores or the work are never created.
// Scratch holds only what the GEMM's path uses: the AVX-512 VNNI kernel reads the column-major
// rhs of a 1-row GEMM where it lies, so no rhs block (512 KiB for this depth on a 2 MiB L2) is
// reserved for it, only the lhs row, the accumulators and the offset terms.
TEST(ContextTest, ADirectProductReservesNoRhsBlock) {
  const std::vector<Kernel> kernels = AvailableKernels();
  if (std::find(kernels.begin(), kernels.end(), Kernel::kAvx512Vnni) == kernels.end()) {
    GTEST_SKIP() << "the direct product is the AVX-512 VNNI kernel's";
  }
  Context context;
  context.set_kernel(Kernel::kAvx512Vnni);
  context.set_max_num_threads(1);
  std::mt19937 random(3);
  OwnedMatrix<std::uint8_t> lhs(1, 1024, Order::kRowMajor, 0, &random);
  OwnedMatrix<std::uint8_t> rhs(1024, 1024, Order::kColMajor, 0, &random);
  OwnedMatrix<std::int32_t> acc(1, 1024, Order::kRowMajor, 0, &random);
  Gemm(&context, lhs.const_map(), rhs.const_map(), &acc.map, 0, 0);
  EXPECT_LT(context.state().ScratchBytes(), std::size_t{64} * 1024);
}

TEST(ContextTest, ThreadsBeyondTheCoresAndTheWorkAreNotCreated) {
  Context context;
  context.set_max_num_threads(1024);
  const std::vector<std::uint8_t> lhs(256 * 256, 2), rhs(256 * 256, 3);
  std::vector<std::int32_t> result(256 * 256);
  const MatrixMap<const std::uint8_t> tiny_lhs(lhs.data(), 4, 4, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> tiny_rhs(rhs.data(), 4, 4, Order::kColMajor);
  MatrixMap<std::int32_t> tiny_result(result.data(), 4, 4, Order::kRowMajor);
  Gemm(&context, tiny_lhs, tiny_rhs, &tiny_result, 0, 0);
  EXPECT_EQ(context.state().PoolThreads(), 0) << "a 4x4x4 GEMM needs no threads";
  const MatrixMap<const std::uint8_t> lhs_map(lhs.data(), 256, 256, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> rhs_map(rhs.data(), 256, 256, Order::kColMajor);
  MatrixMap<std::int32_t> result_map(result.data(), 256, 256, Order::kRowMajor);
  Gemm(&context, lhs_map, rhs_map, &result_map, 0, 0);
  for (std::int32_t entry : result) ASSERT_EQ(entry, 2 * 3 * 256);
  EXPECT_LE(context.state().PoolThreads(), internal::UsableCores());
  EXPECT_LE(context.state().PoolThreads(), 1024);
}

}  // namespace
}  // namespace test
}  // namespace lowbit
