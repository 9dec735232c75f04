// lowbit's GEMM throughput for every available kernel, and every installed peer's on the same
// cases: lowbit/<kernel>/<M>x<N>x<K>/threads:<t> with the uint8 -> uint8
// QuantizeDownInt32ByFixedPoint + saturating cast pipeline.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_common.h"
#include "public/lowbit.h"

namespace lowbit_bench {
namespace {

struct LowbitProblem {
  explicit LowbitProblem(const Shape& s) : operands(s) {}
  Uint8Operands operands;
  lowbit::Context context;
  std::unique_ptr<lowbit::PrepackedRhs> prepacked_rhs;
};

// With `prepack`, the rhs (the weights) is packed once here, outside the timed calls.
std::function<void()> SetUpLowbit(lowbit::Kernel kernel, bool prepack, const Case& c) {
  const Shape& s = c.shape;
  auto problem = std::make_shared<LowbitProblem>(s);
  problem->context.set_kernel(kernel);
  problem->context.set_max_num_threads(c.threads);
  const lowbit::MatrixMap<const std::uint8_t> rhs(problem->operands.rhs.data(), s.depth, s.cols,
                                                  lowbit::Order::kColMajor);
  if (prepack)
    problem->prepacked_rhs = std::make_unique<lowbit::PrepackedRhs>(&problem->context, rhs);
  return [problem, s, rhs] {
    const lowbit::MatrixMap<const std::uint8_t> lhs(problem->operands.lhs.data(), s.rows, s.depth,
                                                    lowbit::Order::kRowMajor);
    lowbit::MatrixMap<std::uint8_t> result(problem->operands.result.data(), s.rows, s.cols,
                                           lowbit::Order::kColMajor);
    const auto pipeline =
        std::make_tuple(lowbit::OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 15, 128},
                        lowbit::OutputStageSaturatingCastToUint8{});
    if (problem->prepacked_rhs != nullptr) {
      lowbit::GemmWithOutputPipeline(&problem->context, lhs, *problem->prepacked_rhs, &result, -128,
                                     -128, pipeline);
    } else {
      lowbit::GemmWithOutputPipeline(&problem->context, lhs, rhs, &result, -128, -128, pipeline);
    }
  };
}

void RegisterLowbit() {
  for (lowbit::Kernel kernel : lowbit::AvailableKernels()) {
    for (bool prepack : {false, true}) {
      RegisterCases("lowbit",
                    std::string(lowbit::KernelName(kernel)) + (prepack ? "_prepacked" : ""),
                    [kernel, prepack](const Case& c) { return SetUpLowbit(kernel, prepack, c); });
    }
  }
}

}  // namespace
}  // namespace lowbit_bench

int main(int argc, char** argv) {
  lowbit_bench::RegisterLowbit();
  for (auto register_peer : lowbit_bench::PeerRegistrations()) register_peer();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
