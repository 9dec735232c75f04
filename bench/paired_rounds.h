// Paired rounds: the speed of cases of one shape relative to a baseline case, from rounds in which
// every case runs once, in a new random order each round (gemm_bench --pairs=...). Shared hosts
// change speed within seconds (the AMX host of doc/performance.md by up to three times, as other
// work comes and goes), and ratios of medians taken seconds apart move with that; a round's cases
// run within a fraction of a second of each other, so each round's ratios see one phase.
#ifndef LOWBIT_BENCH_PAIRED_ROUNDS_H_
#define LOWBIT_BENCH_PAIRED_ROUNDS_H_

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "bench/bench_common.h"

namespace lowbit_bench {

struct PairedRoundsOptions {
  // The cases, by regular expressions over their names, in order: in each shape (<M>x<N>x<K>
  // and thread count) the first case selected is the baseline.
  std::vector<std::string> patterns;
  int rounds = 40;
  // About how long each case runs in a round.
  double seconds = 0.02;
};

// Parses --pairs=PATTERN[,PATTERN...] and the optional --pair_rounds=N and --pair_seconds=S.
// Returns false, with a message in `error`, for any other argument or a malformed value.
inline bool ParsePairedRoundsOptions(int argc, char** argv, PairedRoundsOptions* options,
                                     std::string* error) {
  const auto value_of = [](const std::string& argument, const std::string& flag,
                           std::string* value) {
    if (argument.rfind(flag + "=", 0) != 0) return false;
    *value = argument.substr(flag.size() + 1);
    return true;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    std::string value;
    if (value_of(argument, "--pairs", &value)) {
      std::size_t start = 0;
      while (start <= value.size()) {
        const std::size_t comma = value.find(',', start);
        const std::size_t end = comma == std::string::npos ? value.size() : comma;
        if (end > start) options->patterns.push_back(value.substr(start, end - start));
        start = end + 1;
      }
    } else if (value_of(argument, "--pair_rounds", &value)) {
      options->rounds = std::atoi(value.c_str());
      if (options->rounds < 1) {
        *error = "--pair_rounds must be a positive integer, got '" + value + "'";
        return false;
      }
    } else if (value_of(argument, "--pair_seconds", &value)) {
      options->seconds = std::atof(value.c_str());
      if (!(options->seconds > 0)) {
        *error = "--pair_seconds must be a positive number of seconds, got '" + value + "'";
        return false;
      }
    } else {
      *error =
          "with --pairs, only --pair_rounds and --pair_seconds may follow, got '" + argument + "'";
      return false;
    }
  }
  if (options->patterns.empty()) {
    *error = "--pairs needs at least one regular expression over case names";
    return false;
  }
  return true;
}

namespace paired_rounds_detail {

// The case's <M>x<N>x<K>/threads:<t>, after its library and setting (the whole name without them).
inline std::string ShapeOf(const std::string& name) {
  std::string library, setting, shape;
  return SplitCaseName(name, &library, &setting, &shape) ? shape : name;
}

// The value at fraction `at` of the sorted `values`.
inline double Quantile(std::vector<double> values, double at) {
  std::sort(values.begin(), values.end());
  return values[static_cast<std::size_t>(at * static_cast<double>(values.size() - 1) + 0.5)];
}

// Seconds per call of `gemm` over `calls` calls.
inline double SecondsPerCall(const std::function<void()>& gemm, int calls) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    gemm();
    benchmark::ClobberMemory();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
}

// One shape's cases: set up, calibrated to about options.seconds a round, run in the rounds (after
// two that are not recorded, in which threads and timed choices settle), then reported.
inline void RunShape(const std::vector<const RegisteredCase*>& cases,
                     const PairedRoundsOptions& options) {
  constexpr int kUnrecordedRounds = 2;
  const int count = static_cast<int>(cases.size());
  std::vector<std::function<void()>> gemms;
  std::vector<int> calls(count);
  for (int i = 0; i < count; ++i) {
    gemms.push_back(cases[i]->setup(cases[i]->c));
    // The first call pays for what a context sets up once (its scratch, its threads).
    SecondsPerCall(gemms[i], 1);
    int trial = 1;
    double seconds = SecondsPerCall(gemms[i], trial);
    while (seconds * trial < options.seconds / 4 && trial < (1 << 20)) {
      trial *= 4;
      seconds = SecondsPerCall(gemms[i], trial);
    }
    calls[i] = std::max(1, static_cast<int>(options.seconds / seconds));
  }
  std::vector<std::vector<double>> seconds(count);
  std::vector<int> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 random(1);
  for (int round = 0; round < kUnrecordedRounds + options.rounds; ++round) {
    std::shuffle(order.begin(), order.end(), random);
    for (const int i : order) {
      const double per_call = SecondsPerCall(gemms[i], calls[i]);
      if (round >= kUnrecordedRounds) seconds[i].push_back(per_call);
    }
  }
  const Shape& shape = cases[0]->c.shape;
  const double ops = 2.0 * shape.rows * shape.cols * shape.depth;
  std::printf("%s\n", ShapeOf(cases[0]->name).c_str());
  std::printf("  %-48s %10s   %s\n", "case", "GOPS", "speed / baseline: median [quartiles]");
  for (int i = 0; i < count; ++i) {
    std::vector<double> gops, ratios;
    for (int round = 0; round < options.rounds; ++round) {
      gops.push_back(ops / seconds[i][round] / 1e9);
      ratios.push_back(seconds[0][round] / seconds[i][round]);
    }
    std::printf("  %-48s %10.1f   ", cases[i]->name.c_str(), Quantile(gops, 0.5));
    if (i == 0) {
      std::printf("baseline\n");
    } else {
      std::printf("%.3f [%.3f, %.3f]\n", Quantile(ratios, 0.5), Quantile(ratios, 0.25),
                  Quantile(ratios, 0.75));
    }
  }
  std::fflush(stdout);
}

}  // namespace paired_rounds_detail

// Runs the registered cases that options.patterns select, shape by shape. Returns a process exit
// status: 1, with a message, if a pattern is no regular expression or selects nothing.
inline int RunPairedRounds(const PairedRoundsOptions& options) {
  std::vector<const RegisteredCase*> selected;
  for (const std::string& pattern : options.patterns) {
    std::regex expression;
    try {
      expression = std::regex(pattern);
    } catch (const std::regex_error& e) {
      std::fprintf(stderr, "--pairs: '%s' is not a regular expression: %s\n", pattern.c_str(),
                   e.what());
      return 1;
    }
    const std::size_t before = selected.size();
    for (const RegisteredCase& c : RegisteredCases()) {
      if (std::regex_search(c.name, expression) &&
          std::find(selected.begin(), selected.end(), &c) == selected.end()) {
        selected.push_back(&c);
      }
    }
    if (selected.size() == before) {
      std::fprintf(stderr, "--pairs: '%s' selects no case that is not selected already\n",
                   pattern.c_str());
      return 1;
    }
  }
  std::vector<std::string> shapes;
  for (const RegisteredCase* c : selected) {
    const std::string shape = paired_rounds_detail::ShapeOf(c->name);
    if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) shapes.push_back(shape);
  }
  std::printf("Paired rounds: %d, each case about %g s a round, in a new random order each round\n",
              options.rounds, options.seconds);
  for (const std::string& shape : shapes) {
    std::vector<const RegisteredCase*> cases;
    for (const RegisteredCase* c : selected) {
      if (paired_rounds_detail::ShapeOf(c->name) == shape) cases.push_back(c);
    }
    paired_rounds_detail::RunShape(cases, options);
  }
  return 0;
}

}  // namespace lowbit_bench

#endif  // LOWBIT_BENCH_PAIRED_ROUNDS_H_
