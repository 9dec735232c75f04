// Prepacked rhs operands: the same bits as the unpacked GEMM for every kernel (and, on AVX2, both
// tiles that read its prepacked layout: 1-row lhs and others), thread count, shape, storage
// order and pipeline, reused across calls; and every misuse rejected.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "lowbit/lowbit.h"
#include "test/test_util.h"

namespace lowbit {
namespace test {
namespace {

class PrepackedTest : public testing::TestWithParam<PathSetting> {
 protected:
  void SetUp() override { Configure(&context_, GetParam()); }
  Context context_;
};

template <typename Lhs, typename Rhs>
void CheckShape(Context* context, const Shape& shape, Order rhs_order, std::uint32_t seed) {
  std::mt19937 random(seed);
  auto rhs =
      std::make_unique<OwnedMatrix<Rhs>>(shape.depth, shape.cols, rhs_order, seed % 3, &random);
  const PrepackedRhs packed(context, rhs->const_map());
  ASSERT_EQ(packed.rows(), shape.depth);
  ASSERT_EQ(packed.cols(), shape.cols);
  // Keep a copy of the values, then destroy the source: the packed rhs owns its data.
  OwnedMatrix<Rhs> rhs_copy(shape.depth, shape.cols, rhs_order, seed % 3, &random);
  rhs_copy.storage = rhs->storage;
  rhs.reset();
  const PrepackedRhs shared_copy = packed;
  std::uniform_int_distribution<int> offset(-255, 255);
  for (int call = 0; call < 3; ++call) {
    OwnedMatrix<Lhs> lhs(shape.rows, shape.depth, call == 1 ? Order::kColMajor : Order::kRowMajor,
                         call, &random);
    const std::int32_t lhs_offset = offset(random), rhs_offset = offset(random);
    const auto expected =
        ReferenceAccumulators(lhs.const_map(), rhs_copy.const_map(), lhs_offset, rhs_offset);
    // int32 accumulators, row-major result.
    OwnedMatrix<std::int32_t> acc(shape.rows, shape.cols, Order::kRowMajor, 0, &random);
    Gemm(context, lhs.const_map(), call == 2 ? shared_copy : packed, &acc.map, lhs_offset,
         rhs_offset);
    // A requantizing pipeline into a column-major uint8 result.
    OwnedMatrix<std::uint8_t> out(shape.rows, shape.cols, Order::kColMajor, 2, &random);
    const auto pipeline = std::make_tuple(OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 11, 77},
                                          OutputStageSaturatingCastToUint8{});
    GemmWithOutputPipeline(context, lhs.const_map(), packed, &out.map, lhs_offset, rhs_offset,
                           pipeline);
    for (int r = 0; r < shape.rows; ++r) {
      for (int c = 0; c < shape.cols; ++c) {
        const auto value = static_cast<std::int32_t>(expected[r * shape.cols + c]);
        ASSERT_EQ(acc.map(r, c), value) << "(" << r << ", " << c << ") call " << call;
        ASSERT_EQ(out.map(r, c), meta::EvalPipeline(pipeline, value, r, c));
      }
    }
  }
}

TEST_P(PrepackedTest, MatchesTheReferenceAcrossShapesOrdersAndCalls) {
  const Shape shapes[] = {{1, 1, 1},     {1, 37, 29},   {8, 100, 300}, {33, 17, 5}, {64, 257, 131},
                          {2, 1029, 71}, {1, 19, 1000}, {3, 40, 97},   {7, 33, 50}, {5, 0, 4}};
  std::uint32_t seed = 1;
  for (const Shape& shape : shapes) {
    for (Order order : {Order::kRowMajor, Order::kColMajor}) {
      CheckShape<std::uint8_t, std::uint8_t>(&context_, shape, order, seed++);
      CheckShape<std::int8_t, std::uint8_t>(&context_, shape, order, seed++);
      CheckShape<std::uint8_t, std::int8_t>(&context_, shape, order, seed++);
      CheckShape<std::int8_t, std::int8_t>(&context_, shape, order, seed++);
      if (HasFatalFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, PrepackedTest, testing::ValuesIn(PathSettings({1, 2})),
                         PathSettingName);

TEST(PrepackedErrorTest, MisuseIsRejectedBeforeAnyWork) {
  Context context;
  std::vector<std::uint8_t> rhs_data(6 * 5, 3), lhs_data(4 * 7, 1);
  const MatrixMap<const std::uint8_t> rhs(rhs_data.data(), 6, 5, Order::kColMajor);
  ExpectError([&] { PrepackedRhs packed(nullptr, rhs); }, "context", "must not be null");
  ExpectError(
      [&] {
        PrepackedRhs packed(&context,
                            MatrixMap<const std::uint8_t>(nullptr, 6, 5, Order::kRowMajor));
      },
      "rhs.data", "must not be null");
  ExpectError(
      [&] {
        PrepackedRhs packed(
            &context, MatrixMap<const std::uint8_t>(rhs_data.data(), 6, 5, Order::kRowMajor, 4));
      },
      "rhs.stride", "got 4");
  ExpectError(
      [&] {
        PrepackedRhs packed(
            &context, MatrixMap<const std::uint8_t>(rhs_data.data(), -6, 5, Order::kColMajor, 6));
      },
      "rhs.rows", "got -6");

  const PrepackedRhs packed(&context, rhs);
  std::vector<std::int32_t> result(4 * 5, 99);
  MatrixMap<std::int32_t> result_map(result.data(), 4, 5, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> deeper_lhs(lhs_data.data(), 4, 7, Order::kRowMajor);
  ExpectError([&] { Gemm(&context, deeper_lhs, packed, &result_map, 0, 0); }, "rhs.rows",
              "must equal lhs.cols, the depth (7), got 6");
  MatrixMap<std::int32_t> wide_result(result.data(), 4, 4, Order::kRowMajor);
  const MatrixMap<const std::uint8_t> lhs(lhs_data.data(), 4, 6, Order::kRowMajor);
  ExpectError([&] { Gemm(&context, lhs, packed, &wide_result, 0, 0); }, "result.cols",
              "must equal rhs.cols (5)");
  // Packed for one kernel, used on a context that runs another.
  const std::vector<Kernel> kernels = AvailableKernels();
  if (kernels.size() > 1) {
    Context other;
    other.set_kernel(kernels.front() == packed.kernel() ? kernels.back() : kernels.front());
    ExpectError([&] { Gemm(&other, lhs, packed, &result_map, 0, 0); }, "rhs",
                std::string("was packed for kernel '") + KernelName(packed.kernel()) + "'");
  }
  for (std::int32_t entry : result) EXPECT_EQ(entry, 99);
}

}  // namespace
}  // namespace test
}  // namespace lowbit
