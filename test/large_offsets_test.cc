// Operands and results whose entries lie more than 2^31 bytes past their first one: every index
// a packer, kernel or writer computes from a stride must be 64-bit. The matrices live in mappings
// that reserve address space only (MAP_NORESERVE), so a few GiB of stride cost a page per line.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "lowbit/lowbit.h"
#include "test/test_util.h"

namespace lowbit {
namespace test {
namespace {

// Lines 2^20 elements apart: 2100 of them span more than 2^31 bytes of uint8.
constexpr int kLongStride = 1 << 20;
constexpr int kManyLines = 2100;

// Anonymous memory that costs nothing until a page is written.
class SparseMemory {
 public:
  explicit SparseMemory(std::size_t bytes) : bytes_(bytes) {
    data_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (data_ == MAP_FAILED) data_ = nullptr;
  }
  ~SparseMemory() {
    if (data_ != nullptr) munmap(data_, bytes_);
  }
  SparseMemory(const SparseMemory&) = delete;
  SparseMemory& operator=(const SparseMemory&) = delete;

  void* data() const { return data_; }

 private:
  std::size_t bytes_;
  void* data_;
};

// A rows x cols map over sparse memory `stride` elements per line, its entries (not the gaps
// between lines) set to random values below 2^bits (int8: within +-2^(bits-1)).
template <typename Scalar>
struct SparseMatrix {
  SparseMemory memory;
  MatrixMap<Scalar> map;

  SparseMatrix(int rows, int cols, Order order, int stride, std::mt19937* random, int bits = 8)
      : memory(static_cast<std::size_t>(stride) * (order == Order::kRowMajor ? rows : cols) *
               sizeof(Scalar)),
        map(static_cast<Scalar*>(memory.data()), rows, cols, order, stride) {
    const bool is_signed = std::is_signed<Scalar>::value;
    std::uniform_int_distribution<int> value(is_signed ? -(1 << (bits - 1)) : 0,
                                             is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1);
    if (memory.data() == nullptr) return;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) map(r, c) = static_cast<Scalar>(value(*random));
    }
  }
};

template <typename Scalar>
OwnedMatrix<Scalar> CompactMatrix(int rows, int cols, Order order, std::mt19937* random) {
  return OwnedMatrix<Scalar>(rows, cols, order, 0, random);
}

class LargeOffsetsTest : public testing::TestWithParam<PathSetting> {
 protected:
  void SetUp() override { Configure(&context_, GetParam()); }

  // result = pipeline(lhs * rhs with offsets) against the reference, entry by entry.
  template <typename Lhs, typename Rhs, typename Result, typename Pipeline>
  void Check(const MatrixMap<Lhs>& lhs, const MatrixMap<Rhs>& rhs, const MatrixMap<Result>& result,
             const Pipeline& pipeline) {
    ASSERT_NE(lhs.data(), nullptr);
    ASSERT_NE(rhs.data(), nullptr);
    ASSERT_NE(result.data(), nullptr);
    MatrixMap<Result> out = result;
    GemmWithOutputPipeline(&context_, MatrixMap<const Lhs>(lhs), MatrixMap<const Rhs>(rhs), &out,
                           -3, -128, pipeline);
    const auto acc = ReferenceAccumulators(lhs, rhs, -3, -128);
    for (int r = 0; r < result.rows(); ++r) {
      for (int c = 0; c < result.cols(); ++c) {
        const auto expected = meta::EvalPipeline(
            pipeline, static_cast<std::int32_t>(acc[static_cast<std::size_t>(r) * rhs.cols() + c]),
            r, c);
        ASSERT_EQ(result(r, c), expected) << "at (" << r << ", " << c << ")";
      }
    }
  }

  Context context_;
  std::mt19937 random_{2100};
};

const auto kToUint8 = std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 8, 100},
                                      OutputStageSaturatingCastToUint8{});

TEST_P(LargeOffsetsTest, LhsRowsFarApart) {
  // The reported crash: row 2052 starts 2052 * 2^20 bytes in.
  SparseMatrix<std::uint8_t> lhs(kManyLines, 64, Order::kRowMajor, kLongStride, &random_);
  auto rhs = CompactMatrix<std::uint8_t>(64, 1, Order::kColMajor, &random_);
  auto result = CompactMatrix<std::int32_t>(kManyLines, 1, Order::kColMajor, &random_);
  Check(lhs.map, rhs.map, result.map, std::tuple<>());
  auto wide_rhs = CompactMatrix<std::int8_t>(64, 40, Order::kRowMajor, &random_);
  auto wide_result = CompactMatrix<std::uint8_t>(kManyLines, 40, Order::kRowMajor, &random_);
  Check(lhs.map, wide_rhs.map, wide_result.map, kToUint8);
}

TEST_P(LargeOffsetsTest, LhsColumnsFarApart) {
  SparseMatrix<std::int8_t> lhs(9, kManyLines, Order::kColMajor, kLongStride, &random_);
  auto rhs = CompactMatrix<std::uint8_t>(kManyLines, 5, Order::kColMajor, &random_);
  auto result = CompactMatrix<std::int32_t>(9, 5, Order::kRowMajor, &random_);
  Check(lhs.map, rhs.map, result.map, std::tuple<>());
}

TEST_P(LargeOffsetsTest, RhsColumnsFarApart) {
  auto lhs = CompactMatrix<std::uint8_t>(7, 64, Order::kRowMajor, &random_);
  SparseMatrix<std::uint8_t> rhs(64, kManyLines, Order::kColMajor, kLongStride, &random_);
  auto result = CompactMatrix<std::int32_t>(7, kManyLines, Order::kColMajor, &random_);
  Check(lhs.map, rhs.map, result.map, std::tuple<>());
  auto short_lhs = CompactMatrix<std::uint8_t>(1, 64, Order::kRowMajor, &random_);
  auto row = CompactMatrix<std::uint8_t>(1, kManyLines, Order::kRowMajor, &random_);
  Check(short_lhs.map, rhs.map, row.map, kToUint8);
}

TEST_P(LargeOffsetsTest, RhsRowsFarApart) {
  auto lhs = CompactMatrix<std::uint8_t>(6, kManyLines, Order::kRowMajor, &random_);
  SparseMatrix<std::int8_t> rhs(kManyLines, 3, Order::kRowMajor, kLongStride, &random_);
  auto result = CompactMatrix<std::int32_t>(6, 3, Order::kColMajor, &random_);
  Check(lhs.map, rhs.map, result.map, std::tuple<>());
}

TEST_P(LargeOffsetsTest, ResultLinesFarApart) {
  auto lhs = CompactMatrix<std::uint8_t>(kManyLines, 16, Order::kRowMajor, &random_);
  auto rhs = CompactMatrix<std::uint8_t>(16, 3, Order::kColMajor, &random_);
  SparseMatrix<std::uint8_t> rows_apart(kManyLines, 3, Order::kRowMajor, kLongStride, &random_);
  Check(lhs.map, rhs.map, rows_apart.map, kToUint8);
  auto wide_lhs = CompactMatrix<std::uint8_t>(3, 16, Order::kRowMajor, &random_);
  auto wide_rhs = CompactMatrix<std::uint8_t>(16, kManyLines, Order::kColMajor, &random_);
  SparseMatrix<std::int32_t> cols_apart(3, kManyLines, Order::kColMajor, kLongStride, &random_);
  Check(wide_lhs.map, wide_rhs.map, cols_apart.map, std::tuple<>());
}

TEST_P(LargeOffsetsTest, PrepackedRhsFromColumnsFarApart) {
  SparseMatrix<std::uint8_t> rhs(64, kManyLines, Order::kColMajor, kLongStride, &random_);
  ASSERT_NE(rhs.memory.data(), nullptr);
  const PrepackedRhs packed(&context_, MatrixMap<const std::uint8_t>(rhs.map));
  for (int rows : {1, 2, 8}) {
    auto lhs = CompactMatrix<std::uint8_t>(rows, 64, Order::kRowMajor, &random_);
    std::vector<std::int32_t> result(static_cast<std::size_t>(rows) * kManyLines);
    MatrixMap<std::int32_t> result_map(result.data(), rows, kManyLines, Order::kRowMajor);
    Gemm(&context_, lhs.const_map(), packed, &result_map, -3, -128);
    const auto acc = ReferenceAccumulators(lhs.const_map(), rhs.map, -3, -128);
    for (std::size_t i = 0; i < result.size(); ++i) ASSERT_EQ(result[i], acc[i]) << i;
  }
}

// Narrow operands read their sources in their own passes: requantization, and the range check
// of declared ones.
TEST_P(LargeOffsetsTest, NarrowOperandsFarApart) {
  SparseMatrix<std::uint8_t> lhs(kManyLines, 40, Order::kRowMajor, kLongStride, &random_, 4);
  SparseMatrix<std::uint8_t> rhs(40, kManyLines, Order::kColMajor, kLongStride, &random_, 4);
  ASSERT_NE(lhs.memory.data(), nullptr);
  ASSERT_NE(rhs.memory.data(), nullptr);
  const MatrixMap<const std::uint8_t> lhs_map(lhs.map), rhs_map(rhs.map);
  auto result = CompactMatrix<std::int32_t>(kManyLines, 2, Order::kColMajor, &random_);
  auto other_rhs = CompactMatrix<std::uint8_t>(40, 2, Order::kColMajor, &random_);
  for (std::uint8_t& value : other_rhs.storage) value &= 15;
  BitDepthParams declared{4, 4, BitDepthRounding::kAuto, 0, BitDepthMode::kDeclaredRange};
  Gemm(&context_, lhs_map, other_rhs.const_map(), &result.map, -3, -8, declared);
  const auto acc = ReferenceAccumulators(lhs_map, other_rhs.const_map(), -3, -8);
  for (int r = 0; r < kManyLines; ++r) {
    for (int c = 0; c < 2; ++c)
      ASSERT_EQ(result.map(r, c), acc[static_cast<std::size_t>(r) * 2 + c]);
  }
  // Requantized, the same bits from every kernel and thread count: compared with the reference
  // kernel on one thread, on compact copies of the operands.
  auto lhs_copy = CompactMatrix<std::uint8_t>(kManyLines, 40, Order::kRowMajor, &random_);
  auto rhs_copy = CompactMatrix<std::uint8_t>(40, kManyLines, Order::kColMajor, &random_);
  for (int r = 0; r < kManyLines; ++r) {
    for (int k = 0; k < 40; ++k) {
      lhs_copy.map(r, k) = lhs.map(r, k);
      rhs_copy.map(k, r) = rhs.map(k, r);
    }
  }
  const BitDepthParams requantize{5, 3, BitDepthRounding::kAddMod97, 7, BitDepthMode::kRequantize};
  std::vector<std::int32_t> far(static_cast<std::size_t>(kManyLines) * kManyLines / 100);
  const int rows = kManyLines / 100;
  const MatrixMap<const std::uint8_t> few_lhs_far(lhs.map.data(), rows, 40, Order::kRowMajor,
                                                  kLongStride);
  const MatrixMap<const std::uint8_t> few_lhs_near(lhs_copy.map.data(), rows, 40, Order::kRowMajor);
  MatrixMap<std::int32_t> far_map(far.data(), rows, kManyLines, Order::kRowMajor);
  Gemm(&context_, few_lhs_far, rhs_map, &far_map, -3, -8, requantize);
  std::vector<std::int32_t> near(far.size());
  MatrixMap<std::int32_t> near_map(near.data(), rows, kManyLines, Order::kRowMajor);
  Context reference;
  reference.set_kernel(Kernel::kReference);
  Gemm(&reference, few_lhs_near, rhs_copy.const_map(), &near_map, -3, -8, requantize);
  EXPECT_EQ(far, near);
}

INSTANTIATE_TEST_SUITE_P(Paths, LargeOffsetsTest, testing::ValuesIn(PathSettings({1, 2})),
                         PathSettingName);

}  // namespace
}  // namespace test
}  // namespace lowbit
