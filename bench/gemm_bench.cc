// lowbit's GEMM throughput for every available kernel, and every installed peer's on the same
// cases: lowbit/<kernel>/<M>x<N>x<K>/threads:<t> with the uint8 -> uint8
// QuantizeDownInt32ByFixedPoint + saturating cast pipeline; and lowbit's narrow settings
// (lowbit/<kernel>_<setting>/...), requantizing inside the timed call. The run ends with a
// summary of the medians side by side, with ratios (bench/summary_reporter.h).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_common.h"
#include "bench/summary_reporter.h"
#include "public/lowbit.h"

namespace lowbit_bench {
namespace {

struct LowbitProblem {
  explicit LowbitProblem(const Shape& s) : operands(s) {}
  Uint8Operands operands;
  lowbit::Context context;
  std::unique_ptr<lowbit::PrepackedRhs> prepacked_rhs;
};

// A narrow setting: its name in the benchmark, its parameters, and the instruction ceiling
// (bench/ceiling_x86.cc) of its AVX2 kernel.
struct BitDepthSetting {
  const char* name;
  lowbit::BitDepthParams params;
  const char* ceiling;
};

// The narrow targets: requantized 7 x 5 and 4 x 4 bits, and 7-bit lhs data declared as
// such against a full 8-bit rhs (exact); the same run's 8-bit cases are the baseline.
const BitDepthSetting kBitDepthSettings[] = {
    {"L7R5",
     {7, 5, lowbit::BitDepthRounding::kAuto, 1, lowbit::BitDepthMode::kRequantize},
     "vpmaddubsw_vpaddw"},
    {"L4R4",
     {4, 4, lowbit::BitDepthRounding::kAuto, 1, lowbit::BitDepthMode::kRequantize},
     "vpmaddubsw_vpaddw"},
    {"declared_L7R8",
     {7, 8, lowbit::BitDepthRounding::kNearest, 0, lowbit::BitDepthMode::kDeclaredRange},
     "vpmaddubsw_vpmaddwd_vpaddd"},
};

// The ceiling each AVX2 case of a single thread is measured against: the 8-bit GEMM's and the
// narrow settings'. (Prepacked weights go through other tiles, the matrix-vector one a
// pmaddubsw tile on a memory-bound stream.)
std::map<std::string, std::string> Avx2Ceilings() {
  std::map<std::string, std::string> ceilings{{"avx2", "vpmaddwd_vpaddd"}};
  for (const BitDepthSetting& setting : kBitDepthSettings) {
    ceilings[std::string("avx2_") + setting.name] = setting.ceiling;
  }
  return ceilings;
}

// With `prepack`, the rhs (the weights) is packed once here, outside the timed calls. With
// `bit_depth`, the GEMM is narrow; in declared-range mode the lhs is made to fit its bits.
std::function<void()> SetUpLowbit(lowbit::Kernel kernel, bool prepack, const Case& c,
                                  const lowbit::BitDepthParams* bit_depth = nullptr) {
  const Shape& s = c.shape;
  auto problem = std::make_shared<LowbitProblem>(s);
  if (bit_depth != nullptr && bit_depth->mode == lowbit::BitDepthMode::kDeclaredRange) {
    for (std::uint8_t& value : problem->operands.lhs) value >>= 8 - bit_depth->lhs_bits;
    for (std::uint8_t& value : problem->operands.rhs) value >>= 8 - bit_depth->rhs_bits;
  }
  problem->context.set_kernel(kernel);
  problem->context.set_max_num_threads(c.threads);
  const lowbit::MatrixMap<const std::uint8_t> rhs(problem->operands.rhs.data(), s.depth, s.cols,
                                                  lowbit::Order::kColMajor);
  if (prepack)
    problem->prepacked_rhs = std::make_unique<lowbit::PrepackedRhs>(&problem->context, rhs);
  const lowbit::BitDepthParams narrow =
      bit_depth != nullptr ? *bit_depth : lowbit::BitDepthParams{};
  return [problem, s, rhs, narrow, bit_depth] {
    const lowbit::MatrixMap<const std::uint8_t> lhs(problem->operands.lhs.data(), s.rows, s.depth,
                                                    lowbit::Order::kRowMajor);
    lowbit::MatrixMap<std::uint8_t> result(problem->operands.result.data(), s.rows, s.cols,
                                           lowbit::Order::kColMajor);
    const auto pipeline =
        std::make_tuple(lowbit::OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 15, 128},
                        lowbit::OutputStageSaturatingCastToUint8{});
    if (bit_depth != nullptr) {
      lowbit::GemmWithOutputPipeline(&problem->context, lhs, rhs, &result, -128, -128, pipeline,
                                     narrow);
    } else if (problem->prepacked_rhs != nullptr) {
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
    for (const BitDepthSetting& setting : kBitDepthSettings) {
      RegisterCases("lowbit", std::string(lowbit::KernelName(kernel)) + "_" + setting.name,
                    [kernel, &setting](const Case& c) {
                      return SetUpLowbit(kernel, false, c, &setting.params);
                    },
                    {{{1024, 1024, 1024}, 1}, {{256, 256, 256}, 1}});
    }
  }
}

}  // namespace
}  // namespace lowbit_bench

int main(int argc, char** argv) {
  lowbit_bench::RegisterLowbit();
  for (auto register_cases : lowbit_bench::Registrations()) register_cases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const lowbit::Kernel best = lowbit::Context().ResolvedKernel();
  lowbit_bench::SummaryReporter reporter(
      benchmark::CreateDefaultDisplayReporter(), lowbit::KernelName(best),
      best == lowbit::Kernel::kAvx2 ? lowbit_bench::Avx2Ceilings()
                                    : std::map<std::string, std::string>{});
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
