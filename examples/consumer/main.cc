// The smallest lowbit program: a uint8 GEMM with a requantizing pipeline, checked by hand.
#include <lowbit/lowbit.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <tuple>

int main() {
  // The headers this program was compiled with and the library it runs must be the same version.
  char header_version[32];
  std::snprintf(header_version, sizeof header_version, "%d.%d.%d", LOWBIT_VERSION_MAJOR,
                LOWBIT_VERSION_MINOR, LOWBIT_VERSION_PATCH);
  if (std::strcmp(header_version, lowbit::Version()) != 0) {
    std::printf("headers %s, library %s\n", header_version, lowbit::Version());
    return 1;
  }
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
  std::printf("lowbit %s consumer: ok (kernel %s)\n", lowbit::Version(),
              lowbit::KernelName(context.ResolvedKernel()));
  return 0;
}
