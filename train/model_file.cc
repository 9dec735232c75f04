// Saving and loading lowbit-train's model files (train/model_file.h).
#include "train/model_file.h"

#include <zlib.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "train/data.h"

namespace lowbit {
namespace train {
namespace {

constexpr char kMagic[8] = {'L', 'B', 'T', 'R', 'A', 'I', 'N', '\0'};
// Version 1 held MLPs only: a width count and the widths where version 2 has the architecture.
constexpr std::uint32_t kVersion = 2;

class Writer {
 public:
  void Bytes(const void* data, std::size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    buffer_.insert(buffer_.end(), bytes, bytes + size);
  }
  void U32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) buffer_.push_back(static_cast<unsigned char>(v >> (8 * i)));
  }
  void I32(std::int32_t v) { U32(static_cast<std::uint32_t>(v)); }
  void U64(std::uint64_t v) {
    U32(static_cast<std::uint32_t>(v));
    U32(static_cast<std::uint32_t>(v >> 32));
  }
  const std::vector<unsigned char>& buffer() const { return buffer_; }

 private:
  std::vector<unsigned char> buffer_;
};

class Reader {
 public:
  Reader(const std::string& path, std::vector<unsigned char> bytes)
      : path_(path), bytes_(std::move(bytes)) {}
  void Bytes(void* data, std::size_t size, const char* what) {
    Need(size, what);
    std::memcpy(data, bytes_.data() + offset_, size);
    offset_ += size;
  }
  std::uint32_t U32(const char* what) {
    Need(4, what);
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t{bytes_[offset_ + i]} << (8 * i);
    offset_ += 4;
    return v;
  }
  std::int32_t I32(const char* what) { return static_cast<std::int32_t>(U32(what)); }
  std::uint64_t U64(const char* what) {
    const std::uint64_t low = U32(what);
    return low | (std::uint64_t{U32(what)} << 32);
  }
  std::size_t offset() const { return offset_; }
  std::size_t size() const { return bytes_.size(); }
  [[noreturn]] void Fail(const std::string& fault) const { throw DataError(path_ + ": " + fault); }

 private:
  void Need(std::size_t size, const char* what) const {
    if (bytes_.size() - offset_ < size) {
      Fail("truncated: " + std::to_string(bytes_.size()) + " bytes end within the " + what);
    }
  }
  std::string path_;
  std::vector<unsigned char> bytes_;
  std::size_t offset_ = 0;
};

std::uint32_t Checksum(const unsigned char* data, std::size_t size) {
  return static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0), data, static_cast<uInt>(size)));
}

// Version 1's architecture: an MLP's widths.
Architecture ReadWidths(Reader* reader) {
  const std::int32_t count = reader->I32("width count");
  if (count < 2 || count > 64) {
    reader->Fail("width count " + std::to_string(count) + " not in [2, 64]");
  }
  std::vector<int> widths;
  for (int i = 0; i < count; ++i) {
    const std::int32_t width = reader->I32("widths");
    if (width < 1 || width > 999999) {
      reader->Fail("width " + std::to_string(width) + " not in [1, 999999]");
    }
    widths.push_back(width);
  }
  return MlpArchitecture(widths);
}

Architecture ReadArchitecture(Reader* reader) {
  Architecture architecture;
  const auto dimension = [reader](const char* what) {
    const std::int32_t v = reader->I32(what);
    if (v < 1 || v > 999999)
      reader->Fail(std::string(what) + " " + std::to_string(v) + " not in [1, 999999]");
    return v;
  };
  architecture.input.height = dimension("input height");
  architecture.input.width = dimension("input width");
  architecture.input.channels = dimension("input channels");
  const std::int32_t count = reader->I32("layer count");
  if (count < 1 || count > 256) {
    reader->Fail("layer count " + std::to_string(count) + " not in [1, 256]");
  }
  for (int i = 0; i < count; ++i) {
    LayerSpec spec;
    const std::int32_t kind = reader->I32("layers");
    if (kind < 0 || kind > static_cast<int>(LayerKind::kFlatten)) {
      reader->Fail("layer kind " + std::to_string(kind) + " unknown");
    }
    spec.kind = static_cast<LayerKind>(kind);
    spec.outputs = reader->I32("layers");
    spec.window.kernel = reader->I32("layers");
    spec.window.stride = reader->I32("layers");
    spec.window.padding = reader->I32("layers");
    architecture.layers.push_back(spec);
  }
  try {
    LayerShapes(architecture, "architecture");
  } catch (const Error& error) {
    reader->Fail(std::string("architecture rejected: ") + error.what());
  }
  return architecture;
}

}  // namespace

void SaveModel(const Network& network, const std::string& path) {
  const NetworkSettings& settings = network.settings();
  Writer writer;
  writer.Bytes(kMagic, sizeof kMagic);
  writer.U32(kVersion);
  const Architecture& architecture = settings.architecture;
  for (const int v :
       {architecture.input.height, architecture.input.width, architecture.input.channels}) {
    writer.I32(v);
  }
  writer.I32(static_cast<std::int32_t>(architecture.layers.size()));
  for (const LayerSpec& spec : architecture.layers) {
    for (const int v : {static_cast<int>(spec.kind), spec.outputs, spec.window.kernel,
                        spec.window.stride, spec.window.padding}) {
      writer.I32(v);
    }
  }
  writer.I32(settings.input_exponent);
  writer.I32(settings.activation_exponent);
  writer.I32(settings.bits);
  writer.I32(static_cast<std::int32_t>(settings.rounding));
  writer.I32(static_cast<std::int32_t>(settings.loss));
  writer.I32(settings.sgd.learning_rate_shift);
  writer.I32(settings.sgd.momentum_shift);
  writer.I32(settings.sgd.weight_decay_shift);
  writer.I32(settings.sgd.max_step);
  writer.U64(settings.seed);
  std::vector<std::int32_t> state;
  for (const Layer* layer : network.LearningLayers()) {
    const LinearExponents& e = LayerWeights(*layer).exponents();
    for (const int v : {e.input_exponent, e.weight_exponent, e.forward_shift, e.backward_shift}) {
      writer.I32(v);
    }
    state.resize(layer->StateSize());
    layer->GetState(state.data());
    for (const std::int32_t v : state) writer.I32(v);
  }
  const std::uint32_t checksum = Checksum(writer.buffer().data(), writer.buffer().size());
  writer.U32(checksum);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw DataError(path + ": cannot open for writing: " + std::strerror(errno));
  file.write(reinterpret_cast<const char*>(writer.buffer().data()),
             static_cast<std::streamsize>(writer.buffer().size()));
  if (!file.flush()) throw DataError(path + ": cannot write: " + std::strerror(errno));
}

Network LoadModel(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw DataError(path + ": cannot open: " + std::strerror(errno));
  std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(file)),
                                   std::istreambuf_iterator<char>());
  Reader reader(path, bytes);
  char magic[sizeof kMagic];
  reader.Bytes(magic, sizeof magic, "format name");
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) {
    reader.Fail("not a lowbit-train model file (it does not start with \"LBTRAIN\")");
  }
  const std::uint32_t version = reader.U32("format version");
  if (version != 1 && version != kVersion) {
    reader.Fail("format version " + std::to_string(version) + ", this lowbit-train reads 1 and " +
                std::to_string(kVersion));
  }
  if (bytes.size() < 4 + reader.offset()) reader.Fail("truncated: no checksum");
  const std::size_t body = bytes.size() - 4;
  std::uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= std::uint32_t{bytes[body + i]} << (8 * i);
  if (Checksum(bytes.data(), body) != stored) {
    reader.Fail("checksum mismatch: the file is corrupt or truncated");
  }
  NetworkSettings settings;
  settings.architecture = version == 1 ? ReadWidths(&reader) : ReadArchitecture(&reader);
  settings.input_exponent = reader.I32("input exponent");
  settings.activation_exponent = reader.I32("activation exponent");
  settings.bits = reader.I32("bits");
  const std::int32_t rounding = reader.I32("rounding");
  const std::int32_t loss = reader.I32("loss");
  if (rounding < 0 || rounding > 1)
    reader.Fail("rounding " + std::to_string(rounding) + " is not 0 or 1");
  if (loss < 0 || loss > 1) reader.Fail("loss " + std::to_string(loss) + " is not 0 or 1");
  settings.rounding = static_cast<TrainRounding>(rounding);
  settings.loss = static_cast<Loss>(loss);
  settings.sgd.learning_rate_shift = reader.I32("SGD settings");
  settings.sgd.momentum_shift = reader.I32("SGD settings");
  settings.sgd.weight_decay_shift = reader.I32("SGD settings");
  settings.sgd.max_step = reader.I32("SGD settings");
  settings.seed = reader.U64("seed");
  Network network = [&] {
    try {
      return Network(settings);
    } catch (const Error& error) {
      reader.Fail(std::string("settings rejected: ") + error.what());
    }
  }();
  std::vector<std::int32_t> state;
  for (Layer* layer : network.LearningLayers()) {
    const LinearExponents& e = LayerWeights(*layer).exponents();
    for (const int expected :
         {e.input_exponent, e.weight_exponent, e.forward_shift, e.backward_shift}) {
      const std::int32_t stored_exponent = reader.I32("layer exponents");
      if (stored_exponent != expected) {
        reader.Fail("layer exponents differ from those its settings give (" +
                    std::to_string(stored_exponent) + " stored, " + std::to_string(expected) +
                    " expected)");
      }
    }
    state.resize(layer->StateSize());
    for (std::int32_t& v : state) v = reader.I32("layer state");
    layer->SetState(state.data());
  }
  if (reader.offset() != body) {
    reader.Fail(std::to_string(body - reader.offset()) + " bytes left over after the last layer");
  }
  return network;
}

}  // namespace train
}  // namespace lowbit
