// The smallest lowbit program: a uint8 GEMM with a requantizing pipeline, checked by hand.
#include <cstdint>
#include <cstdio>
#include <tuple>

#include "public/lowbit.h"

int main() {
  // lhs = [[1, 2], [3, 4]] with zero point 1; rhs = identity * 10 with zero point 0.
  const std::uint8_t lhs_data[] = {1, 2, 3, 4};
  const std::uint8_t rhs_data[] = {10, 0, 0, 10};
  std::uint8_t result_data[4] = {};
  lowbit::MatrixMap<const std::uint8_t> lhs(lhs_data, 2, 2, lowbit::Order::kRowMajor);
  lowbit::MatrixMap<const std::uint8_t> rhs(rhs_data, 2, 2, lowbit::Order::kRowMajor);
  lowbit::MatrixMap<std::uint8_t> result(result_data, 2, 2, lowbit::Order::kRowMajor);

  // acc = (lhs - 1) * rhs = [[0, 10], [20, 30]]; halve it (multiplier 2^30 is 0.5) and add 5.
  const auto pipeline =
      std::make_tuple(lowbit::OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 0, 5},
                      lowbit::OutputStageSaturatingCastToUint8{});
  lowbit::Context context;
  lowbit::GemmWithOutputPipeline(&context, lhs, rhs, &result, /*lhs_offset=*/-1,
                                 /*rhs_offset=*/0, pipeline);

  const std::uint8_t expected[] = {5, 10, 15, 20};
  for (int i = 0; i < 4; ++i) {
    if (result_data[i] != expected[i]) {
      std::printf("entry %d: got %d, expected %d\n", i, result_data[i], expected[i]);
      return 1;
    }
  }
  std::printf("lowbit consumer: ok (kernel %s)\n", lowbit::KernelName(context.ResolvedKernel()));
  return 0;
}
