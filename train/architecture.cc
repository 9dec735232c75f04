// Parsing and printing lowbit-train's --arch notation (train/architecture.h).
#include "train/architecture.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <vector>

namespace lowbit {
namespace train {
namespace {

// A count in the notation: 1 to 6 digits, at least `low`.
bool ParseCount(const std::string& text, int low, int* value) {
  if (text.empty() || text.size() > 6 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  *value = std::stoi(text);
  return *value >= low;
}

// A cursor over one layer token. (A hand-written reader rather than std::regex, whose GCC 12
// headers fail -Werror=maybe-uninitialized in the sanitizer builds' -O1.)
class TokenReader {
 public:
  explicit TokenReader(const std::string& token) : token_(token) {}
  // Moves past `word` if the token continues with it.
  bool Skip(const char* word) {
    const std::size_t size = std::strlen(word);
    if (token_.compare(at_, size, word) != 0) return false;
    at_ += size;
    return true;
  }
  // The digits that follow (none: empty), moved past.
  std::string Digits() {
    const std::size_t start = at_;
    while (at_ < token_.size() && token_[at_] >= '0' && token_[at_] <= '9') ++at_;
    return token_.substr(start, at_ - start);
  }
  bool AtEnd() const { return at_ == token_.size(); }

 private:
  const std::string& token_;
  std::size_t at_ = 0;
};

Architecture ParseMlp(const std::string& text, const ImageShape& input,
                      const std::string& argument) {
  std::vector<int> widths;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, '-')) {
    int width = 0;
    if (!ParseCount(part, 1, &width)) {
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
  Architecture architecture;
  architecture.input = input;
  std::stringstream stream(text);
  std::string token;
  bool flat = false;
  while (std::getline(stream, token, ',')) {
    LayerSpec spec;
    const auto bad = [&](const std::string& rule) {
      throw Error(argument, "layer \"" + token + "\": " + rule);
    };
    const char* const kForms =
        "is not convKxK:C[/sS][/pP], poolK, maxpoolK, avgpoolK, flatten or linear:N";
    TokenReader reader(token);
    if (reader.Skip("conv")) {
      // convKxK:C, then /sS and /pP, each optional, in that order.
      const std::string kernel_text = reader.Digits();
      const bool times = reader.Skip("x");
      const std::string height_text = reader.Digits();
      const bool colon = reader.Skip(":");
      const std::string channels_text = reader.Digits();
      const bool has_stride = reader.Skip("/s");
      const std::string stride_text = has_stride ? reader.Digits() : "1";
      const bool has_padding = reader.Skip("/p");
      const std::string padding_text = has_padding ? reader.Digits() : "";
      if (!times || !colon || !reader.AtEnd() || kernel_text.empty() || height_text.empty() ||
          channels_text.empty() || stride_text.empty() || (has_padding && padding_text.empty())) {
        bad(kForms);
      }
      int kernel = 0, height = 0;
      if (!ParseCount(kernel_text, 1, &kernel) || !ParseCount(height_text, 1, &height) ||
          !ParseCount(channels_text, 1, &spec.outputs)) {
        bad("kernel sizes and channels must be 1 to 999999");
      }
      if (kernel != height) bad("kernels are square (KxK)");
      spec.kind = LayerKind::kConv2d;
      spec.window.kernel = kernel;
      spec.window.padding = kernel / 2;
      if (!ParseCount(stride_text, 1, &spec.window.stride)) bad("the stride must be 1 to 999999");
      if (has_padding && !ParseCount(padding_text, 0, &spec.window.padding)) {
        bad("the padding must be 0 to 999999");
      }
      if (spec.window.padding >= kernel) bad("the padding must be less than the kernel");
    } else if (reader.Skip("maxpool") || reader.Skip("avgpool") || reader.Skip("pool")) {
      const std::string size_text = reader.Digits();
      if (size_text.empty() || !reader.AtEnd()) bad(kForms);
      int size = 0;
      if (!ParseCount(size_text, 1, &size)) bad("the window size must be 1 to 999999");
      spec.kind = token.compare(0, 3, "avg") == 0 ? LayerKind::kAvgPool : LayerKind::kMaxPool;
      if (spec.kind == LayerKind::kAvgPool && (size & (size - 1)) != 0) {
        bad("an average pool's size is a power of two (its mean is a shift)");
      }
      spec.window = {size, size, 0};
    } else if (reader.Skip("linear:")) {
      const std::string outputs_text = reader.Digits();
      if (outputs_text.empty() || !reader.AtEnd()) bad(kForms);
      if (!ParseCount(outputs_text, 1, &spec.outputs)) bad("outputs must be 1 to 999999");
      spec.kind = LayerKind::kLinear;
    } else if (token == "flatten") {
      spec.kind = LayerKind::kFlatten;
    } else {
      bad(kForms);
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
