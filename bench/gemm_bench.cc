// GEMM throughput: cases named lowbit/<kernel>/<M>x<N>x<K>/threads:<t>, each reporting GOPS =
// 2*M*N*K / seconds, with the uint8 -> uint8 QuantizeDownInt32ByFixedPoint + cast pipeline.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "public/lowbit.h"

namespace {

struct Shape {
  int rows;
  int cols;
  int depth;
};

void BenchmarkGemm(benchmark::State& state, lowbit::Kernel kernel, Shape shape, int threads) {
  std::mt19937 random(1);
  std::uniform_int_distribution<int> value(0, 255);
  std::vector<std::uint8_t> lhs(static_cast<std::size_t>(shape.rows) * shape.depth);
  std::vector<std::uint8_t> rhs(static_cast<std::size_t>(shape.depth) * shape.cols);
  std::vector<std::uint8_t> result(static_cast<std::size_t>(shape.rows) * shape.cols);
  for (auto& v : lhs) v = static_cast<std::uint8_t>(value(random));
  for (auto& v : rhs) v = static_cast<std::uint8_t>(value(random));
  const lowbit::MatrixMap<const std::uint8_t> lhs_map(lhs.data(), shape.rows, shape.depth,
                                                      lowbit::Order::kRowMajor);
  const lowbit::MatrixMap<const std::uint8_t> rhs_map(rhs.data(), shape.depth, shape.cols,
                                                      lowbit::Order::kColMajor);
  lowbit::MatrixMap<std::uint8_t> result_map(result.data(), shape.rows, shape.cols,
                                             lowbit::Order::kColMajor);
  const auto pipeline =
      std::make_tuple(lowbit::OutputStageQuantizeDownInt32ByFixedPoint{1 << 30, 15, 128},
                      lowbit::OutputStageSaturatingCastToUint8{});
  lowbit::Context context;
  context.set_kernel(kernel);
  context.set_max_num_threads(threads);
  // GOPS from wall-clock time, which counts every thread's work; Google Benchmark's own time
  // column is the main thread's CPU time.
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    lowbit::GemmWithOutputPipeline(&context, lhs_map, rhs_map, &result_map, -128, -128, pipeline);
    benchmark::DoNotOptimize(result.data());
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.counters["GOPS"] = 2.0 * shape.rows * shape.cols * shape.depth *
                           static_cast<double>(state.iterations()) / seconds / 1e9;
}

std::string ShapeName(const Shape& shape) {
  return std::to_string(shape.rows) + "x" + std::to_string(shape.cols) + "x" +
         std::to_string(shape.depth);
}

void RegisterAll() {
  const Shape single_thread_shapes[] = {
      {64, 64, 64}, {256, 256, 256}, {1024, 1024, 1024}, {1, 1024, 1024}, {8, 1024, 1024}};
  for (lowbit::Kernel kernel : lowbit::AvailableKernels()) {
    const std::string prefix = std::string("lowbit/") + lowbit::KernelName(kernel) + "/";
    for (const Shape& shape : single_thread_shapes) {
      benchmark::RegisterBenchmark((prefix + ShapeName(shape) + "/threads:1").c_str(),
                                   BenchmarkGemm, kernel, shape, 1)
          ->Unit(benchmark::kMillisecond);
    }
    const Shape big{1024, 1024, 1024};
    benchmark::RegisterBenchmark((prefix + ShapeName(big) + "/threads:2").c_str(), BenchmarkGemm,
                                 kernel, big, 2)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace

int main(int argc, char** argv) {
  RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
