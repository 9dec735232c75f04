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
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "public/lowbit.h"
#include "tools/accuracy.h"

namespace {

using lowbit::BitDepthRounding;
using lowbit::accuracy::Data;
using lowbit::accuracy::Point;

constexpr char kUsage[] =
    "usage: lowbit-accuracy [--lhs-bits N] [--rhs-bits N] [--rounding LIST] [--depths LIST]\n"
    "                       [--data uniform|clumped] [--seed S] [--trials T]\n"
    "                       [--csv FILE] [--plot FILE.svg]\n"
    "  --lhs-bits, --rhs-bits  bit depths 1..8 (default 7 and 5)\n"
    "  --rounding  comma-separated: nearest, xorshift, addmod, auto (default "
    "nearest,xorshift,addmod)\n"
    "  --depths    comma-separated depths >= 1 (default 16,64,256,1024,4096,8192)\n"
    "  --data      uniform (default) or clumped (doc/less-than-8-bit.md defines both)\n"
    "  --seed      seed of the data and of the rounding sequences (default 1)\n"
    "  --trials    independent GEMMs of 4 x depth x 4 per point (default 64, at least 2)\n"
    "  --csv       write one row per setting, rounding, data and depth\n"
    "  --plot      draw RMS error and |bias| against depth, one colour per rounding\n";

// A bad command line: the message is printed with the usage.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

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

void PrintTable(const std::vector<Point>& points) {
  std::printf("%-8s %-9s %-8s %7s %14s %12s %12s %12s\n", "setting", "rounding", "data", "depth",
              "bias", "bias_stderr", "rms", "max");
  for (const Point& point : points) {
    std::printf("%-8s %-9s %-8s %7d %14.3f %12.3f %12.3f %12.0f\n", SettingName(point).c_str(),
                lowbit::BitDepthRoundingName(point.setting.rounding),
                lowbit::accuracy::DataName(point.data), point.depth, point.bias,
                point.bias_standard_error, point.rms, point.max);
  }
}

void WriteCsv(const std::string& path, const std::vector<Point>& points) {
  std::ofstream out(path);
  out << "setting,lhs_bits,rhs_bits,rounding,data,depth,bias,bias_stderr,rms,max\n";
  for (const Point& point : points) {
    out << SettingName(point) << ',' << point.setting.lhs_bits << ',' << point.setting.rhs_bits
        << ',' << lowbit::BitDepthRoundingName(point.setting.rounding) << ','
        << lowbit::accuracy::DataName(point.data) << ',' << point.depth << ',' << point.bias << ','
        << point.bias_standard_error << ',' << point.rms << ',' << point.max << '\n';
  }
  if (!out) throw std::runtime_error("cannot write " + path);
}

// Log-log axes: depths span 16..8192 and errors several decades. Solid lines are RMS error,
// dashed lines |bias|, one colour per rounding strategy.
void WriteSvg(const std::string& path, const Options& options, const std::vector<Point>& points) {
  constexpr double kWidth = 720, kHeight = 460, kLeft = 80, kRight = 170, kTop = 40, kBottom = 60;
  const char* const kColours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
  double min_depth = points.front().depth, max_depth = min_depth;
  double min_error = 1e300, max_error = 0;
  for (const Point& point : points) {
    min_depth = std::min<double>(min_depth, point.depth);
    max_depth = std::max<double>(max_depth, point.depth);
    for (double error : {point.rms, std::abs(point.bias)}) {
      if (error > 0) {
        min_error = std::min(min_error, error);
        max_error = std::max(max_error, error);
      }
    }
  }
  if (max_error == 0) min_error = max_error = 1;
  const double low_decade = std::floor(std::log10(min_error));
  const double high_decade = std::max(std::ceil(std::log10(max_error)), low_decade + 1);
  const double log_depth_span = std::max(std::log2(max_depth / min_depth), 1.0);
  const auto x = [&](double depth) {
    return kLeft + (kWidth - kLeft - kRight) * std::log2(depth / min_depth) / log_depth_span;
  };
  const auto y = [&](double error) {
    const double decades = std::log10(std::max(error, std::pow(10.0, low_decade)));
    return kHeight - kBottom -
           (kHeight - kTop - kBottom) * (decades - low_decade) / (high_decade - low_decade);
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
  for (int depth : options.depths) {
    out << "<line x1=\"" << x(depth) << "\" x2=\"" << x(depth) << "\" y1=\"" << kTop << "\" y2=\""
        << kHeight - kBottom << "\" stroke=\"#eee\"/>\n<text x=\"" << x(depth) << "\" y=\""
        << kHeight - kBottom + 16 << "\" text-anchor=\"middle\">" << depth << "</text>\n";
  }
  out << "<text x=\"" << (kLeft + kWidth - kRight) / 2 << "\" y=\"" << kHeight - 18
      << "\" text-anchor=\"middle\">depth (log scale)</text>\n"
      << "<text transform=\"translate(20 " << (kTop + kHeight - kBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">error, accumulator units (log scale)</text>\n";
  for (std::size_t r = 0; r < options.roundings.size(); ++r) {
    const char* colour = kColours[r % 4];
    std::string rms_line, bias_line;
    for (const Point& point : points) {
      if (point.setting.rounding != options.roundings[r]) continue;
      rms_line += std::to_string(x(point.depth)) + "," + std::to_string(y(point.rms)) + " ";
      bias_line +=
          std::to_string(x(point.depth)) + "," + std::to_string(y(std::abs(point.bias))) + " ";
    }
    out << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\" points=\""
        << rms_line << "\"/>\n<polyline fill=\"none\" stroke=\"" << colour
        << "\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\" points=\"" << bias_line << "\"/>\n";
    const double legend_y = kTop + 10 + 36 * static_cast<double>(r);
    const double legend_x = kWidth - kRight + 16;
    out << "<line x1=\"" << legend_x << "\" x2=\"" << legend_x + 24 << "\" y1=\"" << legend_y
        << "\" y2=\"" << legend_y << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/>\n"
        << "<text x=\"" << legend_x + 30 << "\" y=\"" << legend_y + 4 << "\">"
        << lowbit::BitDepthRoundingName(options.roundings[r]) << " RMS</text>\n"
        << "<line x1=\"" << legend_x << "\" x2=\"" << legend_x + 24 << "\" y1=\"" << legend_y + 16
        << "\" y2=\"" << legend_y + 16 << "\" stroke=\"" << colour
        << "\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\"/>\n<text x=\"" << legend_x + 30
        << "\" y=\"" << legend_y + 20 << "\">" << lowbit::BitDepthRoundingName(options.roundings[r])
        << " |bias|</text>\n";
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
