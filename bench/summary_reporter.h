// After the run, the suite's medians side by side (to stderr, so that --benchmark_format=json
// output stays valid): every library on each 8-bit case with lowbit's ratio to each peer, each
// narrow setting against lowbit's 8-bit GEMM, each lowbit case as a fraction of its instruction
// ceiling, of its tile's bare step and of its tile alone on the case's packed operands
// (bench/ceiling_x86.cc) measured in the same run, and two threads' speedup over one beside the
// ceilings'.
#ifndef LOWBIT_BENCH_SUMMARY_REPORTER_H_
#define LOWBIT_BENCH_SUMMARY_REPORTER_H_

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/bench_common.h"

namespace lowbit_bench {

class SummaryReporter : public benchmark::BenchmarkReporter {
 public:
  // The ceilings (bench/ceiling_x86.cc) a lowbit setting is measured against, by name: the bare
  // arithmetic of its kernel, and its tile's whole step (both run the 1024^3 case's work); and
  // its tile called alone on the operands of the case's own shape, where there is such a case.
  struct Ceilings {
    std::map<std::string, std::string> arithmetic;
    std::map<std::string, std::string> tile_step;
    std::map<std::string, std::string> tile_in_blocks;
  };

  // `display` prints the runs as --benchmark_format asks. `lowbit_kernel` is the kernel whose
  // cases are compared (the best one on this CPU).
  SummaryReporter(benchmark::BenchmarkReporter* display, std::string lowbit_kernel,
                  Ceilings ceilings)
      : display_(display), kernel_(std::move(lowbit_kernel)), ceilings_(std::move(ceilings)) {}

  bool ReportContext(const Context& context) override { return display_->ReportContext(context); }

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const auto gops = run.counters.find("GOPS");
      if (run.error_occurred || gops == run.counters.end()) continue;
      Samples& samples = samples_[run.run_name.str()];
      if (run.run_type == Run::RT_Iteration) {
        samples.iterations.push_back(gops->second.value);
      } else if (run.aggregate_name == "median") {
        samples.median = gops->second.value;
        samples.has_median = true;
      }
    }
    display_->ReportRuns(runs);
  }

  void Finalize() override {
    display_->Finalize();
    Print();
  }

 private:
  struct Samples {
    std::vector<double> iterations;
    double median = 0;
    bool has_median = false;
  };

  // The case's median GOPS (Google Benchmark's median aggregate, or the median of the
  // repetitions it passed on), or a negative value if the case did not run.
  double Median(const std::string& name) const {
    const auto found = samples_.find(name);
    if (found == samples_.end()) return -1;
    if (found->second.has_median) return found->second.median;
    std::vector<double> values = found->second.iterations;
    if (values.empty()) return -1;
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  }

  // <M>x<N>x<K>/threads:<t> in the order of the suite: by threads, then by work, then by M.
  static std::tuple<int, double, int> ShapeOrder(const std::string& shape) {
    int rows = 0, cols = 0, depth = 0, threads = 0;
    std::sscanf(shape.c_str(), "%dx%dx%d/threads:%d", &rows, &cols, &depth, &threads);
    return {threads, static_cast<double>(rows) * cols * depth, rows};
  }

  void Print() const {
    std::vector<std::string> shapes, peers, narrow;
    const auto add = [](std::vector<std::string>& list, const std::string& item) {
      if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
    };
    for (const auto& entry : samples_) {
      std::string library, setting, shape;
      if (!SplitCaseName(entry.first, &library, &setting, &shape)) continue;
      if (library == "lowbit" && setting == kernel_) add(shapes, shape);
      if (library != "lowbit" && library != "ceiling") add(peers, library + "/" + setting);
      if (library == "lowbit" && setting.rfind(kernel_ + "_", 0) == 0 &&
          setting != kernel_ + "_prepacked") {
        add(narrow, setting);
      }
    }
    std::sort(shapes.begin(), shapes.end(), [](const std::string& a, const std::string& b) {
      return ShapeOrder(a) < ShapeOrder(b);
    });
    std::FILE* out = stderr;
    std::fprintf(out,
                 "\nSummary: median GOPS; (x) = lowbit %s's ratio to the peer, prepacked to "
                 "prepacked; of ceiling, of step, of tile = the fraction of the same run's "
                 "instruction ceiling, of its tile's bare step and of its tile alone on the "
                 "case's packed operands\n",
                 kernel_.c_str());
    std::fprintf(out, "%-26s %10s %10s", "case", kernel_.c_str(), "prepacked");
    for (const std::string& peer : peers) std::fprintf(out, " %24s", peer.c_str());
    std::fprintf(out, " %10s %8s %8s\n", "of ceiling", "of step", "of tile");
    for (const std::string& shape : shapes) {
      const double plain = Median("lowbit/" + kernel_ + "/" + shape);
      const double prepacked = Median("lowbit/" + kernel_ + "_prepacked/" + shape);
      std::fprintf(out, "%-26s %10.1f %10.1f", shape.c_str(), plain, prepacked);
      for (const std::string& peer : peers) {
        const double gops = Median(peer + "/" + shape);
        const double lowbit = peer.find("prepacked") != std::string::npos ? prepacked : plain;
        if (gops > 0) {
          std::fprintf(out, " %15.1f (%5.2fx)", gops, lowbit / gops);
        } else {
          std::fprintf(out, " %24s", "-");
        }
      }
      PrintFractions(out, kernel_, shape, plain);
      std::fprintf(out, "\n");
    }
    PrintScaling(out);
    if (narrow.empty()) return;
    std::fprintf(out, "\n%-26s %-26s %10s %14s %10s %8s %8s\n", "setting", "case", "GOPS",
                 ("x " + kernel_ + " 8-bit").c_str(), "of ceiling", "of step", "of tile");
    for (const std::string& setting : narrow) {
      for (const std::string& shape : shapes) {
        const double gops = Median("lowbit/" + setting + "/" + shape);
        if (gops < 0) continue;
        std::fprintf(out, "%-26s %-26s %10.1f %13.2fx", setting.c_str(), shape.c_str(), gops,
                     gops / Median("lowbit/" + kernel_ + "/" + shape));
        PrintFractions(out, setting, shape, gops);
        std::fprintf(out, "\n");
      }
    }
  }

  // The case's GOPS as a fraction of each ceiling its setting is measured against, on as many
  // threads, where both ran.
  void PrintFractions(std::FILE* out, const std::string& setting, const std::string& shape,
                      double gops) const {
    const std::size_t threads = shape.find("/threads:");
    const auto fraction = [&](const std::map<std::string, std::string>& names,
                              const std::string& ceiling_shape) {
      const auto name = names.find(setting);
      if (name == names.end() || threads == std::string::npos || gops <= 0) return -1.0;
      const double ceiling = Median("ceiling/" + name->second + "/" + ceiling_shape);
      return ceiling > 0 ? gops / ceiling : -1.0;
    };
    const std::string work_of_1024 =
        threads == std::string::npos ? "" : "1024x1024x1024" + shape.substr(threads);
    const auto print = [out](int width, double value) {
      if (value > 0) {
        std::fprintf(out, " %*.2f", width, value);
      } else {
        std::fprintf(out, " %*s", width, "-");
      }
    };
    print(10, fraction(ceilings_.arithmetic, work_of_1024));
    print(8, fraction(ceilings_.tile_step, work_of_1024));
    print(8, fraction(ceilings_.tile_in_blocks, shape));
  }

  // Two threads over one at 1024^3, for lowbit and for each ceiling measured on both: what the
  // GEMM's scaling is, beside what the host's two cores give bare arithmetic in the same run.
  void PrintScaling(std::FILE* out) const {
    const std::string shape = "/1024x1024x1024/threads:";
    std::vector<std::string> settings = {"lowbit/" + kernel_, "lowbit/" + kernel_ + "_prepacked"};
    for (const auto& entry : samples_) {
      const std::size_t end = entry.first.find(shape + "2");
      if (entry.first.rfind("ceiling/", 0) == 0 && end != std::string::npos) {
        settings.push_back(entry.first.substr(0, end));
      }
    }
    std::string line;
    for (const std::string& setting : settings) {
      const double one = Median(setting + shape + "1"), two = Median(setting + shape + "2");
      if (one <= 0 || two <= 0) continue;
      char ratio[128];
      std::snprintf(ratio, sizeof(ratio), "  %s %.2fx", setting.c_str(), two / one);
      line += ratio;
    }
    if (!line.empty()) std::fprintf(out, "\nTwo threads over one, 1024^3:%s\n", line.c_str());
  }

  benchmark::BenchmarkReporter* display_;
  std::string kernel_;
  Ceilings ceilings_;
  std::map<std::string, Samples> samples_;
};

}  // namespace lowbit_bench

#endif  // LOWBIT_BENCH_SUMMARY_REPORTER_H_
