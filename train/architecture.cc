// Parsing and printing lowbit-train's --arch notation (train/architecture.h).
#include "train/architecture.h"

#include <regex>
#include <sstream>
#include <vector>

namespace lowbit {
namespace train {
namespace {

// A count in the notation: 1 to 6 digits, at least `low`.
bool ParseCount(const std::string& text, int low, int* value) {
  if (text.empty() || text.size() > 6) return false;
  *value = std::stoi(text);
  return *value >= low;
}

Architecture ParseMlp(const std::string& text, const ImageShape& input,
                      const std::string& argument) {
  std::vector<int> widths;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, '-')) {
    int width = 0;
    if (!std::regex_match(part, std::regex("[0-9]+")) || !ParseCount(part, 1, &width)) {
      throw Error(argument,
                  "must be widths joined by '-', each 1 to 999999 (e.g. 784-128-10), or layers "
                  "joined by ',' (e.g. conv3x3:16,pool2,linear:10), got \"" +
                      text + "\"");
    }
    widths.push_back(width);
  }
  if (widths.size() < 2) {
    throw Error(argument, "needs at least an input and an output width, got \"" + text + "\"");
  }
  if (widths.front() != input.size()) {
    throw Error(argument, "must start with the input's " + std::to_string(input.size()) +
                              " values, got \"" + text + "\"");
  }
  Architecture architecture = MlpArchitecture(widths);
  architecture.input = input;
  if (input.height > 1 || input.width > 1) {
    architecture.layers.insert(architecture.layers.begin(), {LayerKind::kFlatten, 0, {}});
  }
  return architecture;
}

}  // namespace

Architecture ParseArchitecture(const std::string& text, const ImageShape& input,
                               const std::string& argument) {
  if (text.find_first_not_of("0123456789-") == std::string::npos) {
    Architecture architecture = ParseMlp(text, input, argument);
    LayerShapes(architecture, argument);
    return architecture;
  }
  static const std::regex conv("conv([0-9]+)x([0-9]+):([0-9]+)(/s([0-9]+))?(/p([0-9]+))?");
  static const std::regex pool("(max|avg)?pool([0-9]+)");
  static const std::regex linear("linear:([0-9]+)");
  Architecture architecture;
  architecture.input = input;
  std::stringstream stream(text);
  std::string token;
  bool flat = false;
  while (std::getline(stream, token, ',')) {
    std::smatch match;
    LayerSpec spec;
    const auto bad = [&](const std::string& rule) {
      throw Error(argument, "layer \"" + token + "\": " + rule);
    };
    if (std::regex_match(token, match, conv)) {
      int kernel = 0, height = 0;
      if (!ParseCount(match[1], 1, &kernel) || !ParseCount(match[2], 1, &height) ||
          !ParseCount(match[3], 1, &spec.outputs)) {
        bad("kernel sizes and channels must be 1 to 999999");
      }
      if (kernel != height) bad("kernels are square (KxK)");
      spec.kind = LayerKind::kConv2d;
      spec.window.kernel = kernel;
      spec.window.padding = kernel / 2;
      if (match[5].matched && !ParseCount(match[5], 1, &spec.window.stride)) {
        bad("the stride must be 1 to 999999");
      }
      if (match[7].matched && !ParseCount(match[7], 0, &spec.window.padding)) {
        bad("the padding must be 0 to 999999");
      }
      if (spec.window.padding >= kernel) bad("the padding must be less than the kernel");
    } else if (std::regex_match(token, match, pool)) {
      int size = 0;
      if (!ParseCount(match[2], 1, &size)) bad("the window size must be 1 to 999999");
      spec.kind = match[1] == "avg" ? LayerKind::kAvgPool : LayerKind::kMaxPool;
      if (spec.kind == LayerKind::kAvgPool && (size & (size - 1)) != 0) {
        bad("an average pool's size is a power of two (its mean is a shift)");
      }
      spec.window = {size, size, 0};
    } else if (std::regex_match(token, match, linear)) {
      if (!ParseCount(match[1], 1, &spec.outputs)) bad("outputs must be 1 to 999999");
      spec.kind = LayerKind::kLinear;
    } else if (token == "flatten") {
      spec.kind = LayerKind::kFlatten;
    } else {
      bad("is not convKxK:C[/sS][/pP], poolK, maxpoolK, avgpoolK, flatten or linear:N");
    }
    const bool image_layer = spec.kind == LayerKind::kConv2d || spec.kind == LayerKind::kMaxPool ||
                             spec.kind == LayerKind::kAvgPool;
    if (image_layer && input.height == 1 && input.width == 1) {
      bad("image layers need image data; these examples are " + std::to_string(input.size()) +
          " values without an image shape");
    }
    if (image_layer && flat) bad("image layers must come before flatten and linear layers");
    if (spec.kind == LayerKind::kFlatten && flat) bad("the examples are already flat here");
    if (spec.kind == LayerKind::kLinear && !flat && (input.height > 1 || input.width > 1)) {
      architecture.layers.push_back({LayerKind::kFlatten, 0, {}});
    }
    // A ReLU after each convolution and each hidden Linear layer: the previous Linear layer
    // was hidden if another layer follows it.
    if (!architecture.layers.empty() && architecture.layers.back().kind == LayerKind::kLinear) {
      architecture.layers.push_back({LayerKind::kRelu, 0, {}});
    }
    architecture.layers.push_back(spec);
    if (spec.kind == LayerKind::kConv2d) architecture.layers.push_back({LayerKind::kRelu, 0, {}});
    flat |= spec.kind == LayerKind::kFlatten || spec.kind == LayerKind::kLinear;
  }
  if (architecture.layers.empty()) throw Error(argument, "has no layers");
  LayerShapes(architecture, argument);
  return architecture;
}

std::string DescribeArchitecture(const Architecture& architecture) {
  std::string text;
  for (const LayerSpec& spec : architecture.layers) {
    if (!text.empty()) text += ",";
    const Window& window = spec.window;
    switch (spec.kind) {
      case LayerKind::kLinear:
        text += "linear:" + std::to_string(spec.outputs);
        break;
      case LayerKind::kConv2d:
        text += "conv" + std::to_string(window.kernel) + "x" + std::to_string(window.kernel) + ":" +
                std::to_string(spec.outputs) + "/s" + std::to_string(window.stride) + "/p" +
                std::to_string(window.padding);
        break;
      case LayerKind::kMaxPool:
        text += "maxpool" + std::to_string(window.kernel);
        break;
      case LayerKind::kAvgPool:
        text += "avgpool" + std::to_string(window.kernel);
        break;
      case LayerKind::kRelu:
        text += "relu";
        break;
      case LayerKind::kFlatten:
        text += "flatten";
        break;
    }
  }
  return text;
}

}  // namespace train
}  // namespace lowbit
