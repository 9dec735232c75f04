// Loads the training datasets (CSV and gzipped IDX through zlib), reporting every defect of a
// file as a DataError that names it; and splits, standardizes and quantizes what was loaded.
#include "train/data.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace lowbit {
namespace train {
namespace {

[[noreturn]] void Fail(const std::string& path, const std::string& problem) {
  throw DataError(path + ": " + problem);
}

// gzread passes an uncompressed file through unchanged, so one reader serves .csv and .gz.
class GzipReader {
 public:
  explicit GzipReader(const std::string& path) : path_(path) {
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) {
      // gzopen leaves errno at 0 when it failed for want of memory rather than in open().
      Fail(path, std::string("cannot open: ") +
                     (errno != 0 ? std::strerror(errno) : "zlib could not allocate its state"));
    }
  }
  ~GzipReader() { gzclose(file_); }
  GzipReader(const GzipReader&) = delete;
  GzipReader& operator=(const GzipReader&) = delete;

  // Reads up to `size` bytes; fewer only where the data ends. A cut-short gzip stream is not an
  // error to gzread (it returns what it could inflate), so the caller asks EndedEarly().
  std::size_t Read(unsigned char* buffer, std::size_t size) {
    std::size_t total = 0;
    while (total < size) {
      // gzread takes an unsigned count and returns an int.
      const std::size_t chunk = std::min<std::size_t>(size - total, std::size_t{1} << 24);
      const int got = gzread(file_, buffer + total, static_cast<unsigned>(chunk));
      if (got < 0) {
        int code = Z_OK;
        const char* message = gzerror(file_, &code);
        Fail(path_, code == Z_ERRNO ? std::string("cannot read: ") + std::strerror(errno)
                                    : std::string("corrupt gzip data: ") + message);
      }
      if (got == 0) break;
      total += static_cast<std::size_t>(got);
    }
    return total;
  }

  bool EndedEarly() {
    int code = Z_OK;
    gzerror(file_, &code);
    return code == Z_BUF_ERROR;
  }

  // For a truncation message: why the bytes stopped.
  std::string EndNote() { return EndedEarly() ? " (the gzip stream ends early)" : ""; }

 private:
  std::string path_;
  gzFile file_ = nullptr;
};

std::string ReadWholeFile(const std::string& path) {
  GzipReader reader(path);
  std::string text;
  constexpr std::size_t kChunk = 1 << 16;
  for (;;) {
    const std::size_t old_size = text.size();
    text.resize(old_size + kChunk);
    const std::size_t got = reader.Read(reinterpret_cast<unsigned char*>(&text[old_size]), kChunk);
    text.resize(old_size + got);
    if (got < kChunk) break;
  }
  if (reader.EndedEarly()) {
    Fail(path, "truncated: the gzip stream ends early, after " + std::to_string(text.size()) +
                   " bytes of text");
  }
  return text;
}

// One line of a CSV file, `number` counted from 1 as an editor shows it.
struct Line {
  int number;
  std::string_view text;
};

// Blank lines are skipped, so a final newline (or a few) is not a record; a carriage return
// before the newline is dropped, so a file saved with CRLF still reads.
std::vector<Line> SplitLines(std::string_view text) {
  std::vector<Line> lines;
  int number = 0;
  while (!text.empty()) {
    ++number;
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) lines.push_back({number, line});
  }
  return lines;
}

std::string_view TrimBlanks(std::string_view field) {
  while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
  while (!field.empty() && (field.back() == ' ' || field.back() == '\t')) field.remove_suffix(1);
  return field;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (;;) {
    const std::size_t comma = line.find(',');
    fields.push_back(TrimBlanks(line.substr(0, comma)));
    if (comma == std::string_view::npos) return fields;
    line.remove_prefix(comma + 1);
  }
}

std::string Where(const Line& line, std::size_t column) {
  return "line " + std::to_string(line.number) + ", value " + std::to_string(column + 1) + ": ";
}

// std::from_chars, unlike strtof, ignores the locale: "5.1" reads the same under any LC_NUMERIC.
float ParseFloat(const std::string& path, const Line& line, std::size_t column,
                 std::string_view field) {
  float value = 0.0f;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || error != std::errc() || end != field.data() + field.size()) {
    Fail(path, Where(line, column) + "malformed number '" + std::string(field) + "'");
  }
  if (!std::isfinite(value)) {
    Fail(path, Where(line, column) + "'" + std::string(field) + "' is not a finite number");
  }
  return value;
}

int ParseInt(const std::string& path, const Line& line, std::size_t column, std::string_view field,
             const char* what) {
  int value = 0;
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || error != std::errc() || end != field.data() + field.size()) {
    Fail(path, Where(line, column) + "malformed " + what + " '" + std::string(field) +
                   "', expected an integer");
  }
  return value;
}

// The rows of a CSV file after its header (if any): `features` values, then an integer label in
// [0, classes). When `bounded`, every feature value must lie in [lowest, highest].
struct CsvShape {
  int features;
  int classes;
  bool bounded;
  float lowest;
  float highest;
};

Dataset ParseRows(const std::string& path, const std::vector<Line>& lines, std::size_t first,
                  const CsvShape& shape) {
  Dataset data;
  data.features = shape.features;
  data.classes = shape.classes;
  const std::size_t columns = static_cast<std::size_t>(shape.features) + 1;
  data.inputs.reserve((lines.size() - first) * static_cast<std::size_t>(shape.features));
  data.labels.reserve(lines.size() - first);
  for (std::size_t i = first; i < lines.size(); ++i) {
    const Line& line = lines[i];
    const std::vector<std::string_view> fields = SplitFields(line.text);
    if (fields.size() != columns) {
      Fail(path, "line " + std::to_string(line.number) + ": expected " + std::to_string(columns) +
                     " comma-separated values, got " + std::to_string(fields.size()));
    }
    for (std::size_t column = 0; column < columns - 1; ++column) {
      const float value = ParseFloat(path, line, column, fields[column]);
      if (shape.bounded && !(value >= shape.lowest && value <= shape.highest)) {
        char range[64];
        std::snprintf(range, sizeof range, "%g out of range [%g, %g]", static_cast<double>(value),
                      static_cast<double>(shape.lowest), static_cast<double>(shape.highest));
        Fail(path, Where(line, column) + range);
      }
      data.inputs.push_back(value);
    }
    const int label = ParseInt(path, line, columns - 1, fields[columns - 1], "label");
    if (label < 0 || label >= shape.classes) {
      Fail(path, Where(line, columns - 1) + "label " + std::to_string(label) +
                     " out of range [0, " + std::to_string(shape.classes) + ")");
    }
    data.labels.push_back(label);
  }
  return data;
}

// --- IDX ---

constexpr std::uint32_t kImagesMagic = 0x00000803;  // unsigned bytes, 3 dimensions
constexpr std::uint32_t kLabelsMagic = 0x00000801;  // unsigned bytes, 1 dimension
constexpr std::uint32_t kImageSide = 28;
constexpr int kIdxClasses = 10;

std::string Hex32(std::uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(value));
  return text;
}

// Reads `count` big-endian 32-bit words: the magic and then the dimensions.
std::vector<std::uint32_t> ReadHeaderWords(GzipReader& reader, const std::string& path,
                                           std::size_t count) {
  std::vector<unsigned char> bytes(4 * count);
  const std::size_t got = reader.Read(bytes.data(), bytes.size());
  if (got < bytes.size()) {
    Fail(path, "truncated: expected " + std::to_string(bytes.size()) + " bytes of header, got " +
                   std::to_string(got) + reader.EndNote());
  }
  std::vector<std::uint32_t> words(count);
  for (std::size_t i = 0; i < count; ++i) {
    words[i] = std::uint32_t{bytes[4 * i]} << 24 | std::uint32_t{bytes[4 * i + 1]} << 16 |
               std::uint32_t{bytes[4 * i + 2]} << 8 | std::uint32_t{bytes[4 * i + 3]};
  }
  return words;
}

// Checks the magic before the dimensions are even read, so that a labels file given as images
// (whose header is shorter) is named for what it is, not for a short header.
std::vector<std::uint32_t> ReadIdxHeader(GzipReader& reader, const std::string& path,
                                         std::uint32_t magic, std::size_t dimensions) {
  const std::uint32_t found = ReadHeaderWords(reader, path, 1)[0];
  if (found != magic) Fail(path, "bad magic " + Hex32(found) + ", expected " + Hex32(magic));
  return ReadHeaderWords(reader, path, dimensions);
}

// Reads exactly `count` bytes, the buffer growing only as data arrives: a corrupt header that
// announces billions of images then fails as truncated instead of on a huge allocation.
std::vector<unsigned char> ReadBody(GzipReader& reader, const std::string& path,
                                    std::uint64_t count, const char* what) {
  std::vector<unsigned char> bytes;
  constexpr std::size_t kChunk = std::size_t{1} << 22;
  while (bytes.size() < count) {
    const std::size_t old_size = bytes.size();
    const std::size_t wanted =
        static_cast<std::size_t>(std::min<std::uint64_t>(count - old_size, kChunk));
    bytes.resize(old_size + wanted);
    const std::size_t got = reader.Read(bytes.data() + old_size, wanted);
    bytes.resize(old_size + got);
    if (got < wanted) {
      Fail(path, "truncated: expected " + std::to_string(count) + " bytes of " + what + ", got " +
                     std::to_string(bytes.size()) + reader.EndNote());
    }
  }
  unsigned char extra = 0;
  if (reader.Read(&extra, 1) != 0) {
    Fail(path, "more data than the header announces: " + std::to_string(count) + " bytes of " +
                   what + ", then more");
  }
  if (reader.EndedEarly()) Fail(path, "truncated: the gzip stream ends early");
  return bytes;
}

// --- Splitting and scaling ---

// splitmix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014):
// a 64-bit state stepped by the golden-ratio constant and mixed; fully specified here, so a seed
// gives the same sequence with every compiler and standard library.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}

  std::uint64_t Next() {
    state_ += 0x9e3779b97f4a7c15u;
    std::uint64_t mixed = state_;
    mixed = (mixed ^ (mixed >> 30)) * 0xbf58476d1ce4e5b9u;
    mixed = (mixed ^ (mixed >> 27)) * 0x94d049bb133111ebu;
    return mixed ^ (mixed >> 31);
  }

  // Uniform in [0, bound): draws below 2^64 mod bound are rejected so that every remainder is
  // equally likely (a plain Next() % bound favours the small ones).
  std::uint64_t Below(std::uint64_t bound) {
    const std::uint64_t rejected = (0 - bound) % bound;
    for (;;) {
      const std::uint64_t draw = Next();
      if (draw >= rejected) return draw % bound;
    }
  }

 private:
  std::uint64_t state_;
};

// Fisher-Yates, from the back: each position takes a uniform pick among those not yet placed.
void Shuffle(std::vector<int>* items, SplitMix64* generator) {
  for (std::size_t i = items->size(); i > 1; --i) {
    const std::size_t pick = static_cast<std::size_t>(generator->Below(i));
    std::swap((*items)[i - 1], (*items)[pick]);
  }
}

void CheckShape(const Dataset& data, const char* caller) {
  if (data.features < 1 || data.classes < 1 ||
      data.inputs.size() != data.labels.size() * static_cast<std::size_t>(data.features)) {
    throw std::invalid_argument(std::string(caller) + ": " + std::to_string(data.inputs.size()) +
                                " inputs for " + std::to_string(data.size()) + " examples of " +
                                std::to_string(data.features) + " features");
  }
  for (int label : data.labels) {
    if (label < 0 || label >= data.classes) {
      throw std::invalid_argument(std::string(caller) + ": label " + std::to_string(label) +
                                  " out of range [0, " + std::to_string(data.classes) + ")");
    }
  }
}

Dataset Gather(const Dataset& data, const std::vector<int>& examples) {
  Dataset subset;
  subset.features = data.features;
  subset.height = data.height;
  subset.width = data.width;
  subset.classes = data.classes;
  const std::size_t features = static_cast<std::size_t>(data.features);
  subset.inputs.reserve(examples.size() * features);
  subset.labels.reserve(examples.size());
  for (int example : examples) {
    const auto row = data.inputs.begin() + static_cast<std::ptrdiff_t>(example * features);
    subset.inputs.insert(subset.inputs.end(), row, row + static_cast<std::ptrdiff_t>(features));
    subset.labels.push_back(data.labels[static_cast<std::size_t>(example)]);
  }
  return subset;
}

}  // namespace

std::string ShippedDatasetsDirectory() { return LOWBIT_TRAIN_DATASETS_DIR; }

Dataset LoadIris(const std::string& path) {
  const std::string text = ReadWholeFile(path);
  const std::vector<Line> lines = SplitLines(text);
  if (lines.empty()) Fail(path, "empty file, expected a header line");
  // The header: the example count, the feature count, then one name per class.
  const Line& header = lines[0];
  const std::vector<std::string_view> fields = SplitFields(header.text);
  if (fields.size() < 3) {
    Fail(path, "line " + std::to_string(header.number) +
                   ": expected a header '<examples>,<features>,<class names...>', got '" +
                   std::string(header.text) + "'");
  }
  const int examples = ParseInt(path, header, 0, fields[0], "example count");
  const int features = ParseInt(path, header, 1, fields[1], "feature count");
  if (examples < 0) Fail(path, Where(header, 0) + "negative example count");
  if (features < 1) Fail(path, Where(header, 1) + "the feature count must be at least 1");
  const int classes = static_cast<int>(fields.size() - 2);
  Dataset data = ParseRows(path, lines, 1, {features, classes, false, 0.0f, 0.0f});
  if (data.size() != examples) {
    Fail(path, "the header says " + std::to_string(examples) + " examples, the file has " +
                   std::to_string(data.size()));
  }
  return data;
}

Dataset LoadDigits(const std::string& path) {
  constexpr int kExamples = 1797;
  const std::string text = ReadWholeFile(path);
  Dataset data = ParseRows(path, SplitLines(text), 0, {64, 10, true, 0.0f, 16.0f});
  if (data.size() != kExamples) {
    Fail(path, "expected " + std::to_string(kExamples) + " examples, the file has " +
                   std::to_string(data.size()));
  }
  data.height = 8;
  data.width = 8;
  return data;
}

Dataset LoadIdx(const std::string& images_path, const std::string& labels_path) {
  GzipReader images(images_path);
  const std::vector<std::uint32_t> image_dims = ReadIdxHeader(images, images_path, kImagesMagic, 3);
  const std::uint32_t count = image_dims[0];
  if (image_dims[1] != kImageSide || image_dims[2] != kImageSide) {
    Fail(images_path, "images are " + std::to_string(image_dims[1]) + " x " +
                          std::to_string(image_dims[2]) + ", expected 28 x 28");
  }
  GzipReader labels(labels_path);
  const std::uint32_t label_count = ReadIdxHeader(labels, labels_path, kLabelsMagic, 1)[0];
  if (label_count != count) {
    Fail(labels_path, std::to_string(label_count) + " labels, but " + images_path + " has " +
                          std::to_string(count) + " images");
  }

  constexpr std::uint64_t kPixels = std::uint64_t{kImageSide} * kImageSide;
  const std::vector<unsigned char> pixels =
      ReadBody(images, images_path, count * kPixels, "pixels");
  const std::vector<unsigned char> label_bytes = ReadBody(labels, labels_path, count, "labels");

  Dataset data;
  data.features = static_cast<int>(kPixels);
  data.height = static_cast<int>(kImageSide);
  data.width = static_cast<int>(kImageSide);
  data.classes = kIdxClasses;
  data.inputs.assign(pixels.begin(), pixels.end());
  data.labels.reserve(label_bytes.size());
  for (std::size_t i = 0; i < label_bytes.size(); ++i) {
    if (label_bytes[i] >= kIdxClasses) {
      Fail(labels_path, "example " + std::to_string(i) + ": label " +
                            std::to_string(label_bytes[i]) + " out of range [0, 10)");
    }
    data.labels.push_back(label_bytes[i]);
  }
  return data;
}

Split LoadFashionMnist(const std::string& directory) {
  const auto load = [&directory](const char* prefix, int expected) {
    const std::string images = directory + "/" + prefix + "-images-idx3-ubyte.gz";
    Dataset data = LoadIdx(images, directory + "/" + prefix + "-labels-idx1-ubyte.gz");
    if (data.size() != expected) {
      Fail(images, std::to_string(data.size()) + " images, expected " + std::to_string(expected));
    }
    return data;
  };
  Split split;
  split.train = load("train", 60000);
  split.test = load("t10k", 10000);
  return split;
}

std::string DefaultFashionMnistDirectory() { return "/usr/share/datasets/fashion-mnist"; }

Split StratifiedSplit(const Dataset& data, double test_fraction, std::uint64_t seed) {
  CheckShape(data, "StratifiedSplit");
  if (!(test_fraction >= 0.0 && test_fraction <= 1.0)) {
    throw std::invalid_argument("StratifiedSplit: test_fraction " + std::to_string(test_fraction) +
                                " outside [0, 1]");
  }
  std::vector<std::vector<int>> by_class(static_cast<std::size_t>(data.classes));
  for (int example = 0; example < data.size(); ++example) {
    by_class[static_cast<std::size_t>(data.labels[static_cast<std::size_t>(example)])].push_back(
        example);
  }
  SplitMix64 generator(seed);
  std::vector<int> train_examples;
  std::vector<int> test_examples;
  for (std::vector<int>& examples : by_class) {
    Shuffle(&examples, &generator);
    const std::size_t test_count =
        static_cast<std::size_t>(std::round(test_fraction * static_cast<double>(examples.size())));
    test_examples.insert(test_examples.end(), examples.begin(),
                         examples.begin() + static_cast<std::ptrdiff_t>(test_count));
    train_examples.insert(train_examples.end(),
                          examples.begin() + static_cast<std::ptrdiff_t>(test_count),
                          examples.end());
  }
  // Grouped by class, an epoch would see one class after another; training wants them mixed.
  Shuffle(&train_examples, &generator);
  Shuffle(&test_examples, &generator);
  return {Gather(data, train_examples), Gather(data, test_examples)};
}

void Standardize(Split* split) {
  CheckShape(split->train, "Standardize");
  CheckShape(split->test, "Standardize");
  if (split->train.size() == 0) throw std::invalid_argument("Standardize: empty train set");
  if (split->test.features != split->train.features) {
    throw std::invalid_argument("Standardize: train has " + std::to_string(split->train.features) +
                                " features, test " + std::to_string(split->test.features));
  }
  const std::size_t features = static_cast<std::size_t>(split->train.features);
  const std::size_t examples = static_cast<std::size_t>(split->train.size());
  // Sums in double: 60000 Fashion-MNIST pixels up to 255 would lose digits in a float sum.
  std::vector<double> mean(features, 0.0);
  for (std::size_t i = 0; i < examples; ++i) {
    for (std::size_t f = 0; f < features; ++f) mean[f] += split->train.inputs[i * features + f];
  }
  for (double& m : mean) m /= static_cast<double>(examples);
  // Deviations from the mean rather than E[x^2] - mean^2, which cancels badly for large means.
  std::vector<double> scale(features, 0.0);
  for (std::size_t i = 0; i < examples; ++i) {
    for (std::size_t f = 0; f < features; ++f) {
      const double deviation = split->train.inputs[i * features + f] - mean[f];
      scale[f] += deviation * deviation;
    }
  }
  for (double& s : scale) {
    const double deviation = std::sqrt(s / static_cast<double>(examples));
    s = deviation > 0.0 ? 1.0 / deviation : 0.0;
  }
  for (Dataset* data : {&split->train, &split->test}) {
    for (std::size_t i = 0; i < data->inputs.size(); ++i) {
      const std::size_t f = i % features;
      data->inputs[i] = static_cast<float>((data->inputs[i] - mean[f]) * scale[f]);
    }
  }
}

std::vector<std::int8_t> Quantize(const std::vector<float>& inputs, int exponent) {
  std::vector<std::int8_t> mantissas(inputs.size());
  // In double, x * 2^exponent is exact for any float x and any exponent in use, so the only
  // rounding is std::round's (halves away from zero).
  const double scale = std::ldexp(1.0, exponent);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (std::isnan(inputs[i])) {
      throw std::invalid_argument("Quantize: input " + std::to_string(i) + " is NaN");
    }
    const double scaled = std::round(static_cast<double>(inputs[i]) * scale);
    mantissas[i] = static_cast<std::int8_t>(std::clamp(scaled, -128.0, 127.0));
  }
  return mantissas;
}

}  // namespace train
}  // namespace lowbit
