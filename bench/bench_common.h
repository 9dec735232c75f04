// What every benchmark in the suite shares, lowbit's and the peers': the shapes, the case names
// (<library>/<setting>/<M>x<N>x<K>/threads:<t>), random operands and the GOPS counter.
#ifndef LOWBIT_BENCH_BENCH_COMMON_H_
#define LOWBIT_BENCH_BENCH_COMMON_H_

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace lowbit_bench {

struct Shape {
  int rows;   // M
  int cols;   // N
  int depth;  // K
};

struct Case {
  Shape shape;
  int threads;
};

inline bool operator==(const Case& a, const Case& b) {
  return a.shape.rows == b.shape.rows && a.shape.cols == b.shape.cols &&
         a.shape.depth == b.shape.depth && a.threads == b.threads;
}

// The shapes of the targets: square sizes, matrix-vector and a small batch, one
// thread, and 1024^3 on two threads.
inline const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {{64, 64, 64}, 1},    {{256, 256, 256}, 1}, {{1024, 1024, 1024}, 1}, {{2048, 2048, 2048}, 1},
      {{1, 1024, 1024}, 1}, {{8, 1024, 1024}, 1}, {{1024, 1024, 1024}, 2}};
  return cases;
}

inline std::string CaseName(const std::string& library, const std::string& setting, const Case& c) {
  return library + "/" + setting + "/" + std::to_string(c.shape.rows) + "x" +
         std::to_string(c.shape.cols) + "x" + std::to_string(c.shape.depth) +
         "/threads:" + std::to_string(c.threads);
}

// CaseName's parts back: the library, the setting and the case (<M>x<N>x<K>/threads:<t>), or
// false for a name without them.
inline bool SplitCaseName(const std::string& name, std::string* library, std::string* setting,
                          std::string* shape) {
  const std::size_t first = name.find('/');
  const std::size_t second = first == std::string::npos ? first : name.find('/', first + 1);
  if (second == std::string::npos) return false;
  *library = name.substr(0, first);
  *setting = name.substr(first + 1, second - first - 1);
  *shape = name.substr(second + 1);
  return true;
}
template <typename Scalar>
std::vector<Scalar> RandomValues(std::size_t count, int min, int max, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> value(min, max);
  std::vector<Scalar> values(count);
  for (auto& v : values) v = static_cast<Scalar>(value(random));
  return values;
}

// The same uint8 operands for every library: lhs rows x depth, rhs depth x cols (the same
// values whichever layout a library reads them in), and room for the rows x cols result.
struct Uint8Operands {
  explicit Uint8Operands(const Shape& s)
      : lhs(RandomValues<std::uint8_t>(static_cast<std::size_t>(s.rows) * s.depth, 0, 255, 1)),
        rhs(RandomValues<std::uint8_t>(static_cast<std::size_t>(s.depth) * s.cols, 0, 255, 2)),
        result(static_cast<std::size_t>(s.rows) * s.cols) {}
  std::vector<std::uint8_t> lhs;
  std::vector<std::uint8_t> rhs;
  std::vector<std::uint8_t> result;
};

// Runs `gemm` for the benchmark's iterations and reports GOPS = 2*M*N*K / second from
// wall-clock time, which counts every thread's work (Google Benchmark's own time column is the
// main thread's CPU time).
inline void RunAndReportGops(benchmark::State& state, const Shape& shape,
                             const std::function<void()>& gemm) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    gemm();
    benchmark::ClobberMemory();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.counters["GOPS"] = 2.0 * shape.rows * shape.cols * shape.depth *
                           static_cast<double>(state.iterations()) / seconds / 1e9;
}

// Every registered case by name, with what sets it up: the paired rounds (bench/paired_rounds.h)
// run them outside Google Benchmark.
struct RegisteredCase {
  std::string name;
  Case c;
  std::function<std::function<void()>(const Case&)> setup;
};
inline std::vector<RegisteredCase>& RegisteredCases() {
  static std::vector<RegisteredCase> cases;
  return cases;
}

// Registers one benchmark per case (by default, Cases()); `setup(case)` prepares operands and
// returns the call to time.
inline void RegisterCases(const std::string& library, const std::string& setting,
                          const std::function<std::function<void()>(const Case&)>& setup,
                          const std::vector<Case>& cases = Cases()) {
  for (const Case& c : cases) {
    RegisteredCases().push_back({CaseName(library, setting, c), c, setup});
    benchmark::RegisterBenchmark(CaseName(library, setting, c).c_str(),
                                 [c, setup](benchmark::State& state) {
                                   const std::function<void()> gemm = setup(c);
                                   RunAndReportGops(state, c.shape, gemm);
                                 })
        ->Unit(benchmark::kMillisecond);
  }
}

// Benchmark files linked in only where what they measure exists (an installed peer, an ISA's
// ceiling) add themselves here; main registers lowbit's cases first, then theirs.
inline std::vector<void (*)()>& Registrations() {
  static std::vector<void (*)()> registrations;
  return registrations;
}
struct Registration {
  explicit Registration(void (*register_cases)()) { Registrations().push_back(register_cases); }
};

}  // namespace lowbit_bench

#endif  // LOWBIT_BENCH_BENCH_COMMON_H_
