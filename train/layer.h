// What every layer of an integer-only network offers the network (train/network.h): forward and
// backward on dyadic int8 tensors whose rows are the examples, and, for layers that learn, the
// update and the state a model file keeps.
#ifndef LOWBIT_TRAIN_LAYER_H_
#define LOWBIT_TRAIN_LAYER_H_

#include <cstddef>
#include <cstdint>

#include "lowbit/lowbit.h"
#include "train/dyadic.h"

namespace lowbit {
namespace train {

// One example's shape between layers: height x width x channels, stored in that order (NHWC,
// the batch being the rows), so that a convolution's im2col rows are runs of whole pixels and
// flattening is a change of shape, not of storage. Features without an image are 1 x 1 x n.
struct ImageShape {
  int height = 1;
  int width = 1;
  int channels = 1;
  int size() const { return height * width * channels; }
  bool operator==(const ImageShape& other) const {
    return height == other.height && width == other.width && channels == other.channels;
  }
  bool operator!=(const ImageShape& other) const { return !(*this == other); }
};

// How weights learn, all as power-of-two shifts (doc/training.md): the step is the gradient
// times 2^-learning_rate_shift; the velocity decays by 2^-momentum_shift per step (momentum
// 1 - 2^-momentum_shift; 0: none); weight decay adds weight * 2^-weight_decay_shift to the
// gradient (0: none); each step moves a master weight by at most max_step of its units (0: no
// clipping). The arithmetic is int32 with fixed bounds: a gradient (weight decay included) is
// clipped to +-2^29, a velocity and a step to +-2^30. The shifts these settings make between a
// tensor's gradient and master exponents must lie in [-30, 30] (momentum_shift in [0, 30]);
// Update throws lowbit::Error naming the setting otherwise.
struct SgdSettings {
  int learning_rate_shift = 8;
  int momentum_shift = 0;
  int weight_decay_shift = 0;
  std::int32_t max_step = 0;
};

// Throws lowbit::Error naming `name` unless x is rows x cols at `exponent` (rows < 0: any
// number of rows).
void CheckShape(const char* name, const DyadicInt8& x, int rows, int cols, int exponent);

class Layer {
 public:
  virtual ~Layer() = default;

  // Layers that round draw one seed for each Forward and one for each Backward from the
  // network's SeedSequence, in the order of the layers; the others are passed 0 and draw none.
  virtual bool rounds() const { return false; }
  // Layers with weights: they have an Update, a state, and clipped outputs to count.
  virtual bool learns() const { return false; }

  // x: batch x the input shape's size. Keeps what Backward needs and returns the output (batch
  // x the output shape's size), valid until the next Forward. x must stay as it is until the
  // Backward that follows (a layer may keep a pointer to it rather than a copy), as the network's
  // step does: each layer's output lives until that layer's next Forward.
  virtual const DyadicInt8& Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) = 0;
  // dy: the gradient of the last Forward's output. Computes the layer's own gradients, if it
  // learns, and the input's gradient into `input_gradient` unless it is null (the first layer's
  // input has no use for one).
  virtual void Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                        DyadicInt8* input_gradient) = 0;
  // The exponent Backward gives the input's gradient for an output gradient at
  // `output_gradient_exponent`.
  virtual int InputGradientExponent(int output_gradient_exponent) const {
    return output_gradient_exponent;
  }

  // Moves the weights by the last Backward's gradients.
  virtual void Update(const SgdSettings& /*sgd*/, SeedSequence* /*seeds*/) {}
  // What training moves, as int32s (StateSize() of them), for model files.
  virtual std::size_t StateSize() const { return 0; }
  virtual void GetState(std::int32_t* /*state*/) const {}
  virtual void SetState(const std::int32_t* /*state*/) {}
  // How many of the last Forward's outputs were clipped at the bit width's bounds (with a fused
  // ReLU, at the upper bound: what the lower bound clips, the ReLU zeroes anyway).
  virtual std::int64_t clipped_outputs() const { return 0; }

  // Asks a layer followed by a ReLU to apply it in its own output pipeline: clamping at 0
  // instead of the bit width's lower bound gives the ReLU's values, and the straight-through
  // mask that then passes the gradient strictly between 0 and the upper bound is the ReLU's
  // mask and the clipping mask together. Returns whether it did (Linear and Conv2d do); the
  // network then lets the ReLU hand its tensors on, and saves a pass over them each way.
  virtual bool FuseRelu() { return false; }
  // Whether both passes hand their tensors on unchanged (Flatten, a fused ReLU): the network
  // skips such a layer rather than copy its tensors through it.
  virtual bool HandsOn() const { return false; }
};

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_LAYER_H_
