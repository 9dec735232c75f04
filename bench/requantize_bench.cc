// The requantization pass on its own (lowbit/internal/driver/bit_depth.h, RequantizeLines), as
// the driver runs it while packing an operand of a requantized GEMM: row-major uint8 lines (lhs
// rows, or the columns of a column-major rhs) to 4 bits, on the run of each kernel's ISA (the
// reference and SSE4.1 kernels share the SSE2 baseline run). One thread; the time of a pass over
// 1024 x 1024 values is the time per million, items_per_second counts values.
//   requantize/<kernel>/<lines>x<depth>/<rounding>   rounding: nearest or xorshift
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "lowbit/internal/driver/bit_depth.h"
#include "lowbit/lowbit.h"

namespace lowbit_bench {
namespace {

struct Pass {
  std::vector<std::uint8_t> source;
  std::vector<std::uint8_t> out;
  std::vector<std::int32_t> sums;
  std::vector<std::uint32_t> work;
};

void Register(lowbit::Kernel kernel, int lines, int depth, lowbit::BitDepthRounding rounding) {
  const std::string name =
      std::string("requantize/") + lowbit::KernelName(kernel) + "/" + std::to_string(lines) + "x" +
      std::to_string(depth) + "/" +
      (rounding == lowbit::BitDepthRounding::kNearest ? "nearest" : "xorshift");
  const std::size_t count = static_cast<std::size_t>(lines) * depth;
  auto pass = std::make_shared<Pass>();
  pass->source = RandomValues<std::uint8_t>(count, 0, 255, 5);
  pass->out.resize(count);
  pass->sums.resize(static_cast<std::size_t>(lines));
  const lowbit::internal::MatrixView view{pass->source.data(),
                                          lowbit::internal::ElementType::kUint8,
                                          lines,
                                          depth,
                                          lowbit::Order::kRowMajor,
                                          depth};
  pass->work.resize((lowbit::internal::RequantizeWorkBytes(view) + 3) / 4);
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& state) {
    for (auto _ : state) {
      lowbit::internal::RequantizeLines(kernel, view, 4, rounding, 1,
                                        lowbit::internal::Operand::kLhs, pass->out.data(),
                                        pass->sums.data(), pass->work.data());
      benchmark::DoNotOptimize(pass->out.data());
      benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<std::int64_t>(count) * state.iterations());
  })->UseRealTime();
}

}  // namespace
}  // namespace lowbit_bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  for (lowbit::Kernel kernel : lowbit::AvailableKernels()) {
    for (int size : {256, 1024}) {
      for (lowbit::BitDepthRounding rounding :
           {lowbit::BitDepthRounding::kNearest, lowbit::BitDepthRounding::kXorshift}) {
        lowbit_bench::Register(kernel, size, size, rounding);
      }
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
