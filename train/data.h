// The datasets lowbit-train learns from: Iris and the 8x8 digits (shipped in train/datasets/,
// from scikit-learn, BSD licence) and Fashion-MNIST (Debian's dataset-fashion-mnist). Floats
// live here only: examples are loaded as floats and quantized once (Quantize), before training.
#ifndef LOWBIT_TRAIN_DATA_H_
#define LOWBIT_TRAIN_DATA_H_

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace lowbit {
namespace train {

// A data file that is missing, truncated or malformed: the message names the file and what is
// wrong with it.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Dataset {
  int features = 0;
  // Images (digits, Fashion-MNIST): one channel of height x width pixels, row by row, as the
  // features. Others: 1 x 1.
  int height = 1;
  int width = 1;
  int classes = 0;
  std::vector<float> inputs;  // examples x features, row-major
  std::vector<int> labels;    // one per example, in [0, classes)
  int size() const { return static_cast<int>(labels.size()); }
};

struct Split {
  Dataset train;
  Dataset test;
};

// Where the shipped datasets live (train/datasets/ of the source tree).
std::string ShippedDatasetsDirectory();

// scikit-learn's iris.csv: a header line "150,4,<names>", then 150 lines of 4 features and a
// label.
Dataset LoadIris(const std::string& path);

// scikit-learn's digits.csv.gz: 1797 lines of 64 pixel values (0 to 16) and a label. Unlike
// iris.csv it has no header line, so the count 1797 is checked against the one the file is
// known to have.
Dataset LoadDigits(const std::string& path);

// One gzipped IDX pair: images (magic 0x00000803, count, 28, 28, then the pixels 0 to 255 a
// byte each) and labels (magic 0x00000801, count, then a byte each, below 10). The counts must
// agree and the files must hold exactly what their headers announce. Uncompressed files are read
// too (zlib passes them through).
Dataset LoadIdx(const std::string& images_path, const std::string& labels_path);

// The four gzipped IDX files of Fashion-MNIST in `directory` (train-images-idx3-ubyte.gz,
// train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz): 60000
// training and 10000 test images of 28 x 28 pixels (0 to 255), 10 classes.
Split LoadFashionMnist(const std::string& directory);

// Where Debian's dataset-fashion-mnist installs those files.
std::string DefaultFashionMnistDirectory();

// The functions below take data already loaded: they throw std::invalid_argument, not DataError,
// for a fraction outside [0, 1], an empty train set, inputs of the wrong size, a label out of
// range or a NaN.

// Splits `data` into train and test with `test_fraction` of each class in test (rounded to the
// nearest example, halves away from zero), the examples of each class shuffled by `seed` first.
// The same seed gives the same split on every platform: the shuffles are Fisher-Yates driven by
// splitmix64, not std::shuffle, whose algorithm is the standard library's choice. Train and test
// are each shuffled once more, so that neither is ordered by class.
Split StratifiedSplit(const Dataset& data, double test_fraction, std::uint64_t seed);

// Standardizes each feature to mean 0 and standard deviation 1 (the population's, divided by n)
// over `split.train`, and applies the same affine map to `split.test`. A feature constant over
// train becomes 0 everywhere: it carries nothing to learn from.
void Standardize(Split* split);

// Each input x as the int8 mantissa round(x * 2^exponent), halves rounded away from zero,
// saturated to [-128, 127].
std::vector<std::int8_t> Quantize(const std::vector<float>& inputs, int exponent);

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_DATA_H_
