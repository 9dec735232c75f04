// The bit-depth accuracy sweep (tools/accuracy.h).
#include "tools/accuracy.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace lowbit {
namespace accuracy {
namespace {

constexpr std::int32_t kLhsOffset = 0;
constexpr std::int32_t kRhsOffset = -128;

std::uint8_t ClampToUint8(double value) {
  return static_cast<std::uint8_t>(std::min(std::max(std::round(value), 0.0), 255.0));
}

void Fill(Data data, bool is_lhs, std::mt19937* random, std::vector<std::uint8_t>* values) {
  std::uniform_int_distribution<int> uniform(0, 255);
  std::normal_distribution<double> activation(0.0, 20.0);
  std::normal_distribution<double> weight(148.0, 6.0);
  for (auto& value : *values) {
    if (data == Data::kUniform) {
      value = static_cast<std::uint8_t>(uniform(*random));
    } else {
      value = ClampToUint8(is_lhs ? std::abs(activation(*random)) : weight(*random));
    }
  }
}

struct Accumulated {
  double sum_of_trial_means = 0;
  double sum_of_squared_trial_means = 0;
  double sum_of_squares = 0;
  double max = 0;
};

}  // namespace

const char* DataName(Data data) { return data == Data::kUniform ? "uniform" : "clumped"; }

std::vector<Point> Sweep(Context* context, const SweepOptions& options) {
  std::vector<Point> points;
  const int rows = options.rows, cols = options.cols, trials = options.trials;
  const double entries = static_cast<double>(rows) * cols;
  for (Data data : options.data) {
    for (int depth : options.depths) {
      std::vector<Accumulated> accumulated(options.settings.size());
      std::vector<std::uint8_t> lhs_values(static_cast<std::size_t>(rows) * depth);
      std::vector<std::uint8_t> rhs_values(static_cast<std::size_t>(depth) * cols);
      std::vector<std::int32_t> exact(static_cast<std::size_t>(rows) * cols);
      std::vector<std::int32_t> approximate(exact.size());
      std::int32_t min_exact = std::numeric_limits<std::int32_t>::max();
      std::int32_t max_exact = std::numeric_limits<std::int32_t>::min();
      for (int trial = 0; trial < trials; ++trial) {
        std::seed_seq seeds{options.seed, static_cast<std::uint32_t>(data),
                            static_cast<std::uint32_t>(depth), static_cast<std::uint32_t>(trial)};
        std::mt19937 random(seeds);
        Fill(data, true, &random, &lhs_values);
        Fill(data, false, &random, &rhs_values);
        const MatrixMap<const std::uint8_t> lhs(lhs_values.data(), rows, depth, Order::kRowMajor);
        const MatrixMap<const std::uint8_t> rhs(rhs_values.data(), depth, cols, Order::kColMajor);
        MatrixMap<std::int32_t> exact_map(exact.data(), rows, cols, Order::kRowMajor);
        MatrixMap<std::int32_t> approximate_map(approximate.data(), rows, cols, Order::kRowMajor);
        Gemm(context, lhs, rhs, &exact_map, kLhsOffset, kRhsOffset);
        const auto [trial_min, trial_max] = std::minmax_element(exact.begin(), exact.end());
        min_exact = std::min(min_exact, *trial_min);
        max_exact = std::max(max_exact, *trial_max);
        const std::uint32_t trial_seed = static_cast<std::uint32_t>(random());
        for (std::size_t s = 0; s < options.settings.size(); ++s) {
          const Setting& setting = options.settings[s];
          Gemm(context, lhs, rhs, &approximate_map, kLhsOffset, kRhsOffset,
               BitDepthParams{setting.lhs_bits, setting.rhs_bits, setting.rounding, trial_seed,
                              BitDepthMode::kRequantize});
          double sum = 0;
          Accumulated& into = accumulated[s];
          for (std::size_t i = 0; i < exact.size(); ++i) {
            const double error = static_cast<double>(approximate[i]) - exact[i];
            sum += error;
            into.sum_of_squares += error * error;
            into.max = std::max(into.max, std::abs(error));
          }
          into.sum_of_trial_means += sum / entries;
          into.sum_of_squared_trial_means += (sum / entries) * (sum / entries);
        }
      }
      for (std::size_t s = 0; s < options.settings.size(); ++s) {
        const Accumulated& from = accumulated[s];
        const double bias = from.sum_of_trial_means / trials;
        const double variance =
            trials > 1 ? std::max(0.0, (from.sum_of_squared_trial_means - trials * bias * bias) /
                                           (trials - 1))
                       : 0.0;
        points.push_back(Point{options.settings[s], data, depth, bias, std::sqrt(variance / trials),
                               std::sqrt(from.sum_of_squares / (entries * trials)), from.max,
                               std::int64_t{max_exact} - min_exact});
      }
    }
  }
  return points;
}

}  // namespace accuracy
}  // namespace lowbit
