// Linear and ReLU forward and backward (train/layers.h): the products are lowbit GEMMs with int8
// mantissas, transposes are storage orders, and requantization is the GEMM's output pipeline.
#include "train/layers.h"

#include <algorithm>
#include <climits>
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

MatrixMap<const std::int8_t> RowMajor(const DyadicInt8& x) {
  return MatrixMap<const std::int8_t>(x.mantissas.data(), x.rows, x.cols, Order::kRowMajor);
}

// The update's bounds keep every intermediate inside int32 (so that its loops vectorize without
// 64-bit lanes): a gradient term within +-2^29, a velocity within +-2^30, shifts in [-30, 30],
// steps within +-2^30 and masters within +-(2^30 - 1), so that a step cannot overflow them.
constexpr std::int32_t kGradientBound = 1 << 29;
constexpr std::int32_t kVelocityBound = 1 << 30;
constexpr std::int32_t kBiasMasterBound = (1 << 30) - 1;

// SgdSettings as shifts between one tensor's gradient and master exponents.
struct UpdateShifts {
  int decay = 0;  // master -> decay term at the gradient's exponent; applied when decay_on
  bool decay_on = false;
  int momentum = 0;  // v = (1 - 2^-momentum) v + g; 0 keeps no history (v = g)
  int step = 0;      // velocity -> master units: the learning rate
  std::int32_t max_step = 0;
  bool stochastic = true;
};

// An arithmetic right shift by `shift` in [0, 30] that rounds, for |v| <= 2^30: an offset
// added before the shift makes it round to nearest, ties away from zero, or stochastically with
// 32 random bits (StochasticRoundingBits). Each offset is a few branch-free operations, so that
// the loops over it vectorize.
struct RightShift {
  explicit RightShift(int shift_bits)
      : shift(shift_bits),
        half(shift_bits > 0 ? (std::int32_t{1} << (shift_bits - 1)) - 1 : 0),
        tie_up(shift_bits > 0) {}
  std::int32_t NearestOffset(std::int32_t v) const { return half + ((~v >> 31) & tie_up); }
  std::int32_t StochasticOffset(std::uint32_t random) const {
    return static_cast<std::int32_t>((random >> 1) >> (31 - shift));
  }
  std::int32_t Nearest(std::int32_t v) const { return (v + NearestOffset(v)) >> shift; }
  std::int32_t Stochastic(std::int32_t v, std::uint32_t random) const {
    return (v + StochasticOffset(random)) >> shift;
  }

  int shift;
  std::int32_t half;    // 2^(shift - 1) - 1, or 0 for no shift
  std::int32_t tie_up;  // 1 when shift > 0: a tie of a non-negative v rounds up
};

// v * 2^-shift, clamped to +-2^30, for |v| <= 2^30 and shift in [-30, 30]: the bits of
// ShiftRound clamped the same way. A right shift rounds stochastically with `random` or to
// nearest. Branch-free (a left shift is a right shift by 0, a choice of rounding is a mask),
// because GCC does not unswitch loops this large.
inline std::int32_t RoundShift(std::int32_t v, int shift, bool stochastic, std::uint32_t random) {
  const RightShift right(std::max(shift, 0));
  const int left = std::max(-shift, 0);
  const std::int32_t bound = kVelocityBound >> left;
  const std::int32_t x =
      static_cast<std::int32_t>(static_cast<std::uint32_t>(std::clamp(v, -bound, bound)) << left);
  const std::int32_t choose_stochastic = -static_cast<std::int32_t>(stochastic);
  return (x + ((right.StochasticOffset(random) & choose_stochastic) |
               (right.NearestOffset(x) & ~choose_stochastic))) >>
         right.shift;
}

// masked[i] = low < outputs[i] < high ? gradients[i] : 0: a gradient through an elementwise
// forward step that passes it strictly inside (low, high). Raw restrict pointers, int8
// comparisons and a select, so that it vectorizes on whole bytes (a product of the gradient and
// a flag would widen every lane to int32).
LOWBIT_TRAIN_CLONES void MaskOutside(const std::int8_t* __restrict__ gradients,
                                     const std::int8_t* __restrict__ outputs, std::size_t count,
                                     std::int8_t low, std::int8_t high,
                                     std::int8_t* __restrict__ masked) {
  for (std::size_t i = 0; i < count; ++i) {
    const std::int8_t y = outputs[i];
    masked[i] = (y > low) & (y < high) ? gradients[i] : std::int8_t{0};
  }
}

// ReLU's backward: no gradient where the output is not positive. Like MaskOutside, with no
// upper bound.
LOWBIT_TRAIN_CLONES void MaskNonPositive(const std::int8_t* __restrict__ gradients,
                                         const std::int8_t* __restrict__ outputs, std::size_t count,
                                         std::int8_t* __restrict__ masked) {
  for (std::size_t i = 0; i < count; ++i) {
    masked[i] = outputs[i] > 0 ? gradients[i] : std::int8_t{0};
  }
}

// How many of `count` outputs clipped at `bits` bits, compared as bytes. Counted in int32 blocks,
// whose vector lanes are four times as many as int64's.
LOWBIT_TRAIN_CLONES std::int64_t CountClipped(const std::int8_t* __restrict__ outputs,
                                              std::size_t count, int bits) {
  const std::int8_t low = static_cast<std::int8_t>(QMin(bits));
  const std::int8_t high = static_cast<std::int8_t>(QMax(bits));
  constexpr std::size_t kBlock = std::size_t{1} << 30;
  std::int64_t clipped = 0;
  for (std::size_t start = 0; start < count; start += kBlock) {
    const std::size_t end = std::min(count, start + kBlock);
    std::int32_t block = 0;
    for (std::size_t i = start; i < end; ++i) block += (outputs[i] <= low) | (outputs[i] >= high);
    clipped += block;
  }
  return clipped;
}

// sums[col] = the sum of column col of a rows x cols row-major int8 matrix: the bias gradient.
// When cols divides 64 (a convolution's channels, often), the matrix is also rows of 64: their 64
// column sums vectorize without a loop per short row, and fold into `cols` sums at the end.
LOWBIT_TRAIN_CLONES void ColumnSums(const std::int8_t* __restrict__ matrix, int rows, int cols,
                                    std::int32_t* __restrict__ sums) {
  std::fill_n(sums, cols, 0);
  const std::size_t size = static_cast<std::size_t>(rows) * cols;
  std::size_t done = 0;
  if (64 % cols == 0) {
    std::int32_t wide[64] = {};
    for (; done + 64 <= size; done += 64) {
      for (int lane = 0; lane < 64; ++lane) wide[lane] += matrix[done + lane];
    }
    for (int lane = 0; lane < 64; ++lane) sums[lane % cols] += wide[lane];
  }
  // The rest, in whole rows: all of them, or those past the last 64 values (64 is a multiple of
  // cols whenever `done` moved).
  for (std::size_t row = done / cols; row < static_cast<std::size_t>(rows); ++row) {
    const std::int8_t* line = matrix + row * cols;
    for (int col = 0; col < cols; ++col) sums[col] += line[col];
  }
}

// A master's rounding to its weight or bias (kMasterBits fewer bits), clamped to
// [low, high].
inline std::int32_t RoundMaster(std::int32_t master, std::int32_t low, std::int32_t high) {
  return std::clamp(RightShift(Linear::kMasterBits).Nearest(master), low, high);
}

// Where one row of a tensor moves: its gradients, masters, velocities, the masters' bound, and
// the rounded values the GEMMs read (weights or bias). A master within the bound rounds to a
// value of the Rounded type's range (Linear's weights are in [-127, 127]).
template <typename Rounded>
struct UpdateRow {
  int row;
  int count;
  const std::int32_t* gradients;
  std::int32_t* masters;
  std::int32_t* velocities;
  std::int32_t master_bound;
  Rounded* rounded;
};

// Moves a row's masters (and velocities) by their gradients and rounds them, for a tensor whose
// stochastic roundings draw from `seed` (weight decay from seed ^ 0x5bd1e995). kDecay,
// kStochastic and kStepRight (shifts.decay_on, shifts.stochastic and shifts.step >= 0) are
// template arguments because GCC does not unswitch loops this large: a branch inside would keep
// the loop scalar, and a choice made per entry would compute both roundings. Always inlined, so
// that Move's clones compile it for their ISA.
template <bool kDecay, bool kStochastic, bool kStepRight, typename Rounded>
__attribute__((always_inline)) inline void MoveEntries(const UpdateShifts& shifts,
                                                       std::uint32_t seed,
                                                       const UpdateRow<Rounded>& target) {
  const int decay_shift = shifts.decay;
  const RightShift momentum(shifts.momentum);
  const int step_shift = shifts.step;
  const RightShift right_step(kStepRight ? step_shift : 0);
  const RightShift to_rounded(Linear::kMasterBits);
  // RoundShift bounds a step by 2^30, which moves any master to its bound.
  const std::int32_t step_bound = shifts.max_step > 0 ? shifts.max_step : kVelocityBound;
  const std::uint32_t decay_seed = seed ^ 0x5bd1e995U;
  const int row = target.row;
  const std::int32_t* gradients = target.gradients;
  std::int32_t* masters = target.masters;
  std::int32_t* velocities = target.velocities;
  Rounded* rounded = target.rounded;
  const int count = target.count;
  const std::int32_t master_bound = target.master_bound;
  for (int col = 0; col < count; ++col) {
    std::int32_t g = std::clamp(gradients[col], -kGradientBound, kGradientBound);
    if (kDecay) {
      // master * 2^-weight_decay_shift at the gradient's exponent.
      const std::uint32_t random = stage_detail::StochasticRoundingBits(decay_seed, row, col);
      g = std::clamp(g + RoundShift(masters[col], decay_shift, kStochastic, random),
                     -kGradientBound, kGradientBound);
    }
    // v - v * 2^-momentum is the velocity kept.
    const std::int32_t v = velocities[col];
    const std::int32_t velocity =
        std::clamp(g + v - momentum.Nearest(v), -kVelocityBound, kVelocityBound);
    velocities[col] = velocity;
    std::int32_t step;
    if (!kStepRight) {
      step = RoundShift(velocity, step_shift, false, 0);  // a left shift: nothing to round
    } else if (kStochastic) {
      step = right_step.Stochastic(velocity, stage_detail::StochasticRoundingBits(seed, row, col));
    } else {
      step = right_step.Nearest(velocity);
    }
    step = std::clamp(step, -step_bound, step_bound);
    const std::int32_t master = std::clamp(masters[col] - step, -master_bound, master_bound);
    masters[col] = master;
    rounded[col] = static_cast<Rounded>(to_rounded.Nearest(master));
  }
}

template <bool kDecay, bool kStochastic, typename Rounded>
__attribute__((always_inline)) inline void MoveWithStep(const UpdateShifts& shifts,
                                                        std::uint32_t seed,
                                                        const UpdateRow<Rounded>& target) {
  if (shifts.step >= 0) {
    MoveEntries<kDecay, kStochastic, true>(shifts, seed, target);
  } else {
    MoveEntries<kDecay, kStochastic, false>(shifts, seed, target);
  }
}

template <typename Rounded>
LOWBIT_TRAIN_CLONES void Move(const UpdateShifts& shifts, std::uint32_t seed,
                              const UpdateRow<Rounded>& target) {
  if (shifts.decay_on) {
    if (shifts.stochastic) {
      MoveWithStep<true, true>(shifts, seed, target);
    } else {
      MoveWithStep<true, false>(shifts, seed, target);
    }
  } else if (shifts.stochastic) {
    MoveWithStep<false, true>(shifts, seed, target);
  } else {
    MoveWithStep<false, false>(shifts, seed, target);
  }
}

UpdateShifts MakeUpdateShifts(const SgdSettings& sgd, int gradient_exponent, int master_exponent,
                              TrainRounding rounding, const char* tensor) {
  UpdateShifts shifts;
  shifts.decay = master_exponent - gradient_exponent + sgd.weight_decay_shift;
  shifts.decay_on = sgd.weight_decay_shift > 0;
  shifts.momentum = sgd.momentum_shift;
  shifts.step = gradient_exponent + sgd.learning_rate_shift - master_exponent;
  shifts.max_step = sgd.max_step;
  shifts.stochastic = rounding == TrainRounding::kStochastic;
  const auto check = [tensor](const char* setting, int value, int shift, const char* meaning,
                              int lowest) {
    if (shift < lowest || shift > 30) {
      throw Error(std::string("sgd.") + setting, "= " + std::to_string(value) + " makes the " +
                                                     tensor + "'s " + meaning + " shift " +
                                                     std::to_string(shift) + "; it must be in [" +
                                                     std::to_string(lowest) + ", 30]");
    }
  };
  check("learning_rate_shift", sgd.learning_rate_shift, shifts.step, "step", -30);
  check("momentum_shift", sgd.momentum_shift, shifts.momentum, "momentum", 0);
  if (shifts.decay_on) {
    check("weight_decay_shift", sgd.weight_decay_shift, shifts.decay, "decay", -30);
  }
  return shifts;
}

}  // namespace

void CheckShape(const char* name, const DyadicInt8& x, int rows, int cols, int exponent) {
  if ((rows >= 0 && x.rows != rows) || x.cols != cols || x.exponent != exponent) {
    throw Error(name, "must be " + (rows >= 0 ? std::to_string(rows) : std::string("batch")) +
                          " x " + std::to_string(cols) + " at exponent " +
                          std::to_string(exponent) + ", got " + std::to_string(x.rows) + " x " +
                          std::to_string(x.cols) + " at exponent " + std::to_string(x.exponent));
  }
}

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
    weights_.mantissas[i] =
        static_cast<std::int8_t>(RoundMaster(master_weights_.mantissas[i], QMin(8), QMax(8)));
  }
  for (int i = 0; i < outputs_; ++i) bias_[i] = RoundMaster(master_bias_[i], INT32_MIN, INT32_MAX);
}

std::int64_t Linear::Multiply(Context* context, const std::int8_t* x, int rows, RowsIn rows_in,
                              std::uint32_t seed, std::int8_t* y) const {
  const bool in_lhs = rows_in == RowsIn::kLhs;
  const auto pipeline =
      std::make_tuple(OutputStageBiasAddition{VectorMap<const std::int32_t>(bias_.data(), outputs_),
                                              in_lhs ? ChannelAxis::kCol : ChannelAxis::kRow},
                      ShiftStage(exponents_.forward_shift, rounding_, seed),
                      OutputStageClamp{relu_fused_ ? 0 : QMin(bits_), QMax(bits_)},
                      OutputStageSaturatingCastToInt8{});
  // X is rows x inputs and W outputs x inputs, both row-major: X^T and W^T are their
  // column-major views.
  const MatrixMap<const std::int8_t> input(x, rows, inputs_, Order::kRowMajor);
  const MatrixMap<const std::int8_t> input_transposed(x, inputs_, rows, Order::kColMajor);
  const MatrixMap<const std::int8_t> weights_transposed(weights_.mantissas.data(), inputs_,
                                                        outputs_, Order::kColMajor);
  if (in_lhs) {
    MatrixMap<std::int8_t> result(y, rows, outputs_, Order::kRowMajor);
    GemmWithOutputPipeline(context, input, weights_transposed, &result, 0, 0, pipeline);
  } else {
    MatrixMap<std::int8_t> result(y, outputs_, rows, Order::kColMajor);
    GemmWithOutputPipeline(context, RowMajor(weights_), input_transposed, &result, 0, 0, pipeline);
  }
  return CountClipped(y, static_cast<std::size_t>(rows) * outputs_, bits_);
}

void Linear::MaskClipped(const std::int8_t* dy, const std::int8_t* y, std::size_t count,
                         std::int8_t* masked) const {
  MaskOutside(dy, y, count, static_cast<std::int8_t>(relu_fused_ ? 0 : QMin(bits_)),
              static_cast<std::int8_t>(QMax(bits_)), masked);
}

void Linear::ComputeGradients(Context* context, const std::int8_t* masked, int gradient_exponent,
                              const std::int8_t* x, int rows, RowsIn rows_in) {
  weight_gradient_.exponent = gradient_exponent + exponents_.input_exponent;
  bias_gradient_.exponent = gradient_exponent;
  // dW = dY^T X: dY (rows x outputs, row-major) is dY^T (outputs x rows) column-major. A product
  // of two mantissas is at most 2^14, so 2^16 rows keep int32 sums below 2^30; deeper products (a
  // convolution's examples x positions) add one GEMM per 2^16 rows in 64 bits, saturating to
  // int32 (the update clips gradients to +-2^29 anyway).
  constexpr int kChunkRows = 1 << 16;
  for (int first = 0; first < rows; first += kChunkRows) {
    const int count = std::min(kChunkRows, rows - first);
    if (first > 0) gradient_chunk_.resize(weight_gradient_.mantissas.size());
    std::int32_t* target = first == 0 ? weight_gradient_.mantissas.data() : gradient_chunk_.data();
    const std::int8_t* gradients = masked + static_cast<std::ptrdiff_t>(first) * outputs_;
    const std::int8_t* inputs = x + static_cast<std::ptrdiff_t>(first) * inputs_;
    if (rows_in == RowsIn::kLhs) {
      MatrixMap<std::int32_t> result(target, outputs_, inputs_, Order::kRowMajor);
      Gemm(context, MatrixMap<const std::int8_t>(gradients, outputs_, count, Order::kColMajor),
           MatrixMap<const std::int8_t>(inputs, count, inputs_, Order::kRowMajor), &result, 0, 0);
    } else {
      // dW^T = X^T dY, into dW's memory.
      MatrixMap<std::int32_t> result(target, inputs_, outputs_, Order::kColMajor);
      Gemm(context, MatrixMap<const std::int8_t>(inputs, inputs_, count, Order::kColMajor),
           MatrixMap<const std::int8_t>(gradients, count, outputs_, Order::kRowMajor), &result, 0,
           0);
    }
    if (first == 0) continue;
    for (std::size_t i = 0; i < gradient_chunk_.size(); ++i) {
      weight_gradient_.mantissas[i] = static_cast<std::int32_t>(
          std::clamp(std::int64_t{weight_gradient_.mantissas[i]} + gradient_chunk_[i],
                     std::int64_t{INT32_MIN}, std::int64_t{INT32_MAX}));
    }
  }
  ColumnSums(masked, rows, outputs_, bias_gradient_.mantissas.data());
}

void Linear::InputGradientAccumulators(Context* context, const std::int8_t* masked, int rows,
                                       RowsIn rows_in, std::int32_t* accumulators) const {
  // dX = dY W, W (outputs x inputs, row-major) the rhs as it is; or dX^T = W^T dY^T.
  if (rows_in == RowsIn::kLhs) {
    MatrixMap<std::int32_t> result(accumulators, rows, inputs_, Order::kRowMajor);
    Gemm(context, MatrixMap<const std::int8_t>(masked, rows, outputs_, Order::kRowMajor),
         RowMajor(weights_), &result, 0, 0);
  } else {
    MatrixMap<std::int32_t> result(accumulators, inputs_, rows, Order::kColMajor);
    Gemm(context,
         MatrixMap<const std::int8_t>(weights_.mantissas.data(), inputs_, outputs_,
                                      Order::kColMajor),
         MatrixMap<const std::int8_t>(masked, outputs_, rows, Order::kColMajor), &result, 0, 0);
  }
}

const DyadicInt8& Linear::Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) {
  CheckShape("linear input", x, -1, inputs_, exponents_.input_exponent);
  input_ = x;
  output_.Reshape(x.rows, outputs_, exponents_.output_exponent());
  clipped_outputs_ =
      Multiply(context, x.mantissas.data(), x.rows, RowsIn::kLhs, seed, output_.mantissas.data());
  return output_;
}

void Linear::Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                      DyadicInt8* input_gradient) {
  CheckShape("linear output gradient", dy, output_.rows, outputs_, dy.exponent);
  masked_gradient_.Reshape(dy.rows, dy.cols, dy.exponent);
  MaskClipped(dy.mantissas.data(), output_.mantissas.data(), dy.mantissas.size(),
              masked_gradient_.mantissas.data());
  const int batch = dy.rows;
  ComputeGradients(context, masked_gradient_.mantissas.data(), dy.exponent, input_.mantissas.data(),
                   batch, RowsIn::kLhs);
  if (input_gradient == nullptr) return;
  // dX = dY W: W (outputs x inputs, row-major) is the rhs as it is.
  input_gradient->Reshape(batch, inputs_, exponents_.input_gradient_exponent(dy.exponent));
  MatrixMap<std::int8_t> result(input_gradient->mantissas.data(), batch, inputs_, Order::kRowMajor);
  const auto pipeline = std::make_tuple(ShiftStage(exponents_.backward_shift, rounding_, seed),
                                        OutputStageClamp{QMin(bits_), QMax(bits_)},
                                        OutputStageSaturatingCastToInt8{});
  GemmWithOutputPipeline(context, RowMajor(masked_gradient_), RowMajor(weights_), &result, 0, 0,
                         pipeline);
}

void Linear::Update(const SgdSettings& sgd, SeedSequence* seeds) {
  const int bias_master_exponent =
      exponents_.input_exponent + exponents_.weight_exponent + kMasterBits;
  const UpdateShifts weight_shifts = MakeUpdateShifts(
      sgd, weight_gradient_.exponent, master_weights_.exponent, rounding_, "weights");
  const UpdateShifts bias_shifts =
      MakeUpdateShifts(sgd, bias_gradient_.exponent, bias_master_exponent, rounding_, "bias");
  const std::uint32_t weight_seed = seeds->Next();
  const std::uint32_t bias_seed = seeds->Next();
  for (int row = 0; row < outputs_; ++row) {
    Move(weight_shifts, weight_seed,
         UpdateRow<std::int8_t>{row, inputs_, &weight_gradient_.at(row, 0),
                                &master_weights_.at(row, 0), &weight_velocity_.at(row, 0),
                                QMax(8) * (1 << kMasterBits), &weights_.at(row, 0)});
  }
  Move(bias_shifts, bias_seed,
       UpdateRow<std::int32_t>{0, outputs_, bias_gradient_.mantissas.data(), master_bias_.data(),
                               bias_velocity_.data(), kBiasMasterBound, bias_.data()});
}

const DyadicInt8& Relu::Forward(Context* /*context*/, const DyadicInt8& x, std::uint32_t /*seed*/) {
  output_.Reshape(x.rows, x.cols, x.exponent);
  const std::int8_t* in = x.mantissas.data();
  std::int8_t* out = output_.mantissas.data();
  const std::size_t count = x.mantissas.size();
  for (std::size_t i = 0; i < count; ++i) out[i] = std::max<std::int8_t>(in[i], 0);
  return output_;
}

void Relu::Backward(Context* /*context*/, const DyadicInt8& dy, std::uint32_t /*seed*/,
                    DyadicInt8* input_gradient) {
  if (fused_) {
    if (input_gradient != nullptr) *input_gradient = dy;
    return;
  }
  CheckShape("relu output gradient", dy, output_.rows, output_.cols, dy.exponent);
  if (input_gradient == nullptr) return;
  input_gradient->Reshape(dy.rows, dy.cols, dy.exponent);
  MaskNonPositive(dy.mantissas.data(), output_.mantissas.data(), dy.mantissas.size(),
                  input_gradient->mantissas.data());
}

const DyadicInt8& Flatten::Forward(Context* /*context*/, const DyadicInt8& x,
                                   std::uint32_t /*seed*/) {
  return x;
}

void Flatten::Backward(Context* /*context*/, const DyadicInt8& dy, std::uint32_t /*seed*/,
                       DyadicInt8* input_gradient) {
  if (input_gradient != nullptr) *input_gradient = dy;
}

}  // namespace train
}  // namespace lowbit
