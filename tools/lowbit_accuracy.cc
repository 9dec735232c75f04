// lowbit-accuracy: how far requantized GEMMs at the bit depths you name stray from the exact
// 8-bit result, per rounding strategy and depth; a table, a CSV file and an SVG plot.
// Run with --help for the flags (doc/less-than-8-bit.md has an example).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lowbit/lowbit.h"
#include "tools/accuracy.h"

namespace {

using lowbit::BitDepthRounding;
using lowbit::accuracy::Data;
using lowbit::accuracy::Point;

constexpr char kUsage[] =
    "usage: lowbit-accuracy [--lhs-bits N] [--rhs-bits N] [--rounding LIST] [--depths LIST]\n"
    "                       [--data uniform|clumped] [--seed S] [--trials T]\n"
    "                       [--csv FILE] [--plot FILE.svg] [--plot-units relative|raw]\n"
    "  --lhs-bits, --rhs-bits  bit depths 1..8 (default 7 and 5)\n"
    "  --rounding  comma-separated: nearest, xorshift, addmod, auto (default "
    "nearest,xorshift,addmod)\n"
    "  --depths    comma-separated depths >= 1 (default 16,64,256,1024,4096,8192)\n"
    "  --data      uniform (default) or clumped (doc/less-than-8-bit.md defines both)\n"
    "  --seed      seed of the data and of the rounding sequences (default 1)\n"
    "  --trials    independent GEMMs of 4 x depth x 4 per point (default 64, at least 2)\n"
    "  --csv       write one row per setting, rounding, data and depth\n"
    "  --plot      draw RMS error and |bias| against depth, one colour per rounding\n"
    "  --plot-units  the plot's errors: relative (default), as fractions of the exact results'\n"
    "              range (max - min), or raw, in accumulator units\n";

// A bad command line: the message is printed with the usage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class PlotUnits { kRelative, kRaw };

struct Options {
  int lhs_bits = 7;
  int rhs_bits = 5;
  std::vector<BitDepthRounding> roundings = {
      BitDepthRounding::kNearest, BitDepthRounding::kXorshift, BitDepthRounding::kAddMod97};
  std::vector<int> depths = {16, 64, 256, 1024, 4096, 8192};
  Data data = Data::kUniform;
  std::uint32_t seed = 1;
  int trials = 64;
  std::string csv;
  std::string plot;
  PlotUnits plot_units = PlotUnits::kRelative;
};

std::vector<std::string> SplitCommas(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) parts.push_back(part);
  return parts;
}

long ParseInteger(const std::string& flag, const std::string& text, long min, long max) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < min || value > max) {
    throw UsageError(flag + " wants an integer in [" + std::to_string(min) + ", " +
                     std::to_string(max) + "], got '" + text + "'");
  }
  return value;
}

BitDepthRounding ParseRounding(const std::string& name) {
  for (BitDepthRounding rounding : {BitDepthRounding::kNearest, BitDepthRounding::kXorshift,
                                    BitDepthRounding::kAddMod97, BitDepthRounding::kAuto}) {
    if (name == lowbit::BitDepthRoundingName(rounding)) return rounding;
  }
  throw UsageError("--rounding wants nearest, xorshift, addmod or auto, got '" + name + "'");
}

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    std::string value;
    const std::size_t equals = flag.find('=');
    if (equals != std::string::npos) {
      value = flag.substr(equals + 1);
      flag = flag.substr(0, equals);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw UsageError(flag + " needs a value");
    }
    if (flag == "--lhs-bits") {
      options.lhs_bits = static_cast<int>(ParseInteger(flag, value, 1, 8));
    } else if (flag == "--rhs-bits") {
      options.rhs_bits = static_cast<int>(ParseInteger(flag, value, 1, 8));
    } else if (flag == "--rounding") {
      options.roundings.clear();
      for (const std::string& name : SplitCommas(value)) {
        options.roundings.push_back(ParseRounding(name));
      }
      if (options.roundings.empty()) throw UsageError("--rounding needs at least one strategy");
    } else if (flag == "--depths") {
      options.depths.clear();
      for (const std::string& depth : SplitCommas(value)) {
        options.depths.push_back(static_cast<int>(ParseInteger(flag, depth, 1, 65536)));
      }
      if (options.depths.empty()) throw UsageError("--depths needs at least one depth");
    } else if (flag == "--data") {
      if (value != "uniform" && value != "clumped") {
        throw UsageError("--data wants uniform or clumped, got '" + value + "'");
      }
      options.data = value == "uniform" ? Data::kUniform : Data::kClumped;
    } else if (flag == "--seed") {
      options.seed = static_cast<std::uint32_t>(ParseInteger(flag, value, 0, 4294967295L));
    } else if (flag == "--trials") {
      options.trials = static_cast<int>(ParseInteger(flag, value, 2, 1000000));
    } else if (flag == "--csv") {
      options.csv = value;
    } else if (flag == "--plot") {
      options.plot = value;
    } else if (flag == "--plot-units") {
      if (value != "relative" && value != "raw") {
        throw UsageError("--plot-units wants relative or raw, got '" + value + "'");
      }
      options.plot_units = value == "relative" ? PlotUnits::kRelative : PlotUnits::kRaw;
    } else {
      throw UsageError("unknown flag '" + flag + "'");
    }
  }
  return options;
}

std::string SettingName(const Point& point) {
  return "L" + std::to_string(point.setting.lhs_bits) + "R" +
         std::to_string(point.setting.rhs_bits);
}

// An error as a fraction of the exact results' range (Point::exact_range), which says how much it
// matters where raw accumulator units cannot: times 255 it is in steps of an 8-bit output spread
// over that range. NaN when every exact result was equal, as no error is a fraction of nothing.
double Relative(double error, const Point& point) {
  return point.exact_range > 0 ? error / static_cast<double>(point.exact_range)
                               : std::numeric_limits<double>::quiet_NaN();
}

void PrintTable(const std::vector<Point>& points) {
  std::printf("%-8s %-9s %-8s %7s %14s %12s %12s %12s %12s %14s %12s %12s\n", "setting", "rounding",
              "data", "depth", "bias", "bias_stderr", "rms", "max", "exact_range", "relative_bias",
              "relative_rms", "relative_max");
  for (const Point& point : points) {
    std::printf("%-8s %-9s %-8s %7d %14.3f %12.3f %12.3f %12.0f %12lld %14.4g %12.4g %12.4g\n",
                SettingName(point).c_str(), lowbit::BitDepthRoundingName(point.setting.rounding),
                lowbit::accuracy::DataName(point.data), point.depth, point.bias,
                point.bias_standard_error, point.rms, point.max,
                static_cast<long long>(point.exact_range), Relative(point.bias, point),
                Relative(point.rms, point), Relative(point.max, point));
  }
}

// The first ten columns are the tool's original ones, in their order, so that scripts reading them
// by position keep working; later columns are appended.
void WriteCsv(const std::string& path, const std::vector<Point>& points) {
  std::ofstream out(path);
  out << "setting,lhs_bits,rhs_bits,rounding,data,depth,bias,bias_stderr,rms,max,"
         "exact_range,relative_bias,relative_rms,relative_max\n";
  for (const Point& point : points) {
    out << SettingName(point) << ',' << point.setting.lhs_bits << ',' << point.setting.rhs_bits
        << ',' << lowbit::BitDepthRoundingName(point.setting.rounding) << ','
        << lowbit::accuracy::DataName(point.data) << ',' << point.depth << ',' << point.bias << ','
        << point.bias_standard_error << ',' << point.rms << ',' << point.max << ','
        << point.exact_range << ',' << Relative(point.bias, point) << ','
        << Relative(point.rms, point) << ',' << Relative(point.max, point) << '\n';
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

// One line of the plot: a rounding strategy's RMS error or |bias| at each depth, in plot units.
struct Series {
  std::string name;
  const char* colour;
  bool is_bias;  // drawn dashed, with open circles; RMS is solid, with filled circles
  // Where its zero errors sit, left or right of their depth, beside the other strategies'.
  double zero_row_offset;
  std::vector<std::pair<int, double>> errors_by_depth;
};

// Log-log axes: depths span 16..8192 and errors several decades. Every error gets a circle, so
// that a sweep of a single depth, which draws no line, still shows. Zero has no place on a log
// axis: zero errors get their circles on a row of their own below it, labelled 0, and no line
// joins them to the others, so that none reads as a small nonzero error. Circles that would
// coincide stay visible: |bias| rings are wider than RMS dots and drawn first (nearest's |bias|
// often equals its RMS), and on the zero row, where every strategy of an exact setting meets,
// the strategies stand side by side.
void WriteSvg(const std::string& path, const Options& options, const std::vector<Point>& points) {
  constexpr double kWidth = 720, kHeight = 490, kLeft = 80, kRight = 170, kTop = 40;
  constexpr double kAxisBottom = 400, kZeroRow = 426, kDotRadius = 3.5, kRingRadius = 5.5;
  const char* const kColours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
  const bool relative = options.plot_units == PlotUnits::kRelative;
  std::vector<Series> series;
  for (std::size_t r = 0; r < options.roundings.size(); ++r) {
    const std::string rounding = lowbit::BitDepthRoundingName(options.roundings[r]);
    const double zero_row_offset =
        (static_cast<double>(r) - (options.roundings.size() - 1) / 2.0) * 2.5 * kRingRadius;
    Series rms{rounding + " RMS", kColours[r % 4], false, zero_row_offset, {}};
    Series bias{rounding + " |bias|", kColours[r % 4], true, zero_row_offset, {}};
    for (const Point& point : points) {
      if (point.setting.rounding != options.roundings[r]) continue;
      const double abs_bias = std::abs(point.bias);
      rms.errors_by_depth.emplace_back(point.depth,
                                       relative ? Relative(point.rms, point) : point.rms);
      bias.errors_by_depth.emplace_back(point.depth,
                                        relative ? Relative(abs_bias, point) : abs_bias);
    }
    series.push_back(rms);
    series.push_back(bias);
  }

  double min_depth = points.front().depth, max_depth = min_depth;
  for (const Point& point : points) {
    min_depth = std::min<double>(min_depth, point.depth);
    max_depth = std::max<double>(max_depth, point.depth);
  }
  // Only positive errors set the log axis (NaN, a relative error with no range, is not one).
  double min_error = std::numeric_limits<double>::infinity(), max_error = 0;
  for (const Series& line : series) {
    for (const auto& [depth, error] : line.errors_by_depth) {
      if (error > 0) {
        min_error = std::min(min_error, error);
        max_error = std::max(max_error, error);
      }
    }
  }
  // With every error zero any decade will do: all the circles sit on the zero row.
  if (max_error == 0) min_error = max_error = 1;
  const double low_decade = std::floor(std::log10(min_error));
  const double high_decade = std::max(std::ceil(std::log10(max_error)), low_decade + 1);
  const double log_depth_span = std::log2(max_depth / min_depth);
  const auto x = [&](double depth) {
    const double fraction =
        log_depth_span > 0 ? std::log2(depth / min_depth) / log_depth_span : 0.5;
    return kLeft + (kWidth - kLeft - kRight) * fraction;
  };
  const auto y = [&](double error) {
    return kAxisBottom -
           (kAxisBottom - kTop) * (std::log10(error) - low_decade) / (high_decade - low_decade);
  };

  std::ofstream out(path);
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kWidth / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">"
      << "L" << options.lhs_bits << "R" << options.rhs_bits << ", "
      << lowbit::accuracy::DataName(options.data)
      << " data: error against the exact 8-bit result</text>\n";
  for (double decade = low_decade; decade <= high_decade; ++decade) {
    out << "<line x1=\"" << kLeft << "\" x2=\"" << kWidth - kRight << "\" y1=\""
        << y(std::pow(10.0, decade)) << "\" y2=\"" << y(std::pow(10.0, decade))
        << "\" stroke=\"#ddd\"/>\n<text x=\"" << kLeft - 6 << "\" y=\""
        << y(std::pow(10.0, decade)) + 4 << "\" text-anchor=\"end\">1e" << decade << "</text>\n";
  }
  out << "<line id=\"zero-row\" x1=\"" << kLeft << "\" x2=\"" << kWidth - kRight << "\" y1=\""
      << kZeroRow << "\" y2=\"" << kZeroRow << "\" stroke=\"#bbb\" stroke-dasharray=\"2,3\"/>\n"
      << "<text x=\"" << kLeft - 6 << "\" y=\"" << kZeroRow + 4
      << "\" text-anchor=\"end\">0</text>\n"
      << "<text x=\"" << kWidth - kRight + 16 << "\" y=\"" << kZeroRow + 4
      << "\">errors of exactly 0</text>\n";
  for (int depth : options.depths) {
    out << "<line x1=\"" << x(depth) << "\" x2=\"" << x(depth) << "\" y1=\"" << kTop << "\" y2=\""
        << kZeroRow << "\" stroke=\"#eee\"/>\n<text x=\"" << x(depth) << "\" y=\"" << kZeroRow + 22
        << "\" text-anchor=\"middle\">" << depth << "</text>\n";
  }
  out << "<text x=\"" << (kLeft + kWidth - kRight) / 2 << "\" y=\"" << kHeight - 18
      << "\" text-anchor=\"middle\">depth (log scale)</text>\n"
      << "<text transform=\"translate(20 " << (kTop + kAxisBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">"
      << (relative ? "error / range of the exact results" : "error, accumulator units")
      << " (log scale)</text>\n";

  const auto stroke = [](const Series& line) {
    return std::string("stroke=\"") + line.colour + "\" stroke-width=\"" +
           (line.is_bias ? "1.5\" stroke-dasharray=\"5,4\"" : "2\"");
  };
  // Opens a circle's tag; the caller closes it, with a tooltip or without.
  const auto start_circle = [&](const Series& line, double cx, double cy) {
    out << "<circle cx=\"" << cx << "\" cy=\"" << cy << "\" r=\""
        << (line.is_bias ? kRingRadius : kDotRadius) << "\" fill=\""
        << (line.is_bias ? "white" : line.colour) << "\" stroke=\"" << line.colour
        << "\" stroke-width=\"1.5\"";
  };
  // Lines first, so that no line hides a circle. Lines join runs of positive errors only: a
  // line down to the zero row would draw a slope the log axis cannot have.
  for (const Series& line : series) {
    std::ostringstream run;
    int run_length = 0;
    const auto end_run = [&] {
      if (run_length > 1) {
        out << "<polyline fill=\"none\" " << stroke(line) << " points=\"" << run.str() << "\"/>\n";
      }
      run.str("");
      run_length = 0;
    };
    for (const auto& [depth, error] : line.errors_by_depth) {
      if (error > 0) {
        run << x(depth) << ',' << y(error) << ' ';
        ++run_length;
      } else {
        end_run();
      }
    }
    end_run();
  }
  // |bias| rings under RMS dots: where the two coincide the dot shows inside the ring.
  for (const bool rings : {true, false}) {
    for (const Series& line : series) {
      if (line.is_bias != rings) continue;
      for (const auto& [depth, error] : line.errors_by_depth) {
        if (std::isnan(error)) continue;  // relative to a range of zero: no value to draw
        if (error > 0) {
          start_circle(line, x(depth), y(error));
        } else {
          start_circle(line, x(depth) + line.zero_row_offset, kZeroRow);
        }
        out << "><title>" << line.name << " at depth " << depth << ": " << error
            << "</title></circle>\n";
      }
    }
  }
  for (std::size_t i = 0; i < series.size(); ++i) {
    // RMS and |bias| of a rounding strategy together, a gap between strategies.
    const double legend_y =
        kTop + 10 + 36 * static_cast<double>(i / 2) + 16 * static_cast<double>(i % 2);
    const double legend_x = kWidth - kRight + 16;
    out << "<line x1=\"" << legend_x << "\" x2=\"" << legend_x + 24 << "\" y1=\"" << legend_y
        << "\" y2=\"" << legend_y << "\" " << stroke(series[i]) << "/>\n";
    start_circle(series[i], legend_x + 12, legend_y);
    out << "/>\n<text x=\"" << legend_x + 30 << "\" y=\"" << legend_y + 4 << "\">" << series[i].name
        << "</text>\n";
  }
  out << "</svg>\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  try {
    options = ParseOptions(argc, argv);
  } catch (const UsageError& error) {
    std::cerr << "lowbit-accuracy: " << error.what() << "\n" << kUsage;
    return 2;
  }
  try {
    lowbit::Context context;
    lowbit::accuracy::SweepOptions sweep;
    for (BitDepthRounding rounding : options.roundings) {
      sweep.settings.push_back({options.lhs_bits, options.rhs_bits, rounding});
    }
    sweep.data = {options.data};
    sweep.depths = options.depths;
    sweep.trials = options.trials;
    sweep.seed = options.seed;
    const std::vector<Point> points = lowbit::accuracy::Sweep(&context, sweep);
    PrintTable(points);
    if (!options.csv.empty()) WriteCsv(options.csv, points);
    if (!options.plot.empty()) WriteSvg(options.plot, options, points);
  } catch (const std::exception& error) {
    std::cerr << "lowbit-accuracy: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
