// Linear and ReLU forward and backward (train/layers.h): the products are lowbit GEMMs with int8
// mantissas, transposes are storage orders, and requantization is the GEMM's output pipeline.
#include "train/layers.h"

#include <algorithm>
#include <string>
#include <tuple>

namespace lowbit {
namespace train {
namespace {

std::int64_t IntegerSquareRoot(std::int64_t n) {
  std::int64_t root = 0;
  for (std::int64_t bit = std::int64_t{1} << 30; bit > 0; bit >>= 1) {
    if ((root + bit) * (root + bit) <= n) root += bit;
  }
  return root;
}

void CheckShape(const char* name, const DyadicInt8& x, int rows, int cols, int exponent) {
  if ((rows >= 0 && x.rows != rows) || x.cols != cols || x.exponent != exponent) {
    throw Error(name, "must be " + (rows >= 0 ? std::to_string(rows) : std::string("batch")) +
                          " x " + std::to_string(cols) + " at exponent " +
                          std::to_string(exponent) + ", got " + std::to_string(x.rows) + " x " +
                          std::to_string(x.cols) + " at exponent " + std::to_string(x.exponent));
  }
}

MatrixMap<const std::int8_t> RowMajor(const DyadicInt8& x) {
  return MatrixMap<const std::int8_t>(x.mantissas.data(), x.rows, x.cols, Order::kRowMajor);
}

}  // namespace

Linear::Linear(int inputs, int outputs, const LinearExponents& exponents, int bits,
               TrainRounding rounding, SeedSequence* init)
    : inputs_(inputs),
      outputs_(outputs),
      exponents_(exponents),
      bits_(bits),
      rounding_(rounding),
      master_weights_(outputs, inputs, exponents.weight_exponent + kMasterBits),
      weights_(outputs, inputs, exponents.weight_exponent),
      master_bias_(outputs),
      bias_(outputs),
      weight_velocity_(outputs, inputs, 0),
      bias_velocity_(outputs),
      weight_gradient_(outputs, inputs, 0),
      bias_gradient_(1, outputs, 0) {
  if (inputs < 1 || outputs < 1) {
    throw Error("linear layer", "needs at least one input and one output, got " +
                                    std::to_string(inputs) + " x " + std::to_string(outputs));
  }
  // He's uniform bound sqrt(6 / inputs) in master units, as an integer square root.
  const int master_exponent = exponents.weight_exponent + kMasterBits;
  const std::int64_t bound = IntegerSquareRoot((std::int64_t{6} << (2 * master_exponent)) / inputs);
  const std::int64_t limit = std::int64_t{QMax(8)} << kMasterBits;
  for (std::int32_t& w : master_weights_.mantissas) {
    const std::int64_t draw =
        static_cast<std::int64_t>(init->Next64() % static_cast<std::uint64_t>(2 * bound + 1));
    w = static_cast<std::int32_t>(std::clamp(draw - bound, -limit, limit));
  }
  RoundFromMasters();
}

void Linear::SetWeights(const std::vector<std::int8_t>& weights,
                        const std::vector<std::int32_t>& bias) {
  if (weights.size() != weights_.mantissas.size() || bias.size() != bias_.size()) {
    throw Error("weights", "must hold " + std::to_string(weights_.mantissas.size()) +
                               " weights and " + std::to_string(bias_.size()) + " biases");
  }
  for (std::size_t i = 0; i < weights.size(); ++i) {
    master_weights_.mantissas[i] = std::int32_t{weights[i]} * (1 << kMasterBits);
  }
  for (std::size_t i = 0; i < bias.size(); ++i) master_bias_[i] = bias[i] * (1 << kMasterBits);
  RoundFromMasters();
}

std::size_t Linear::StateSize() const { return 2 * (weights_.mantissas.size() + bias_.size()); }

void Linear::GetState(std::int32_t* state) const {
  state = std::copy(master_weights_.mantissas.begin(), master_weights_.mantissas.end(), state);
  state = std::copy(master_bias_.begin(), master_bias_.end(), state);
  state = std::copy(weight_velocity_.mantissas.begin(), weight_velocity_.mantissas.end(), state);
  std::copy(bias_velocity_.begin(), bias_velocity_.end(), state);
}

void Linear::SetState(const std::int32_t* state) {
  const std::size_t weights = weights_.mantissas.size();
  const std::size_t biases = bias_.size();
  std::copy_n(state, weights, master_weights_.mantissas.begin());
  std::copy_n(state + weights, biases, master_bias_.begin());
  std::copy_n(state + weights + biases, weights, weight_velocity_.mantissas.begin());
  std::copy_n(state + 2 * weights + biases, biases, bias_velocity_.begin());
  RoundFromMasters();
}

void Linear::RoundFromMasters() {
  for (std::size_t i = 0; i < weights_.mantissas.size(); ++i) {
    const std::int32_t w =
        ShiftRound(master_weights_.mantissas[i], kMasterBits, TrainRounding::kNearest, 0, 0, 0);
    weights_.mantissas[i] = static_cast<std::int8_t>(std::clamp(w, QMin(8), QMax(8)));
  }
  for (int i = 0; i < outputs_; ++i) {
    bias_[i] = ShiftRound(master_bias_[i], kMasterBits, TrainRounding::kNearest, 0, 0, 0);
  }
}

const DyadicInt8& Linear::Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) {
  CheckShape("linear input", x, -1, inputs_, exponents_.input_exponent);
  input_ = x;
  output_ = DyadicInt8(x.rows, outputs_, exponents_.output_exponent());
  // W is outputs x inputs row-major: as the rhs (inputs x outputs) it is column-major.
  const MatrixMap<const std::int8_t> weights_transposed(weights_.mantissas.data(), inputs_,
                                                        outputs_, Order::kColMajor);
  MatrixMap<std::int8_t> result(output_.mantissas.data(), x.rows, outputs_, Order::kRowMajor);
  const auto pipeline = std::make_tuple(
      OutputStageBiasAddition{VectorMap<const std::int32_t>(bias_.data(), outputs_),
                              ChannelAxis::kCol},
      ShiftStage(exponents_.forward_shift, rounding_, seed),
      OutputStageClamp{QMin(bits_), QMax(bits_)}, OutputStageSaturatingCastToInt8{});
  GemmWithOutputPipeline(context, RowMajor(x), weights_transposed, &result, 0, 0, pipeline);
  clipped_outputs_ = std::count_if(output_.mantissas.begin(), output_.mantissas.end(),
                                   [this](std::int8_t y) { return Clipped(y, bits_); });
  return output_;
}

void Linear::Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                      DyadicInt8* input_gradient) {
  CheckShape("linear output gradient", dy, output_.rows, outputs_, dy.exponent);
  masked_gradient_ = dy;
  for (std::size_t i = 0; i < dy.mantissas.size(); ++i) {
    if (Clipped(output_.mantissas[i], bits_)) masked_gradient_.mantissas[i] = 0;
  }
  const int batch = dy.rows;
  // dW = dY^T X: dY (batch x outputs, row-major) is dY^T (outputs x batch) column-major.
  weight_gradient_.exponent = dy.exponent + input_.exponent;
  MatrixMap<std::int32_t> weight_gradient(weight_gradient_.mantissas.data(), outputs_, inputs_,
                                          Order::kRowMajor);
  Gemm(context,
       MatrixMap<const std::int8_t>(masked_gradient_.mantissas.data(), outputs_, batch,
                                    Order::kColMajor),
       RowMajor(input_), &weight_gradient, 0, 0);
  bias_gradient_.exponent = dy.exponent;
  std::fill(bias_gradient_.mantissas.begin(), bias_gradient_.mantissas.end(), 0);
  for (int row = 0; row < batch; ++row) {
    for (int col = 0; col < outputs_; ++col) {
      bias_gradient_.mantissas[col] += masked_gradient_.at(row, col);
    }
  }
  if (input_gradient == nullptr) return;
  // dX = dY W: W (outputs x inputs, row-major) is the rhs as it is.
  *input_gradient = DyadicInt8(batch, inputs_, exponents_.input_gradient_exponent(dy.exponent));
  MatrixMap<std::int8_t> result(input_gradient->mantissas.data(), batch, inputs_, Order::kRowMajor);
  const auto pipeline = std::make_tuple(ShiftStage(exponents_.backward_shift, rounding_, seed),
                                        OutputStageClamp{QMin(bits_), QMax(bits_)},
                                        OutputStageSaturatingCastToInt8{});
  GemmWithOutputPipeline(context, RowMajor(masked_gradient_), RowMajor(weights_), &result, 0, 0,
                         pipeline);
}

// One master entry's move by its gradient (sgd's shifts), at the master's exponent.
void Linear::Step(const SgdSettings& sgd, std::int32_t gradient, int gradient_exponent,
                  std::int32_t* master, std::int32_t* velocity, int master_exponent,
                  std::uint32_t seed, int row, int col) const {
  std::int64_t g = gradient;
  if (sgd.weight_decay_shift > 0) {
    // weight * 2^-weight_decay_shift at the gradient's exponent.
    g += ShiftRound(*master, master_exponent - gradient_exponent + sgd.weight_decay_shift,
                    rounding_, seed ^ 0x5bd1e995U, row, col);
  }
  if (sgd.momentum_shift > 0) {
    // v = (1 - 2^-m) v + g, in the gradient's units.
    g +=
        *velocity - ShiftRound(*velocity, sgd.momentum_shift, TrainRounding::kNearest, 0, row, col);
    *velocity = static_cast<std::int32_t>(std::clamp<std::int64_t>(g, -(1 << 30), 1 << 30));
    g = *velocity;
  }
  std::int32_t step = ShiftRound(
      static_cast<std::int32_t>(std::clamp<std::int64_t>(g, -(1 << 30), 1 << 30)),
      gradient_exponent + sgd.learning_rate_shift - master_exponent, rounding_, seed, row, col);
  if (sgd.max_step > 0) step = std::clamp(step, -sgd.max_step, sgd.max_step);
  *master -= step;
}

void Linear::Update(const SgdSettings& sgd, SeedSequence* seeds) {
  const std::uint32_t weight_seed = seeds->Next();
  const std::uint32_t bias_seed = seeds->Next();
  const int weight_master_exponent = master_weights_.exponent;
  const std::int32_t weight_limit = QMax(8) * (1 << kMasterBits);
  for (int row = 0; row < outputs_; ++row) {
    for (int col = 0; col < inputs_; ++col) {
      std::int32_t& master = master_weights_.at(row, col);
      Step(sgd, weight_gradient_.at(row, col), weight_gradient_.exponent, &master,
           &weight_velocity_.at(row, col), weight_master_exponent, weight_seed, row, col);
      master = std::clamp(master, -weight_limit, weight_limit);
    }
  }
  const int bias_master_exponent =
      exponents_.input_exponent + exponents_.weight_exponent + kMasterBits;
  for (int col = 0; col < outputs_; ++col) {
    Step(sgd, bias_gradient_.mantissas[col], bias_gradient_.exponent, &master_bias_[col],
         &bias_velocity_[col], bias_master_exponent, bias_seed, 0, col);
    master_bias_[col] = std::clamp(master_bias_[col], -(1 << 30), 1 << 30);
  }
  RoundFromMasters();
}

const DyadicInt8& Relu::Forward(const DyadicInt8& x) {
  output_ = x;
  for (std::int8_t& y : output_.mantissas) y = std::max<std::int8_t>(y, 0);
  return output_;
}

void Relu::Backward(const DyadicInt8& dy, DyadicInt8* input_gradient) const {
  *input_gradient = dy;
  for (std::size_t i = 0; i < dy.mantissas.size(); ++i) {
    if (output_.mantissas[i] <= 0) input_gradient->mantissas[i] = 0;
  }
}

}  // namespace train
}  // namespace lowbit
