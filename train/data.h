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

// scikit-learn's digits.csv.gz: 1797 lines of 64 pixel values (0 to 16) and a label.
Dataset LoadDigits(const std::string& path);

// The four gzipped IDX files of Fashion-MNIST in `directory` (train-images-idx3-ubyte.gz,
// train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz): 60000
// training and 10000 test images of 28 x 28 pixels (0 to 255), 10 classes.
Split LoadFashionMnist(const std::string& directory);

// Where Debian's dataset-fashion-mnist installs those files.
std::string DefaultFashionMnistDirectory();

// Splits `data` into train and test with `test_fraction` of each class in test (rounded to the
// nearest example), the examples of each class shuffled by `seed` first. The same seed gives the
// same split.
Split StratifiedSplit(const Dataset& data, double test_fraction, std::uint64_t seed);

// Standardizes each feature to mean 0 and standard deviation 1 over `split.train`, and applies
// the same affine map to `split.test`.
void Standardize(Split* split);

// Each input x as the int8 mantissa round(x * 2^exponent), saturated to [-128, 127].
std::vector<std::int8_t> Quantize(const std::vector<float>& inputs, int exponent);

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_DATA_H_
