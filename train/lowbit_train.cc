// lowbit-train: trains an integer-only network (an MLP or a convolutional one) on Iris, the 8x8
// digits or Fashion-MNIST and prints a table per epoch (doc/training.md). Floats appear only where
// data is loaded and figures printed.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "lowbit/lowbit.h"
#include "train/architecture.h"
#include "train/data.h"
#include "train/float_twin.h"
#include "train/model_file.h"
#include "train/network.h"

namespace lowbit {
namespace train {
namespace {

struct Options {
  std::string data = "iris";
  std::string architecture;
  std::string loss;
  int epochs = 0;
  int batch = 0;
  std::uint64_t seed = 1;
  int threads = 1;
  int learning_rate_shift = -1;
  int momentum_shift = 3;
  int weight_decay_shift = 0;
  int max_step = 0;
  std::string save;
  std::string eval;
  bool float_twin = false;
};

const char kUsage[] =
    "usage: lowbit-train [--data iris|digits|fashion-mnist] [--arch 4-8-8-3 | LAYERS]\n"
    "                    [--loss mse|ce]\n"
    "                    [--epochs N] [--batch B] [--seed S] [--threads T]\n"
    "                    [--lr-shift L] [--momentum-shift M] [--weight-decay-shift D]\n"
    "                    [--max-step S] [--save FILE] [--float]\n"
    "       lowbit-train --eval FILE [--data ...] [--threads T]\n"
    "LAYERS: convKxK:C[/sS][/pP], poolK (maxpoolK), avgpoolK, flatten, linear:N, joined by ','\n"
    "        (e.g. conv3x3:16,pool2,conv3x3:32,pool2,linear:10; ReLU follows each conv and each\n"
    "        linear layer but the last)\n";

int ParseInt(const std::string& name, const char* text, int min, int max) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < min || value > max) {
    throw Error(name, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                          "], got \"" + text + "\"");
  }
  return static_cast<int>(value);
}

Options Parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (flag == "--float") {
      options.float_twin = true;
      continue;
    }
    if (i + 1 >= argc) throw Error(flag, "needs a value");
    const char* value = argv[++i];
    if (flag == "--data") {
      options.data = value;
    } else if (flag == "--arch") {
      options.architecture = value;
    } else if (flag == "--loss") {
      options.loss = value;
    } else if (flag == "--epochs") {
      options.epochs = ParseInt(flag, value, 1, 100000);
    } else if (flag == "--batch") {
      options.batch = ParseInt(flag, value, 1, 65536);
    } else if (flag == "--seed") {
      options.seed = static_cast<std::uint64_t>(ParseInt(flag, value, 0, 2147483647));
    } else if (flag == "--threads") {
      options.threads = ParseInt(flag, value, 1, 1024);
    } else if (flag == "--lr-shift") {
      options.learning_rate_shift = ParseInt(flag, value, 0, 30);
    } else if (flag == "--save") {
      options.save = value;
    } else if (flag == "--eval") {
      options.eval = value;
    } else if (flag == "--momentum-shift") {
      options.momentum_shift = ParseInt(flag, value, 0, 16);
    } else if (flag == "--weight-decay-shift") {
      options.weight_decay_shift = ParseInt(flag, value, 0, 30);
    } else if (flag == "--max-step") {
      options.max_step = ParseInt(flag, value, 0, 1 << 30);
    } else {
      throw Error(flag, std::string("is not an option\n") + kUsage);
    }
  }
  if (!options.loss.empty() && options.loss != "mse" && options.loss != "ce") {
    throw Error("--loss", "must be mse or ce, got \"" + options.loss + "\"");
  }
  return options;
}

// Each dataset's defaults (doc/training.md, "The command").
struct Defaults {
  const char* data;
  const char* architecture;
  const char* loss;
  int epochs;
  int batch;
  int learning_rate_shift;
  int input_exponent;
  int activation_exponent;
};
constexpr Defaults kDefaults[] = {
    {"iris", "4-8-8-3", "mse", 500, 8, 10, 5, 5},
    {"digits", "64-64-10", "ce", 50, 16, 10, 5, 5},
    {"fashion-mnist", "784-128-10", "ce", 20, 64, 12, 7, 5},
};

struct Problem {
  Split split;
  Defaults defaults;
};

Problem Load(const Options& options) {
  for (const Defaults& defaults : kDefaults) {
    if (options.data != defaults.data) continue;
    Problem problem{{}, defaults};
    if (options.data == "iris") {
      problem.split =
          StratifiedSplit(LoadIris(ShippedDatasetsDirectory() + "/iris.csv"), 0.2, options.seed);
      Standardize(&problem.split);
    } else if (options.data == "digits") {
      problem.split = StratifiedSplit(LoadDigits(ShippedDatasetsDirectory() + "/digits.csv.gz"),
                                      0.2, options.seed);
      Standardize(&problem.split);
    } else {
      problem.split = LoadFashionMnist(DefaultFashionMnistDirectory());
      // Pixels 0 to 255 as [0, 1), quantized at exponent 7.
      for (Dataset* set : {&problem.split.train, &problem.split.test}) {
        for (float& x : set->inputs) x /= 256.0f;
      }
    }
    return problem;
  }
  throw Error("--data", "must be iris, digits or fashion-mnist, got \"" + options.data + "\"");
}

DyadicInt8 Mantissas(const Dataset& set, int exponent) {
  DyadicInt8 x(set.size(), set.features, exponent);
  x.mantissas = Quantize(set.inputs, exponent);
  return x;
}

// The shape of the data's examples: images have one channel.
ImageShape ExampleShape(const Dataset& set) {
  return {set.height, set.width, set.features / (set.height * set.width)};
}

void CheckFitsData(const Architecture& architecture, const Split& split, const std::string& what) {
  const ImageShape data = ExampleShape(split.train);
  // A network saved with a flat input (an MLP) takes any examples of its size.
  const bool flat = architecture.input.height == 1 && architecture.input.width == 1;
  if ((flat && architecture.input.size() != data.size()) || (!flat && architecture.input != data)) {
    throw Error(what, "takes examples of " + std::to_string(architecture.input.height) + " x " +
                          std::to_string(architecture.input.width) + " x " +
                          std::to_string(architecture.input.channels) + ", the data's are " +
                          std::to_string(data.height) + " x " + std::to_string(data.width) + " x " +
                          std::to_string(data.channels));
  }
  if (architecture.classes() != split.train.classes) {
    throw Error(what, "must end with the data's " + std::to_string(split.train.classes) +
                          " classes, not " + std::to_string(architecture.classes()));
  }
}

// --eval: the saved network's accuracy on the data's test set.
int Evaluate(const Options& options, const Problem& problem) {
  Network network = LoadModel(options.eval);
  CheckFitsData(network.settings().architecture, problem.split, "--eval " + options.eval);
  if (network.settings().input_exponent != problem.defaults.input_exponent) {
    throw Error("--eval " + options.eval, "was trained on inputs at exponent " +
                                              std::to_string(network.settings().input_exponent) +
                                              ", this data's are at " +
                                              std::to_string(problem.defaults.input_exponent));
  }
  Context context;
  context.set_max_num_threads(options.threads);
  const DyadicInt8 test_inputs = Mantissas(problem.split.test, problem.defaults.input_exponent);
  const int correct = CountCorrect(&network, &context, test_inputs, problem.split.test.labels, 256);
  std::printf("test accuracy: %.2f%%\n", 100.0 * correct / problem.split.test.size());
  return 0;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A bar on the terminal's current line during an epoch, redrawn when it grows and erased when
// the epoch ends.
void DrawProgress(int done, int total) {
  constexpr int kWidth = 40;
  static int drawn = -1;
  const int filled = static_cast<int>(static_cast<std::int64_t>(kWidth) * done / total);
  if (filled == drawn && done != total) return;
  drawn = done == total ? -1 : filled;
  std::printf("\r[%s%s] %d/%d", std::string(filled, '=').c_str(),
              std::string(kWidth - filled, ' ').c_str(), done, total);
  if (done == total) std::printf("\r%*s\r", kWidth + 24, "");
  std::fflush(stdout);
}

int Run(int argc, char** argv) {
  const Options options = Parse(argc, argv);
  const Problem problem = Load(options);
  if (!options.eval.empty()) return Evaluate(options, problem);
  NetworkSettings settings;
  settings.architecture = ParseArchitecture(
      options.architecture.empty() ? problem.defaults.architecture : options.architecture,
      ExampleShape(problem.split.train), "--arch");
  CheckFitsData(settings.architecture, problem.split, "--arch");
  settings.input_exponent = problem.defaults.input_exponent;
  settings.activation_exponent = problem.defaults.activation_exponent;
  settings.sgd.learning_rate_shift = options.learning_rate_shift >= 0
                                         ? options.learning_rate_shift
                                         : problem.defaults.learning_rate_shift;
  settings.sgd.momentum_shift = options.momentum_shift;
  settings.sgd.weight_decay_shift = options.weight_decay_shift;
  settings.sgd.max_step = options.max_step;
  settings.seed = options.seed;
  const std::string loss = options.loss.empty() ? problem.defaults.loss : options.loss;
  settings.loss = loss == "ce" ? Loss::kCrossEntropy : Loss::kMse;
  const int epochs = options.epochs > 0 ? options.epochs : problem.defaults.epochs;
  const int batch = options.batch > 0 ? options.batch : problem.defaults.batch;

  Context context;
  context.set_max_num_threads(options.threads);
  Network network(settings);
  const DyadicInt8 train_inputs = Mantissas(problem.split.train, problem.defaults.input_exponent);
  const DyadicInt8 test_inputs = Mantissas(problem.split.test, problem.defaults.input_exponent);
  SeedSequence epoch_seeds(options.seed ^ 0x6a09e667f3bcc908ULL);
  // --float: the float twin, built from the network's initial values and trained on the same
  // numbers in the same batches.
  std::unique_ptr<FloatTwin> twin;
  FloatExamples real_train_inputs;
  FloatExamples real_test_inputs;
  if (options.float_twin) {
    twin = std::make_unique<FloatTwin>(network);
    real_train_inputs = RealValues(train_inputs);
    real_test_inputs = RealValues(test_inputs);
  }
  std::printf("network: %s\n", DescribeArchitecture(settings.architecture).c_str());
  // The float twin's columns follow the exponents, which are padded to line them up.
  const int exponents_width = twin ? 30 : 0;
  std::printf("%5s %10s %7s %7s %8s %8s  %-*s", "epoch", "loss", "train%", "test%", "seconds",
              "clipped%", exponents_width, "exponents forward / backward");
  if (twin) {
    std::printf(" %10s %7s %7s %8s", "float loss", "train%", "test%", "seconds");
  }
  std::printf("\n");
  double test_accuracy = 0;
  double training_seconds = 0;  // the epochs' steps, without the evaluations between them
  double float_test_accuracy = 0;
  double float_seconds = 0;
  const int report_every = epochs > 50 ? epochs / 25 : 1;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    // Only long epochs (hundreds of batches) on a terminal get a bar.
    const bool show_progress = isatty(STDOUT_FILENO) && train_inputs.rows >= 100 * batch;
    const std::uint64_t epoch_seed = epoch_seeds.Next64();
    const EpochStatistics statistics =
        TrainEpoch(&network, &context, train_inputs, problem.split.train.labels, batch, epoch_seed,
                   show_progress ? DrawProgress : nullptr);
    const double seconds = SecondsSince(start);
    training_seconds += seconds;
    FloatEpochStatistics float_statistics;
    double float_epoch_seconds = 0;
    if (twin) {
      const auto float_start = std::chrono::steady_clock::now();
      float_statistics = twin->TrainEpoch(real_train_inputs, problem.split.train.labels, batch,
                                          epoch_seed, show_progress ? DrawProgress : nullptr);
      float_epoch_seconds = SecondsSince(float_start);
      float_seconds += float_epoch_seconds;
    }
    if (epoch % report_every != 0 && epoch != epochs) continue;
    const int train_correct =
        CountCorrect(&network, &context, train_inputs, problem.split.train.labels, 256);
    const int test_correct =
        CountCorrect(&network, &context, test_inputs, problem.split.test.labels, 256);
    test_accuracy = 100.0 * test_correct / problem.split.test.size();
    std::string exponents;
    for (int e : network.ForwardExponents()) exponents += std::to_string(e) + " ";
    exponents += "/";
    for (int e : network.BackwardExponents()) exponents += " " + std::to_string(e);
    const double loss = std::ldexp(static_cast<double>(statistics.totals.loss_mantissa),
                                   -statistics.totals.loss_exponent) /
                        statistics.examples;
    std::printf(
        "%5d %10.5f %7.2f %7.2f %8.3f %8.3f  %-*s", epoch, loss,
        100.0 * train_correct / problem.split.train.size(), test_accuracy, seconds,
        100.0 * statistics.totals.clipped / std::max<std::int64_t>(1, statistics.totals.outputs),
        exponents_width, exponents.c_str());
    if (twin) {
      const int float_train_correct =
          twin->CountCorrect(real_train_inputs, problem.split.train.labels);
      float_test_accuracy = 100.0 *
                            twin->CountCorrect(real_test_inputs, problem.split.test.labels) /
                            problem.split.test.size();
      std::printf(" %10.5f %7.2f %7.2f %8.3f", float_statistics.loss / float_statistics.examples,
                  100.0 * float_train_correct / problem.split.train.size(), float_test_accuracy,
                  float_epoch_seconds);
    }
    std::printf("\n");
  }
  std::printf("training seconds: %.3f (%.4f per epoch)\n", training_seconds,
              training_seconds / epochs);
  if (twin) {
    std::printf("float twin training seconds: %.3f (%.4f per epoch)\n", float_seconds,
                float_seconds / epochs);
    std::printf("float twin test accuracy: %.2f%%\n", float_test_accuracy);
  }
  std::printf("test accuracy: %.2f%%\n", test_accuracy);
  if (!options.save.empty()) SaveModel(network, options.save);
  return 0;
}

}  // namespace
}  // namespace train
}  // namespace lowbit

int main(int argc, char** argv) {
  try {
    return lowbit::train::Run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "lowbit-train: %s\n", error.what());
    return 1;
  }
}
