// Runs one of gemm_bench's lowbit cases a fixed number of times, for tools that count rather
// than time: `valgrind --tool=callgrind build/release/bench/gemm_repeat avx2 64 64 64 1000` gives
// the same instruction counts on every run, which this shared host's timings cannot.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/bench_common.h"
#include "bench/lowbit_cases.h"
#include "lowbit/lowbit.h"

namespace {

int Usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s SETTING M N K [ITERATIONS=1000]\n"
               "runs gemm_bench's lowbit/SETTING/MxNxK/threads:1 ITERATIONS times. SETTING is one "
               "of this CPU's:\n",
               program);
  const char* separator = "";
  for (const lowbit_bench::LowbitSetting& setting : lowbit_bench::LowbitSettings()) {
    std::fprintf(stderr, "%s%s", separator, setting.name.c_str());
    separator = ", ";
  }
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5 || argc > 6) return Usage(argv[0]);
  const std::string setting = argv[1];
  // M x N x K, as in the case names.
  const lowbit_bench::Shape shape{std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4])};
  const int iterations = argc > 5 ? std::atoi(argv[5]) : 1000;
  if (shape.rows < 1 || shape.cols < 1 || shape.depth < 1 || iterations < 1) {
    std::fprintf(stderr, "M, N, K and ITERATIONS must be positive integers\n");
    return Usage(argv[0]);
  }
  std::function<void()> gemm;
  for (const lowbit_bench::LowbitSetting& known : lowbit_bench::LowbitSettings()) {
    if (known.name != setting) continue;
    gemm = lowbit_bench::SetUpLowbit(known, {shape, 1});
  }
  if (!gemm) {
    std::fprintf(stderr, "no lowbit setting '%s' on this CPU\n", setting.c_str());
    return Usage(argv[0]);
  }
  for (int i = 0; i < iterations; ++i) gemm();
  std::printf("ran lowbit/%s/%dx%dx%d/threads:1 %d times\n", setting.c_str(), shape.rows,
              shape.cols, shape.depth, iterations);
  return 0;
}
