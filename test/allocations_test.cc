// After its first call with given shapes, a GEMM allocates nothing, on every path: every kernel,
// one thread or two, compiled and scalar pipelines, per-channel offsets, prepacked weights and
// narrow operands. This binary replaces malloc and its relatives with glibc's own allocator plus
// a counter, so it counts what libstdc++, pthreadpool and lowbit allocate alike. Sanitizer builds
// bring their own malloc: there the test is skipped.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <tuple>
#include <vector>

#include "lowbit/lowbit.h"
#include "test/test_util.h"

#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define LOWBIT_COUNTS_ALLOCATIONS 1
#else
#define LOWBIT_COUNTS_ALLOCATIONS 0
#endif

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

inline void Count() {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1);
}
}  // namespace

#if LOWBIT_COUNTS_ALLOCATIONS
extern "C" {
void* __libc_malloc(std::size_t size);
void* __libc_calloc(std::size_t count, std::size_t size);
void* __libc_realloc(void* pointer, std::size_t size);
void* __libc_memalign(std::size_t alignment, std::size_t size);
void __libc_free(void* pointer);

void* malloc(std::size_t size) {
  Count();
  return __libc_malloc(size);
}
void* calloc(std::size_t count, std::size_t size) {
  Count();
  return __libc_calloc(count, size);
}
void* realloc(void* pointer, std::size_t size) {
  Count();
  return __libc_realloc(pointer, size);
}
void* memalign(std::size_t alignment, std::size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(std::size_t alignment, std::size_t size) {
  Count();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** pointer, std::size_t alignment, std::size_t size) {
  Count();
  *pointer = __libc_memalign(alignment, size);
  return *pointer == nullptr ? 12 /* ENOMEM */ : 0;
}
void free(void* pointer) { __libc_free(pointer); }
}
#endif

namespace lowbit {
namespace test {
namespace {

// Runs `gemm` once to warm the context up, then counts what three more calls allocate.
template <typename Gemm>
long AllocationsAfterTheFirstCall(const Gemm& gemm) {
  gemm();
  allocations = 0;
  counting = true;
  for (int i = 0; i < 3; ++i) gemm();
  counting = false;
  return allocations.load();
}

struct LeakyRelu {
  std::int32_t Eval(std::int32_t acc, int, int) const { return acc >= 0 ? acc : acc / 4; }
};

class AllocationsTest : public testing::TestWithParam<PathSetting> {
 protected:
  void SetUp() override {
    if (!LOWBIT_COUNTS_ALLOCATIONS) GTEST_SKIP() << "a sanitizer owns malloc in this build";
    Configure(&context_, GetParam());
  }

  Context context_;
  std::mt19937 random_{11};
};

TEST_P(AllocationsTest, NoneAfterTheFirstCall) {
  const int rows = 150, depth = 300, cols = 100;
  OwnedMatrix<std::uint8_t> lhs(rows, depth, Order::kRowMajor, 0, &random_);
  OwnedMatrix<std::int8_t> rhs(depth, cols, Order::kColMajor, 0, &random_);
  OwnedMatrix<std::uint8_t> lhs_by_columns(rows, depth, Order::kColMajor, 0, &random_);
  OwnedMatrix<std::uint8_t> rhs_by_rows(depth, cols, Order::kRowMajor, 0, &random_);
  std::vector<std::int32_t> acc(static_cast<std::size_t>(rows) * cols);
  std::vector<std::uint8_t> bytes(acc.size());
  MatrixMap<std::int32_t> acc_map(acc.data(), rows, cols, Order::kColMajor);
  MatrixMap<std::uint8_t> bytes_map(bytes.data(), rows, cols, Order::kRowMajor);
  const std::vector<std::int32_t> row_offsets(rows, -3), biases(cols, 1000);
  const Offsets per_row(VectorMap<const std::int32_t>(row_offsets.data(), rows));
  const auto requantize =
      std::make_tuple(OutputStageBiasAddition{VectorMap<const std::int32_t>(biases.data(), cols),
                                              ChannelAxis::kCol},
                      OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 10, 128},
                      OutputStageSaturatingCastToUint8{});
  const auto scalar_path =
      std::make_tuple(LeakyRelu{}, OutputStageShiftByPOT{-9}, OutputStageSaturatingCastToUint8{});

  EXPECT_EQ(AllocationsAfterTheFirstCall(
                [&] { Gemm(&context_, lhs.const_map(), rhs.const_map(), &acc_map, -5, 0); }),
            0)
      << "int32 result";
  EXPECT_EQ(AllocationsAfterTheFirstCall([&] {
              GemmWithOutputPipeline(&context_, lhs.const_map(), rhs.const_map(), &bytes_map,
                                     per_row, 0, requantize);
            }),
            0)
      << "compiled pipeline, per-channel offsets";
  EXPECT_EQ(AllocationsAfterTheFirstCall([&] {
              GemmWithOutputPipeline(&context_, lhs_by_columns.const_map(), rhs_by_rows.const_map(),
                                     &bytes_map, -5, -128, scalar_path);
            }),
            0)
      << "scalar pipeline";
  const PrepackedRhs packed(&context_, rhs.const_map());
  for (int lhs_rows : {1, 2, rows}) {
    const MatrixMap<const std::uint8_t> some_rows(lhs.map.data(), lhs_rows, depth,
                                                  Order::kRowMajor);
    MatrixMap<std::int32_t> some_acc(acc.data(), lhs_rows, cols, Order::kColMajor);
    EXPECT_EQ(
        AllocationsAfterTheFirstCall([&] { Gemm(&context_, some_rows, packed, &some_acc, -5, 0); }),
        0)
        << "prepacked, " << lhs_rows << " lhs rows";
  }
  for (BitDepthRounding rounding :
       {BitDepthRounding::kNearest, BitDepthRounding::kXorshift, BitDepthRounding::kAddMod97}) {
    const BitDepthParams narrow{5, 4, rounding, 3, BitDepthMode::kRequantize};
    EXPECT_EQ(AllocationsAfterTheFirstCall([&] {
                Gemm(&context_, lhs.const_map(), rhs.const_map(), &acc_map, -5, 0, narrow);
              }),
              0)
        << "requantized, " << BitDepthRoundingName(rounding);
    EXPECT_EQ(AllocationsAfterTheFirstCall([&] {
                GemmWithOutputPipeline(&context_, lhs_by_columns.const_map(),
                                       rhs_by_rows.const_map(), &bytes_map, -5, -128, requantize,
                                       narrow);
              }),
              0)
        << "requantized across lines, " << BitDepthRoundingName(rounding);
  }
  const BitDepthParams declared{8, 8, BitDepthRounding::kAuto, 0, BitDepthMode::kDeclaredRange};
  EXPECT_EQ(AllocationsAfterTheFirstCall([&] {
              Gemm(&context_, lhs.const_map(), rhs.const_map(), &acc_map, -5, 0, declared);
            }),
            0)
      << "declared range";
}

// A context left to choose its kernel asks for it on every call.
TEST(AllocationsDefaultContextTest, NoneAfterTheFirstCall) {
  if (!LOWBIT_COUNTS_ALLOCATIONS) GTEST_SKIP() << "a sanitizer owns malloc in this build";
  Context context;
  const std::vector<std::uint8_t> lhs(64 * 64, 1), rhs(64 * 64, 2);
  std::vector<std::int32_t> result(64 * 64);
  const MatrixMap<const std::uint8_t> lhs_map(lhs.data(), 64, 64, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> rhs_map(rhs.data(), 64, 64, Order::kColMajor);
  MatrixMap<std::int32_t> result_map(result.data(), 64, 64, Order::kRowMajor);
  EXPECT_EQ(
      AllocationsAfterTheFirstCall([&] { Gemm(&context, lhs_map, rhs_map, &result_map, 0, 0); }),
      0);
  const PrepackedRhs packed(&context, rhs_map);
  EXPECT_EQ(
      AllocationsAfterTheFirstCall([&] { Gemm(&context, lhs_map, packed, &result_map, 0, 0); }), 0);
}

// The counter itself: a test that cannot fail would prove nothing.
TEST(AllocationsDefaultContextTest, TheCounterSeesAnAllocation) {
  if (!LOWBIT_COUNTS_ALLOCATIONS) GTEST_SKIP() << "a sanitizer owns malloc in this build";
  // Through volatile pointers, which the compiler may not pair up and drop.
  EXPECT_GE(AllocationsAfterTheFirstCall([] {
              void* volatile memory = ::operator new(100);
              ::operator delete(memory);
            }),
            3);
  EXPECT_GE(AllocationsAfterTheFirstCall([] {
              void* volatile memory = std::aligned_alloc(64, 128);
              std::free(memory);
            }),
            3);
}

INSTANTIATE_TEST_SUITE_P(Paths, AllocationsTest, testing::ValuesIn(PathSettings({1, 2})),
                         PathSettingName);

}  // namespace
}  // namespace test
}  // namespace lowbit
