// The quantization toolkit's throughput: the GEMM with the quantized add's output stage (a residual
// branch) against the same GEMM without it, on the fastest kernel, and the elementwise
// QuantizedAdd, Quantize and Dequantize in GB/s (bytes read and written).
//   gemm/<kernel>/<M>x<N>x<K>             QuantizeDown and the saturating cast, as in gemm_bench
//   gemm/<kernel>_residual/<M>x<N>x<K>    the same with the residual stage before the cast, the
//                                         residual stored in the result's order
//   gemm/<kernel>_residual_across/...     the residual stored in the other order (gathered)
//   add/<count>, quantize/<count>, dequantize/<count>   one thread, uint8 data
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench/bench_common.h"
#include "lowbit/lowbit.h"

namespace lowbit_bench {
namespace {

enum class Residual { kNone, kAlong, kAcross };

// The GEMM's result (column-major, as in gemm_bench) is quantized as the add's lhs, then the
// residual is added into an output of a coarser scale.
void RegisterGemm(lowbit::Kernel kernel, Residual residual) {
  const std::string setting = std::string(lowbit::KernelName(kernel)) +
                              (residual == Residual::kNone    ? ""
                               : residual == Residual::kAlong ? "_residual"
                                                              : "_residual_across");
  RegisterCases(
      "gemm", setting,
      [kernel, residual](const Case& c) -> std::function<void()> {
        const Shape s = c.shape;
        auto operands = std::make_shared<Uint8Operands>(s);
        auto residual_data = std::make_shared<std::vector<std::uint8_t>>(
            RandomValues<std::uint8_t>(static_cast<std::size_t>(s.rows) * s.cols, 0, 255, 3));
        auto context = std::make_shared<lowbit::Context>();
        context->set_kernel(kernel);
        context->set_max_num_threads(c.threads);
        const lowbit::QuantizedAddPlan plan = lowbit::MakeQuantizedAddPlan(
            {lowbit::QuantizedType::Uint8(), {{0.02, 128}}, lowbit::ChannelAxis::kRow},
            {lowbit::QuantizedType::Uint8(), {{0.03, 120}}, lowbit::ChannelAxis::kRow},
            {0.04, 125});
        const lowbit::Order residual_order =
            residual == Residual::kAcross ? lowbit::Order::kRowMajor : lowbit::Order::kColMajor;
        return [operands, residual_data, context, plan, residual, residual_order, s] {
          const lowbit::MatrixMap<const std::uint8_t> lhs(operands->lhs.data(), s.rows, s.depth,
                                                          lowbit::Order::kRowMajor);
          const lowbit::MatrixMap<const std::uint8_t> rhs(operands->rhs.data(), s.depth, s.cols,
                                                          lowbit::Order::kColMajor);
          lowbit::MatrixMap<std::uint8_t> result(operands->result.data(), s.rows, s.cols,
                                                 lowbit::Order::kColMajor);
          const lowbit::OutputStageQuantizeDownInt32ByFixedPoint requantize{1 << 30, 15, 128};
          if (residual == Residual::kNone) {
            lowbit::GemmWithOutputPipeline(
                context.get(), lhs, rhs, &result, -128, -128,
                std::make_tuple(requantize, lowbit::OutputStageSaturatingCastToUint8{}));
            return;
          }
          const lowbit::MatrixMap<const std::uint8_t> residual_map(residual_data->data(), s.rows,
                                                                   s.cols, residual_order);
          lowbit::GemmWithOutputPipeline(
              context.get(), lhs, rhs, &result, -128, -128,
              std::make_tuple(requantize, lowbit::MakeOutputStageQuantizedAdd(plan, residual_map),
                              lowbit::OutputStageSaturatingCastToUint8{}));
        };
      },
      {{{1024, 1024, 1024}, 1}, {{8, 1024, 1024}, 1}});
}

// Registers `name`/<count> for buffers of 64 Ki entries (in L2) and 4 Mi entries (in memory),
// reporting `bytes_per_entry` read and written per entry.
template <typename Setup>
void RegisterElementwise(const std::string& name, int bytes_per_entry, Setup setup) {
  for (std::size_t count : {std::size_t{1} << 16, std::size_t{1} << 22}) {
    benchmark::RegisterBenchmark(
        (name + "/" + std::to_string(count)).c_str(),
        [count, bytes_per_entry, setup](benchmark::State& state) {
          const std::function<void()> run = setup(count);
          for (auto _ : state) {
            run();
            benchmark::ClobberMemory();
          }
          state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                                  static_cast<std::int64_t>(count) * bytes_per_entry);
        })
        ->Unit(benchmark::kMicrosecond);
  }
}

void RegisterElementwiseCases() {
  const lowbit::QuantizationParams params{0.05, 128};
  RegisterElementwise("add", 3, [](std::size_t count) -> std::function<void()> {
    const lowbit::QuantizedAddPlan plan = lowbit::MakeQuantizedAddPlan(
        {lowbit::QuantizedType::Uint8(), {{0.02, 128}}, lowbit::ChannelAxis::kRow},
        {lowbit::QuantizedType::Uint8(), {{0.03, 120}}, lowbit::ChannelAxis::kRow}, {0.04, 125});
    auto lhs =
        std::make_shared<std::vector<std::uint8_t>>(RandomValues<std::uint8_t>(count, 0, 255, 1));
    auto rhs =
        std::make_shared<std::vector<std::uint8_t>>(RandomValues<std::uint8_t>(count, 0, 255, 2));
    auto out = std::make_shared<std::vector<std::uint8_t>>(count);
    return [plan, lhs, rhs, out] {
      lowbit::QuantizedAdd(plan, lhs->data(), rhs->data(), lhs->size(), out->data());
    };
  });
  RegisterElementwise("quantize", 5, [params](std::size_t count) -> std::function<void()> {
    auto in = std::make_shared<std::vector<float>>(count);
    for (std::size_t i = 0; i < count; ++i) (*in)[i] = static_cast<float>(i % 200) * 0.05f - 5;
    auto out = std::make_shared<std::vector<std::uint8_t>>(count);
    return [params, in, out] { lowbit::Quantize(in->data(), in->size(), params, out->data()); };
  });
  RegisterElementwise("dequantize", 5, [params](std::size_t count) -> std::function<void()> {
    auto in =
        std::make_shared<std::vector<std::uint8_t>>(RandomValues<std::uint8_t>(count, 0, 255, 4));
    auto out = std::make_shared<std::vector<float>>(count);
    return [params, in, out] { lowbit::Dequantize(in->data(), in->size(), params, out->data()); };
  });
}

}  // namespace
}  // namespace lowbit_bench

int main(int argc, char** argv) {
  const lowbit::Kernel best = lowbit::Context().ResolvedKernel();
  for (auto residual : {lowbit_bench::Residual::kNone, lowbit_bench::Residual::kAlong,
                        lowbit_bench::Residual::kAcross}) {
    lowbit_bench::RegisterGemm(best, residual);
  }
  lowbit_bench::RegisterElementwiseCases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
