// The dataset loaders of lowbit-train (train/data.h) on the shipped files, on small files written
// here (good and broken), and on Fashion-MNIST where Debian's package is installed.
#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "train/data.h"

namespace lowbit {
namespace train {
namespace {

// A directory of its own for each test, so that ctest may run the cases in parallel.
std::string TestDirectory() {
  const testing::TestInfo* info = testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path directory =
      std::filesystem::path(testing::TempDir()) / "lowbit_train_data_test" /
      (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  return directory.string();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary);
  file << bytes;
  ASSERT_TRUE(file.good()) << path;
}

void WriteGzip(const std::string& path, const std::string& bytes) {
  gzFile file = gzopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr) << path;
  ASSERT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(file), Z_OK);
}

std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// Expects `load` to throw DataError whose message contains every one of `fragments`.
void ExpectDataError(const std::function<void()>& load,
                     std::initializer_list<std::string> fragments) {
  try {
    load();
    ADD_FAILURE() << "no DataError";
  } catch (const DataError& error) {
    const std::string message = error.what();
    for (const std::string& fragment : fragments) {
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "'" << fragment << "' not in: " << message;
    }
  }
}

std::vector<int> ClassCounts(const Dataset& data) {
  std::vector<int> counts(static_cast<std::size_t>(data.classes), 0);
  for (int label : data.labels) ++counts.at(static_cast<std::size_t>(label));
  return counts;
}

// --- The shipped datasets ---

std::string IrisPath() { return ShippedDatasetsDirectory() + "/iris.csv"; }
std::string DigitsPath() { return ShippedDatasetsDirectory() + "/digits.csv.gz"; }

TEST(ShippedData, Iris) {
  const Dataset iris = LoadIris(IrisPath());
  EXPECT_EQ(iris.size(), 150);
  EXPECT_EQ(iris.features, 4);
  EXPECT_EQ(iris.classes, 3);
  ASSERT_EQ(iris.inputs.size(), 150u * 4);
  EXPECT_EQ(ClassCounts(iris), (std::vector<int>{50, 50, 50}));
  // The file's first and last rows: "5.1,3.5,1.4,0.2,0" and "5.9,3.0,5.1,1.8,2".
  EXPECT_EQ(std::vector<float>(iris.inputs.begin(), iris.inputs.begin() + 4),
            (std::vector<float>{5.1f, 3.5f, 1.4f, 0.2f}));
  EXPECT_EQ(iris.labels.front(), 0);
  EXPECT_EQ(std::vector<float>(iris.inputs.end() - 4, iris.inputs.end()),
            (std::vector<float>{5.9f, 3.0f, 5.1f, 1.8f}));
  EXPECT_EQ(iris.labels.back(), 2);
}

TEST(ShippedData, Digits) {
  const Dataset digits = LoadDigits(DigitsPath());
  EXPECT_EQ(digits.size(), 1797);
  EXPECT_EQ(digits.features, 64);
  EXPECT_EQ(digits.height, 8);  // images, for convolutional networks
  EXPECT_EQ(digits.width, 8);
  EXPECT_EQ(digits.classes, 10);
  ASSERT_EQ(digits.inputs.size(), 1797u * 64);
  for (float pixel : digits.inputs) {
    ASSERT_TRUE(pixel >= 0 && pixel <= 16 && pixel == std::floor(pixel)) << pixel;
  }
  EXPECT_EQ(*std::max_element(digits.inputs.begin(), digits.inputs.end()), 16.0f);
  // Not balanced: the UCI test set has 174 to 183 examples of each digit.
  EXPECT_EQ(ClassCounts(digits),
            (std::vector<int>{178, 182, 177, 183, 181, 182, 181, 179, 174, 180}));
  // The first row is a 0: "0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,...".
  EXPECT_EQ(std::vector<float>(digits.inputs.begin(), digits.inputs.begin() + 16),
            (std::vector<float>{0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0}));
  EXPECT_EQ(digits.labels.front(), 0);
  EXPECT_EQ(digits.labels.back(), 8);
}

// --- CSV errors ---

// A well-formed iris-like file of 6 examples, 2 per class, lines 2 to 7; tests break one line.
std::vector<std::string> SmallIrisLines() {
  return {"6,4,a,b,c",         "5.1,3.5,1.4,0.2,0", "4.9,3.0,1.4,0.2,0", "7.0,3.2,4.7,1.4,1",
          "6.4,3.2,4.5,1.5,1", "6.3,3.3,6.0,2.5,2", "5.8,2.7,5.1,1.9,2"};
}

std::string Join(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

TEST(CsvErrors, SmallFileLoads) {
  const std::string path = TestDirectory() + "/iris.csv";
  WriteFile(path, Join(SmallIrisLines()));
  const Dataset data = LoadIris(path);
  EXPECT_EQ(data.size(), 6);
  EXPECT_EQ(data.features, 4);
  EXPECT_EQ(data.classes, 3);
  EXPECT_EQ(data.labels, (std::vector<int>{0, 0, 1, 1, 2, 2}));
  EXPECT_EQ(data.inputs[4 * 5 + 3], 1.9f);
}

TEST(CsvErrors, CrlfLineEndingsLoad) {
  const std::string path = TestDirectory() + "/iris.csv";
  std::string text;
  for (const std::string& line : SmallIrisLines()) text += line + "\r\n";
  WriteFile(path, text);
  EXPECT_EQ(LoadIris(path).labels, (std::vector<int>{0, 0, 1, 1, 2, 2}));
}

TEST(CsvErrors, MissingFile) {
  const std::string path = TestDirectory() + "/absent.csv";
  ExpectDataError([&] { LoadIris(path); }, {path, "cannot open: No such file or directory"});
  ExpectDataError([&] { LoadDigits(path); }, {path, "cannot open"});
}

TEST(CsvErrors, WrongColumnCount) {
  const std::string path = TestDirectory() + "/iris.csv";
  std::vector<std::string> lines = SmallIrisLines();
  lines[6] = "5.8,2.7,5.1,2";
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); },
                  {path + ": line 7: expected 5 comma-separated values, got 4"});
}

TEST(CsvErrors, MalformedNumber) {
  const std::string path = TestDirectory() + "/iris.csv";
  std::vector<std::string> lines = SmallIrisLines();
  lines[2] = "4.9,3.0x,1.4,0.2,0";
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); }, {path, "line 3, value 2", "malformed number '3.0x'"});
}

TEST(CsvErrors, EmptyValue) {
  const std::string path = TestDirectory() + "/iris.csv";
  std::vector<std::string> lines = SmallIrisLines();
  lines[4] = "6.4,,4.5,1.5,1";
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); }, {path, "line 5, value 2", "malformed number ''"});
}

TEST(CsvErrors, NonIntegerLabel) {
  const std::string path = TestDirectory() + "/iris.csv";
  std::vector<std::string> lines = SmallIrisLines();
  lines[3] = "7.0,3.2,4.7,1.4,1.0";
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); }, {path, "line 4, value 5", "malformed label '1.0'"});
}

TEST(CsvErrors, LabelOutOfRange) {
  const std::string path = TestDirectory() + "/iris.csv";
  std::vector<std::string> lines = SmallIrisLines();
  lines[5] = "6.3,3.3,6.0,2.5,3";
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); }, {path, "line 6", "label 3 out of range [0, 3)"});
  lines[5] = "6.3,3.3,6.0,2.5,-1";
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); }, {path, "line 6", "label -1 out of range [0, 3)"});
}

TEST(CsvErrors, HeaderCountMismatch) {
  const std::string path = TestDirectory() + "/iris.csv";
  std::vector<std::string> lines = SmallIrisLines();
  lines.pop_back();
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); }, {path, "the header says 6 examples, the file has 5"});
  lines = SmallIrisLines();
  lines[0] = "150,4,a,b,c";
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); }, {path, "the header says 150 examples, the file has 6"});
}

TEST(CsvErrors, MalformedHeader) {
  const std::string path = TestDirectory() + "/iris.csv";
  std::vector<std::string> lines = SmallIrisLines();
  lines[0] = "6,4";
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); }, {path, "line 1", "expected a header"});
  lines[0] = "six,4,a,b,c";
  WriteFile(path, Join(lines));
  ExpectDataError([&] { LoadIris(path); }, {path, "malformed example count 'six'"});
  WriteFile(path, "");
  ExpectDataError([&] { LoadIris(path); }, {path, "empty file"});
}

// A digits-like file: `examples` rows of 64 pixels and a label.
std::string DigitsText(int examples) {
  std::string text;
  for (int example = 0; example < examples; ++example) {
    for (int pixel = 0; pixel < 64; ++pixel) text += std::to_string((example + pixel) % 17) + ",";
    text += std::to_string(example % 10) + "\n";
  }
  return text;
}

TEST(CsvErrors, DigitsCountAndRange) {
  const std::string directory = TestDirectory();
  const std::string path = directory + "/digits.csv.gz";
  WriteGzip(path, DigitsText(3));
  ExpectDataError([&] { LoadDigits(path); }, {path, "expected 1797 examples, the file has 3"});

  std::string text = DigitsText(3);
  text.replace(text.find("16,"), 3, "17,");
  WriteGzip(path, text);
  ExpectDataError([&] { LoadDigits(path); }, {path, "line 1, value 17", "17 out of range [0, 16]"});

  text = DigitsText(3);
  text.replace(text.rfind(",2\n"), 3, "\n");  // the last row's label dropped
  WriteGzip(path, text);
  ExpectDataError([&] { LoadDigits(path); },
                  {path, "line 3: expected 65 comma-separated values, got 64"});
}

TEST(CsvErrors, TruncatedGzip) {
  const std::string directory = TestDirectory();
  const std::string whole = directory + "/whole.csv.gz";
  const std::string cut = directory + "/cut.csv.gz";
  WriteGzip(whole, DigitsText(1797));
  const std::string bytes = ReadFile(whole);
  ASSERT_GT(bytes.size(), 1000u);
  WriteFile(cut, bytes.substr(0, bytes.size() / 2));
  ExpectDataError([&] { LoadDigits(cut); }, {cut, "truncated", "gzip stream ends early"});
  // The same data, whole, loads: the failure above is the cut's.
  EXPECT_EQ(LoadDigits(whole).size(), 1797);
}

TEST(CsvErrors, CorruptGzip) {
  const std::string directory = TestDirectory();
  const std::string path = directory + "/digits.csv.gz";
  WriteGzip(path, DigitsText(20));
  std::string bytes = ReadFile(path);
  bytes[bytes.size() - 6] ^= 0x55;  // in the CRC-32 of the trailer
  WriteFile(path, bytes);
  ExpectDataError([&] { LoadDigits(path); }, {path, "corrupt gzip data"});
}

// --- IDX ---

std::string BigEndian(std::uint32_t value) {
  return {static_cast<char>(value >> 24), static_cast<char>(value >> 16),
          static_cast<char>(value >> 8), static_cast<char>(value)};
}

std::uint8_t Pixel(int image, int index) { return static_cast<std::uint8_t>(image * 91 + index); }

std::string IdxImages(int count, int rows = 28, int cols = 28, std::uint32_t magic = 0x00000803) {
  std::string bytes = BigEndian(magic) + BigEndian(static_cast<std::uint32_t>(count)) +
                      BigEndian(static_cast<std::uint32_t>(rows)) +
                      BigEndian(static_cast<std::uint32_t>(cols));
  for (int image = 0; image < count; ++image) {
    for (int index = 0; index < rows * cols; ++index) {
      bytes += static_cast<char>(Pixel(image, index));
    }
  }
  return bytes;
}

std::string IdxLabels(const std::vector<int>& labels, std::uint32_t magic = 0x00000801) {
  std::string bytes = BigEndian(magic) + BigEndian(static_cast<std::uint32_t>(labels.size()));
  for (int label : labels) bytes += static_cast<char>(label);
  return bytes;
}

class Idx : public testing::Test {
 protected:
  void SetUp() override {
    directory_ = TestDirectory();
    images_ = directory_ + "/images-idx3-ubyte.gz";
    labels_ = directory_ + "/labels-idx1-ubyte.gz";
  }
  void Write(const std::string& images, const std::string& labels) {
    WriteGzip(images_, images);
    WriteGzip(labels_, labels);
  }
  Dataset Load() { return LoadIdx(images_, labels_); }

  std::string directory_;
  std::string images_;
  std::string labels_;
};

TEST_F(Idx, LoadsSyntheticSet) {
  Write(IdxImages(3), IdxLabels({2, 0, 9}));
  const Dataset data = Load();
  EXPECT_EQ(data.size(), 3);
  EXPECT_EQ(data.features, 784);
  EXPECT_EQ(data.height, 28);
  EXPECT_EQ(data.width, 28);
  EXPECT_EQ(data.classes, 10);
  EXPECT_EQ(data.labels, (std::vector<int>{2, 0, 9}));
  ASSERT_EQ(data.inputs.size(), 3u * 784);
  for (int image = 0; image < 3; ++image) {
    for (int index = 0; index < 784; ++index) {
      ASSERT_EQ(data.inputs[static_cast<std::size_t>(image * 784 + index)], Pixel(image, index))
          << image << " " << index;
    }
  }
}

TEST_F(Idx, MissingFile) {
  WriteGzip(images_, IdxImages(3));
  ExpectDataError([&] { Load(); }, {labels_, "cannot open: No such file or directory"});
}

TEST_F(Idx, TruncatedPixels) {
  std::string images = IdxImages(3);
  images.resize(16 + 2 * 784 + 392);
  Write(images, IdxLabels({2, 0, 9}));
  ExpectDataError([&] { Load(); }, {images_, "truncated: expected 2352 bytes of pixels, got 1960"});
}

TEST_F(Idx, TruncatedLabels) {
  std::string labels = IdxLabels({2, 0, 9});
  labels.pop_back();
  Write(IdxImages(3), labels);
  ExpectDataError([&] { Load(); }, {labels_, "truncated: expected 3 bytes of labels, got 2"});
}

TEST_F(Idx, TruncatedHeader) {
  Write(IdxImages(3).substr(0, 10), IdxLabels({2, 0, 9}));
  ExpectDataError([&] { Load(); }, {images_, "truncated: expected 12 bytes of header, got 6"});
}

TEST_F(Idx, TruncatedGzipStream) {
  Write(IdxImages(3), IdxLabels({2, 0, 9}));
  const std::string bytes = ReadFile(images_);
  WriteFile(images_, bytes.substr(0, bytes.size() - 4));  // no length in the trailer
  ExpectDataError([&] { Load(); }, {images_, "truncated", "gzip stream ends early"});
}

TEST_F(Idx, TrailingData) {
  Write(IdxImages(3) + "x", IdxLabels({2, 0, 9}));
  ExpectDataError([&] { Load(); }, {images_, "more data than the header announces"});
}

TEST_F(Idx, BadMagic) {
  // Labels where images belong, and images where labels belong.
  Write(IdxLabels({2, 0, 9}), IdxImages(3));
  ExpectDataError([&] { Load(); }, {images_, "bad magic 0x00000801, expected 0x00000803"});
  Write(IdxImages(3), IdxImages(3));
  ExpectDataError([&] { Load(); }, {labels_, "bad magic 0x00000803, expected 0x00000801"});
}

TEST_F(Idx, WrongImageSize) {
  Write(IdxImages(3, 28, 27), IdxLabels({2, 0, 9}));
  ExpectDataError([&] { Load(); }, {images_, "images are 28 x 27, expected 28 x 28"});
}

TEST_F(Idx, CountMismatch) {
  Write(IdxImages(3), IdxLabels({2, 0}));
  ExpectDataError([&] { Load(); }, {labels_, "2 labels, but", images_, "has 3 images"});
}

TEST_F(Idx, LabelOutOfRange) {
  Write(IdxImages(3), IdxLabels({2, 12, 9}));
  ExpectDataError([&] { Load(); }, {labels_, "example 1: label 12 out of range [0, 10)"});
}

TEST_F(Idx, HugeCountFailsAsTruncated) {
  // A header announcing 2^32 - 1 images must not allocate for them before reading.
  std::string images = IdxImages(3);
  images.replace(4, 4, BigEndian(0xffffffffu));
  std::string labels = IdxLabels({2, 0, 9});
  labels.replace(4, 4, BigEndian(0xffffffffu));
  Write(images, labels);
  ExpectDataError([&] { Load(); }, {images_, "truncated: expected 3367254359280 bytes of pixels"});
}

TEST_F(Idx, FashionMnistChecksCounts) {
  // A well-formed set under Fashion-MNIST's names, but 3 images instead of 60000.
  WriteGzip(directory_ + "/train-images-idx3-ubyte.gz", IdxImages(3));
  WriteGzip(directory_ + "/train-labels-idx1-ubyte.gz", IdxLabels({2, 0, 9}));
  ExpectDataError([&] { LoadFashionMnist(directory_); },
                  {directory_ + "/train-images-idx3-ubyte.gz", "3 images, expected 60000"});
}

TEST(FashionMnist, RealSet) {
  const std::string directory = DefaultFashionMnistDirectory();
  if (!std::filesystem::is_directory(directory)) {
    GTEST_SKIP() << directory << " absent: install Debian's dataset-fashion-mnist";
  }
  const Split split = LoadFashionMnist(directory);
  EXPECT_EQ(split.train.size(), 60000);
  EXPECT_EQ(split.test.size(), 10000);
  for (const Dataset* data : {&split.train, &split.test}) {
    EXPECT_EQ(data->features, 784);
    EXPECT_EQ(data->classes, 10);
    ASSERT_EQ(data->inputs.size(), static_cast<std::size_t>(data->size()) * 784);
    EXPECT_EQ(*std::min_element(data->inputs.begin(), data->inputs.end()), 0.0f);
    EXPECT_EQ(*std::max_element(data->inputs.begin(), data->inputs.end()), 255.0f);
  }
  // Balanced: 6000 and 1000 of each class; the first image of each file is an ankle boot (9).
  EXPECT_EQ(ClassCounts(split.train), std::vector<int>(10, 6000));
  EXPECT_EQ(ClassCounts(split.test), std::vector<int>(10, 1000));
  EXPECT_EQ(split.train.labels.front(), 9);
  EXPECT_EQ(split.test.labels.front(), 9);
}

// --- StratifiedSplit ---

// Each example as its row and label, sorted: equal for two datasets that are permutations of
// each other.
std::vector<std::tuple<std::vector<float>, int>> SortedExamples(
    std::initializer_list<const Dataset*> datasets) {
  std::vector<std::tuple<std::vector<float>, int>> examples;
  for (const Dataset* data : datasets) {
    const auto features = static_cast<std::ptrdiff_t>(data->features);
    for (int i = 0; i < data->size(); ++i) {
      const auto row = data->inputs.begin() + i * features;
      examples.emplace_back(std::vector<float>(row, row + features),
                            data->labels[static_cast<std::size_t>(i)]);
    }
  }
  std::sort(examples.begin(), examples.end());
  return examples;
}

TEST(StratifiedSplit, IrisClassCounts) {
  const Dataset iris = LoadIris(IrisPath());
  const Split split = StratifiedSplit(iris, 0.2, 1);
  EXPECT_EQ(split.train.size(), 120);
  EXPECT_EQ(split.test.size(), 30);
  EXPECT_EQ(ClassCounts(split.test), (std::vector<int>{10, 10, 10}));
  EXPECT_EQ(ClassCounts(split.train), (std::vector<int>{40, 40, 40}));
  EXPECT_EQ(split.train.features, 4);
  EXPECT_EQ(split.train.classes, 3);
  EXPECT_EQ(split.test.features, 4);
  EXPECT_EQ(split.test.classes, 3);
}

TEST(StratifiedSplit, DigitsClassCounts) {
  const Dataset digits = LoadDigits(DigitsPath());
  const Split split = StratifiedSplit(digits, 0.2, 7);
  // The split keeps the examples' image shape.
  EXPECT_EQ(split.train.height, 8);
  EXPECT_EQ(split.test.width, 8);
  const std::vector<int> counts = ClassCounts(digits);
  const std::vector<int> test_counts = ClassCounts(split.test);
  const std::vector<int> train_counts = ClassCounts(split.train);
  for (std::size_t label = 0; label < counts.size(); ++label) {
    const int expected = static_cast<int>(std::lround(0.2 * counts[label]));
    EXPECT_EQ(test_counts[label], expected) << label;
    EXPECT_EQ(train_counts[label], counts[label] - expected) << label;
  }
  // Rounded per class: 36+36+35+37+36+36+36+36+35+36.
  EXPECT_EQ(split.test.size(), 359);
  EXPECT_EQ(split.train.size(), 1438);
}

TEST(StratifiedSplit, RoundsHalvesUpAndTakesWholeOrNoClass) {
  Dataset data;
  data.features = 1;
  data.classes = 2;
  for (int i = 0; i < 5; ++i) data.labels.push_back(0);
  for (int i = 0; i < 3; ++i) data.labels.push_back(1);
  for (int i = 0; i < 8; ++i) data.inputs.push_back(static_cast<float>(i));
  EXPECT_EQ(ClassCounts(StratifiedSplit(data, 0.5, 3).test), (std::vector<int>{3, 2}));
  EXPECT_EQ(StratifiedSplit(data, 0.0, 3).test.size(), 0);
  EXPECT_EQ(StratifiedSplit(data, 1.0, 3).train.size(), 0);
  EXPECT_THROW(StratifiedSplit(data, 1.5, 3), std::invalid_argument);
  EXPECT_THROW(StratifiedSplit(data, -0.1, 3), std::invalid_argument);
  data.labels[0] = 2;
  EXPECT_THROW(StratifiedSplit(data, 0.5, 3), std::invalid_argument);
}

TEST(StratifiedSplit, IsAPermutation) {
  const Dataset iris = LoadIris(IrisPath());
  const Split split = StratifiedSplit(iris, 0.2, 42);
  EXPECT_EQ(SortedExamples({&split.train, &split.test}), SortedExamples({&iris}));
}

TEST(StratifiedSplit, SameSeedSameSplit) {
  const Dataset digits = LoadDigits(DigitsPath());
  const Split first = StratifiedSplit(digits, 0.2, 5);
  const Split second = StratifiedSplit(digits, 0.2, 5);
  EXPECT_EQ(first.train.inputs, second.train.inputs);
  EXPECT_EQ(first.train.labels, second.train.labels);
  EXPECT_EQ(first.test.inputs, second.test.inputs);
  EXPECT_EQ(first.test.labels, second.test.labels);
}

// The split that the documented algorithm (splitmix64, Fisher-Yates from the back with rejection
// of the draws below 2^64 mod n, each class in turn, then train, then test) gives, computed
// outside this library: a change of generator or of order of draws shows here.
TEST(StratifiedSplit, MatchesTheDocumentedAlgorithm) {
  Dataset data;
  data.features = 1;
  data.classes = 2;
  for (int i = 0; i < 10; ++i) {
    data.inputs.push_back(static_cast<float>(i));
    data.labels.push_back(i % 2);
  }
  const Split split = StratifiedSplit(data, 0.4, 2024);
  EXPECT_EQ(split.train.inputs, (std::vector<float>{7, 5, 2, 4, 0, 9}));
  EXPECT_EQ(split.test.inputs, (std::vector<float>{3, 1, 6, 8}));
  EXPECT_EQ(split.train.labels, (std::vector<int>{1, 1, 0, 0, 0, 1}));
  EXPECT_EQ(split.test.labels, (std::vector<int>{1, 1, 0, 0}));
}

TEST(StratifiedSplit, DifferentSeedDifferentSplit) {
  const Dataset digits = LoadDigits(DigitsPath());
  const Split first = StratifiedSplit(digits, 0.2, 5);
  const Split second = StratifiedSplit(digits, 0.2, 6);
  EXPECT_NE(first.test.inputs, second.test.inputs);
  // Different members, not only a different order.
  EXPECT_NE(SortedExamples({&first.test}), SortedExamples({&second.test}));
}

TEST(StratifiedSplit, ShufflesAcrossClasses) {
  const Dataset iris = LoadIris(IrisPath());
  const Split split = StratifiedSplit(iris, 0.2, 9);
  EXPECT_FALSE(std::is_sorted(split.train.labels.begin(), split.train.labels.end()));
  EXPECT_FALSE(std::is_sorted(split.test.labels.begin(), split.test.labels.end()));
}

// --- Standardize ---

TEST(Standardize, TrainHasMeanZeroAndDeviationOne) {
  const Dataset iris = LoadIris(IrisPath());
  const Split raw = StratifiedSplit(iris, 0.2, 1);
  Split split = raw;
  Standardize(&split);
  const std::size_t examples = static_cast<std::size_t>(split.train.size());
  for (std::size_t f = 0; f < 4; ++f) {
    double sum = 0.0;
    double squares = 0.0;
    double raw_mean = 0.0;
    double raw_squares = 0.0;
    for (std::size_t i = 0; i < examples; ++i) {
      sum += split.train.inputs[i * 4 + f];
      squares += double{split.train.inputs[i * 4 + f]} * split.train.inputs[i * 4 + f];
      raw_mean += raw.train.inputs[i * 4 + f];
    }
    raw_mean /= static_cast<double>(examples);
    for (std::size_t i = 0; i < examples; ++i) {
      const double deviation = raw.train.inputs[i * 4 + f] - raw_mean;
      raw_squares += deviation * deviation;
    }
    const double raw_deviation = std::sqrt(raw_squares / static_cast<double>(examples));
    EXPECT_NEAR(sum / static_cast<double>(examples), 0.0, 1e-6) << f;
    EXPECT_NEAR(std::sqrt(squares / static_cast<double>(examples)), 1.0, 1e-5) << f;
    // Test goes through train's map, not its own.
    for (std::size_t i = 0; i < static_cast<std::size_t>(split.test.size()); ++i) {
      EXPECT_NEAR(split.test.inputs[i * 4 + f],
                  (raw.test.inputs[i * 4 + f] - raw_mean) / raw_deviation, 1e-5);
    }
  }
  EXPECT_EQ(split.train.labels, raw.train.labels);
  EXPECT_EQ(split.test.labels, raw.test.labels);
}

TEST(Standardize, ConstantFeatureBecomesZero) {
  Split split;
  split.train.features = split.test.features = 2;
  split.train.classes = split.test.classes = 1;
  split.train.inputs = {3, 1, 3, 2, 3, 3};
  split.train.labels = {0, 0, 0};
  split.test.inputs = {5, 2};
  split.test.labels = {0};
  Standardize(&split);
  EXPECT_EQ(split.train.inputs[0], 0.0f);
  EXPECT_EQ(split.train.inputs[2], 0.0f);
  EXPECT_EQ(split.train.inputs[4], 0.0f);
  EXPECT_EQ(split.test.inputs[0], 0.0f);
  // The other feature: mean 2, deviation sqrt(2/3).
  EXPECT_NEAR(split.train.inputs[1], -1.0 / std::sqrt(2.0 / 3.0), 1e-6);
  EXPECT_EQ(split.test.inputs[1], 0.0f);
}

// --- Quantize ---

TEST(Quantize, RoundsHalvesAwayFromZero) {
  EXPECT_EQ(Quantize({0.5f, -0.5f, 1.49f, 1.5f, 2.5f, -2.5f, 0.0f, -0.49f}, 0),
            (std::vector<std::int8_t>{1, -1, 1, 2, 3, -3, 0, 0}));
  // 0.3125 * 8 = 2.5, 0.1875 * 8 = 1.5; 12 / 8 = 1.5, -20 / 8 = -2.5.
  EXPECT_EQ(Quantize({0.3125f, 0.1875f, -0.3125f}, 3), (std::vector<std::int8_t>{3, 2, -3}));
  EXPECT_EQ(Quantize({12.0f, -20.0f, 64.0f}, -3), (std::vector<std::int8_t>{2, -3, 8}));
}

TEST(Quantize, Saturates) {
  constexpr float kInfinity = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Quantize({127.4f, 127.5f, -128.4f, -128.5f, 1e30f, -1e30f}, 0),
            (std::vector<std::int8_t>{127, 127, -128, -128, 127, -128}));
  EXPECT_EQ(Quantize({100.0f, -100.0f, 63.0f, -64.0f}, 1),
            (std::vector<std::int8_t>{127, -128, 126, -128}));
  EXPECT_EQ(Quantize({kInfinity, -kInfinity}, 4), (std::vector<std::int8_t>{127, -128}));
  EXPECT_THROW(Quantize({1.0f, std::numeric_limits<float>::quiet_NaN()}, 0), std::invalid_argument);
}

}  // namespace
}  // namespace train
}  // namespace lowbit
