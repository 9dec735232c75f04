// The bit-depth accuracy sweep shared by the lowbit-accuracy tool and its test suite: requantized
// GEMMs against the exact 8-bit result, summarized as bias, RMS and max error per depth, with the
// range of the exact results to scale them by.
#ifndef LOWBIT_TOOLS_ACCURACY_H_
#define LOWBIT_TOOLS_ACCURACY_H_

#include <cstdint>
#include <vector>

#include "lowbit/lowbit.h"

namespace lowbit {
namespace accuracy {

// kUniform: every value uniform over [0, 255]. kClumped: lhs like post-ReLU activations,
// round(|N(0, 20^2)|) capped at 255 (most values small, many zeros); rhs like weights bunched
// off the zero point, round(N(148, 6^2)) clamped to [0, 255]. Both use lhs_offset 0 and
// rhs_offset -128 (zero points 0 and 128).
enum class Data { kUniform, kClumped };

const char* DataName(Data data);

struct Setting {
  int lhs_bits;
  int rhs_bits;
  BitDepthRounding rounding;
};

// Errors of the requantized result minus the exact 8-bit result, in accumulator units, over
// every entry of every trial. Trials are independent (fresh data, another seed), so the
// standard error of the bias is the spread of the trials' mean errors over sqrt(trials).
// exact_range, max - min of the exact results over the same entries, gives the errors a scale:
// an 8-bit output spread over exactly that range has steps of exact_range / 255.
struct Point {
  Setting setting;
  Data data;
  int depth;
  double bias;
  double bias_standard_error;
  double rms;
  double max;
  std::int64_t exact_range;
};

struct SweepOptions {
  std::vector<Setting> settings;
  std::vector<Data> data;
  std::vector<int> depths;
  int trials = 64;
  // Each trial is a rows x depth by depth x cols GEMM.
  int rows = 4;
  int cols = 4;
  std::uint32_t seed = 1;
};

// One Point per data, depth and setting, in that nesting order. The exact result of each trial's
// data is computed once and shared by every setting.
std::vector<Point> Sweep(Context* context, const SweepOptions& options);

}  // namespace accuracy
}  // namespace lowbit

#endif  // LOWBIT_TOOLS_ACCURACY_H_
