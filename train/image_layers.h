// The layers of an integer-only network that see each example as an image (height x width x
// channels, NHWC): Conv2d, lowered to lowbit's GEMM by im2col and col2im, and max and average
// pooling, forward and backward on dyadic tensors.
#ifndef LOWBIT_TRAIN_IMAGE_LAYERS_H_
#define LOWBIT_TRAIN_IMAGE_LAYERS_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "lowbit/lowbit.h"
#include "train/dyadic.h"
#include "train/layer.h"
#include "train/layers.h"

namespace lowbit {
namespace train {

// Where a window (a convolution's kernel or a pooling window) lies: `kernel` x `kernel` pixels,
// moved by `stride`, over the input padded with `padding` zero pixels on each side.
struct Window {
  int kernel = 1;
  int stride = 1;
  int padding = 0;
  // The output's height or width for an input's: 0 when the window does not fit.
  int Outputs(int input) const {
    const int room = input + 2 * padding - kernel;
    return room < 0 ? 0 : room / stride + 1;
  }
};

// The image loops that the integer layers and their float twin (train/float_twin.h) share,
// for int8 (and int32 sums) or float values.

// Im2col copies in blocks of this many bytes, which may run past a window row's end: the caller
// leaves room for that many bytes after the patches.
constexpr std::size_t kIm2colSlackBytes = 16;

// patches ((batch x output pixels) x (kernel^2 x channels), ordered (ky, kx, channel)) from
// images (batch x input), zeros where a window covers padding; `patches` has room for
// kIm2colSlackBytes more bytes. Each example is first copied into a zero-padded image, so that
// every window row is one run of kernel x channels values there. Window rows are copied in
// fixed blocks (a run of a 3 x 3 kernel on one channel is 3 bytes: a block is one move, where a
// copy of its length would be a call), in increasing address order, so that what a block writes
// past its row's end the next row overwrites.
template <typename T>
void Im2col(const T* images, int batch, const ImageShape& input, const Window& window,
            const ImageShape& output, T* patches) {
  constexpr std::size_t kBlock = kIm2colSlackBytes / sizeof(T);
  static_assert(kBlock * sizeof(T) == kIm2colSlackBytes, "whole values per block");
  const std::size_t channels = static_cast<std::size_t>(input.channels);
  const std::size_t padded_width = static_cast<std::size_t>(input.width) + 2 * window.padding;
  const std::size_t padded_height = static_cast<std::size_t>(input.height) + 2 * window.padding;
  std::vector<T> padded(padded_height * padded_width * channels + kBlock, T{0});
  const std::size_t line = static_cast<std::size_t>(window.kernel) * channels;
  T* out = patches;
  for (int b = 0; b < batch; ++b) {
    const T* image = images + static_cast<std::size_t>(b) * input.size();
    for (int y = 0; y < input.height; ++y) {
      std::copy_n(
          image + static_cast<std::size_t>(y) * input.width * channels,
          static_cast<std::size_t>(input.width) * channels,
          padded.data() + ((y + window.padding) * padded_width + window.padding) * channels);
    }
    for (int oy = 0; oy < output.height; ++oy) {
      for (int ox = 0; ox < output.width; ++ox) {
        for (int ky = 0; ky < window.kernel; ++ky, out += line) {
          const T* in =
              padded.data() + ((static_cast<std::size_t>(oy) * window.stride + ky) * padded_width +
                               static_cast<std::size_t>(ox) * window.stride) *
                                  channels;
          for (std::size_t i = 0; i < line; i += kBlock) {
            std::memcpy(out + i, in + i, kIm2colSlackBytes);
          }
        }
      }
    }
  }
}

// Calls body(count) with `count` as a compile-time constant (std::integral_constant) when it is
// one of the run lengths the image loops meet most (channels, or kernel x channels, of common
// networks), and as a plain int otherwise. The loops over a run of channels are short and
// called once per pixel: with a constant length they become whole vector operations, with no
// loop or remainder around them.
template <typename Body>
inline void WithRunLength(int count, Body body) {
  switch (count) {
    case 8:
      return body(std::integral_constant<int, 8>{});
    case 16:
      return body(std::integral_constant<int, 16>{});
    case 32:
      return body(std::integral_constant<int, 32>{});
    case 48:
      return body(std::integral_constant<int, 48>{});
    case 64:
      return body(std::integral_constant<int, 64>{});
    case 96:
      return body(std::integral_constant<int, 96>{});
    default:
      return body(count);
  }
}

// out[i] += in[i]; restrict, so that the loop vectorizes without checking for overlap.
template <typename In, typename Count, typename Out>
inline void AddTo(const In* __restrict__ in, Count count, Out* __restrict__ out) {
  for (int i = 0; i < count; ++i) out[i] += in[i];
}

// The adjoint of Im2col: each patch value added onto the image value it was copied from. Each
// example is summed in a zero-padded image, where every window row is one run of kernel x
// channels values, and its inside copied out.
template <typename Patch, typename Image>
void Col2im(const Patch* patches, int batch, const ImageShape& input, const Window& window,
            const ImageShape& output, Image* images) {
  const std::size_t channels = static_cast<std::size_t>(input.channels);
  const std::size_t padded_width = static_cast<std::size_t>(input.width) + 2 * window.padding;
  const std::size_t padded_height = static_cast<std::size_t>(input.height) + 2 * window.padding;
  std::vector<Image> padded(padded_height * padded_width * channels);
  const int line = window.kernel * input.channels;
  const Patch* patch = patches;
  for (int b = 0; b < batch; ++b) {
    std::fill(padded.begin(), padded.end(), Image{0});
    WithRunLength(line, [&](auto run) {
      for (int oy = 0; oy < output.height; ++oy) {
        for (int ox = 0; ox < output.width; ++ox) {
          for (int ky = 0; ky < window.kernel; ++ky, patch += line) {
            AddTo(patch, run,
                  padded.data() +
                      ((static_cast<std::size_t>(oy) * window.stride + ky) * padded_width +
                       static_cast<std::size_t>(ox) * window.stride) *
                          channels);
          }
        }
      }
    });
    Image* image = images + static_cast<std::size_t>(b) * input.size();
    for (int y = 0; y < input.height; ++y) {
      std::copy_n(padded.data() + ((y + window.padding) * padded_width + window.padding) * channels,
                  static_cast<std::size_t>(input.width) * channels,
                  image + static_cast<std::size_t>(y) * input.width * channels);
    }
  }
}

// Calls visit(window_pixel, output_pixel, first) with the offsets (in the batch's NHWC values)
// of each pixel of each `size` x `size` window (stride `size`, in row-major order within a
// window) and of its output pixel, each that of the pixel's first channel; `first` for a
// window's first pixel.
template <typename Visit>
void ForEachPoolPixel(int batch, const ImageShape& input, int size, const ImageShape& output,
                      Visit visit) {
  const int channels = input.channels;
  std::size_t output_pixel = 0;
  for (int b = 0; b < batch; ++b) {
    const std::size_t image = static_cast<std::size_t>(b) * input.size();
    for (int oy = 0; oy < output.height; ++oy) {
      for (int ox = 0; ox < output.width; ++ox, output_pixel += channels) {
        for (int ky = 0; ky < size; ++ky) {
          for (int kx = 0; kx < size; ++kx) {
            visit(
                image + (static_cast<std::size_t>(oy * size + ky) * input.width + ox * size + kx) *
                            channels,
                output_pixel, ky == 0 && kx == 0);
          }
        }
      }
    }
  }
}

// largest[c] = max(largest[c], values[c]); by value and restrict as GiveToMaximum.
template <typename T>
inline void KeepLarger(const T* __restrict__ values, int channels, T* __restrict__ largest) {
  for (int c = 0; c < channels; ++c) largest[c] = std::max(largest[c], values[c]);
}

// The 2 x 2 windows, the common case, one output pixel at a time: each value is written once,
// from four loads per channel, in one loop that vectorizes.
template <typename T>
inline void MaxOfFour(const T* __restrict__ top_left, std::size_t row, int channels,
                      T* __restrict__ largest) {
  const T* __restrict__ top_right = top_left + channels;
  const T* __restrict__ bottom_left = top_left + row;
  const T* __restrict__ bottom_right = bottom_left + channels;
  for (int c = 0; c < channels; ++c) {
    largest[c] =
        std::max(std::max(top_left[c], top_right[c]), std::max(bottom_left[c], bottom_right[c]));
  }
}

// Calls visit(top_left, output_pixel) with the offsets of each 2 x 2 window's top-left pixel and
// of its output pixel (each that of its first channel).
template <typename Visit>
void ForEachPairWindow(int batch, const ImageShape& input, const ImageShape& output, Visit visit) {
  const std::size_t channels = static_cast<std::size_t>(input.channels);
  std::size_t output_pixel = 0;
  for (int b = 0; b < batch; ++b) {
    for (int oy = 0; oy < output.height; ++oy) {
      std::size_t pixel = static_cast<std::size_t>(b) * input.size() +
                          static_cast<std::size_t>(2 * oy) * input.width * channels;
      for (int ox = 0; ox < output.width; ++ox, output_pixel += channels, pixel += 2 * channels) {
        visit(pixel, output_pixel);
      }
    }
  }
}

// Each output value the largest of its `size` x `size` window (stride `size`).
template <typename T>
void MaxPool(const T* images, int batch, const ImageShape& input, int size,
             const ImageShape& output, T* pooled) {
  const int channels = input.channels;
  if (size == 2) {
    const std::size_t row = static_cast<std::size_t>(input.width) * channels;
    ForEachPairWindow(batch, input, output, [&](std::size_t pixel, std::size_t out) {
      MaxOfFour(images + pixel, row, channels, pooled + out);
    });
    return;
  }
  std::fill_n(pooled, static_cast<std::size_t>(batch) * output.size(),
              std::numeric_limits<T>::lowest());
  ForEachPoolPixel(batch, input, size, output, [&](std::size_t pixel, std::size_t out, bool) {
    KeepLarger(images + pixel, channels, pooled + out);
  });
}

// One pixel of a max pool's window: its channels that hold their window's maximum take the
// gradient left for them, the others zero. The sizes come by value and the pointers restrict,
// so that the int8 stores (which may alias anything) leave the loop free to vectorize.
template <typename T, typename Gradient>
inline void GiveToMaximum(const T* __restrict__ values, const T* __restrict__ largest, int channels,
                          Gradient* __restrict__ left, Gradient* __restrict__ to) {
  for (int c = 0; c < channels; ++c) {
    const bool here = values[c] == largest[c];
    to[c] = here ? left[c] : Gradient{0};
    left[c] = here ? Gradient{0} : left[c];
  }
}

// GiveToMaximum for a whole 2 x 2 window at once: each channel's gradient to the first of the
// four pixels (row-major) that holds the maximum (the last one when none of the others does).
template <typename T, typename Gradient>
inline void GiveToFirstOfFour(const T* __restrict__ top_left, std::size_t row,
                              const T* __restrict__ largest, const Gradient* __restrict__ gradient,
                              int channels, Gradient* __restrict__ to) {
  const T* __restrict__ top_right = top_left + channels;
  const T* __restrict__ bottom_left = top_left + row;
  Gradient* __restrict__ to_top_right = to + channels;
  Gradient* __restrict__ to_bottom_left = to + row;
  Gradient* __restrict__ to_bottom_right = to_bottom_left + channels;
  // Selects between values (not bools combined with logic), so that the loop vectorizes.
  for (int c = 0; c < channels; ++c) {
    const T m = largest[c];
    const Gradient g = gradient[c];
    const Gradient after_first = top_left[c] == m ? Gradient{0} : g;
    const Gradient after_second = top_right[c] == m ? Gradient{0} : after_first;
    const Gradient after_third = bottom_left[c] == m ? Gradient{0} : after_second;
    to[c] = g - after_first;
    to_top_right[c] = after_first - after_second;
    to_bottom_left[c] = after_second - after_third;
    to_bottom_right[c] = after_third;
  }
}

// MaxPool's gradient: each output's gradient to the first pixel of its window (in row-major
// order) that holds the maximum, zero elsewhere. Found again here rather than recorded by
// MaxPool, whose forward passes outnumber the backward ones (evaluation) and vectorize without
// the bookkeeping.
template <typename T, typename Gradient>
void MaxPoolGradient(const T* images, int batch, const ImageShape& input, int size,
                     const ImageShape& output, const T* pooled, const Gradient* gradient,
                     Gradient* input_gradient) {
  const int channels = input.channels;
  // Pixels past the last whole window get no gradient; the windows write all the others.
  if (input.height % size != 0 || input.width % size != 0) {
    std::fill_n(input_gradient, static_cast<std::size_t>(batch) * input.size(), Gradient{0});
  }
  if (size == 2) {
    const std::size_t row = static_cast<std::size_t>(input.width) * channels;
    ForEachPairWindow(batch, input, output, [&](std::size_t pixel, std::size_t out) {
      GiveToFirstOfFour(images + pixel, row, pooled + out, gradient + out, channels,
                        input_gradient + pixel);
    });
    return;
  }
  // Per channel, the gradient not yet given to a pixel of the current window.
  std::vector<Gradient> remaining(channels);
  ForEachPoolPixel(batch, input, size, output, [&](std::size_t pixel, std::size_t out, bool first) {
    if (first) std::copy_n(gradient + out, channels, remaining.data());
    GiveToMaximum(images + pixel, pooled + out, channels, remaining.data(), input_gradient + pixel);
  });
}

// `channels` filters of kernel x kernel x the input's channels, with a bias each. The forward
// product is one GEMM: the im2col patches (examples x output pixels rows, kernel x kernel x
// input channels columns, ordered (ky, kx, channel), zeros where the window covers padding)
// times the filters, requantized in the GEMM's output pipeline like Linear's; its rows are the
// output in NHWC. Backward: the weights' gradient is the GEMM dY^T patches; the input's gradient
// is the GEMM dY W into int32 patch gradients, summed back onto the pixels they came from
// (col2im) and only then rounded to int8 (ShiftRound, the pipeline's rounding), so that a pixel
// under several windows is rounded once.
class Conv2d : public Layer {
 public:
  // Throws lowbit::Error naming "conv2d" for a kernel, stride or padding out of range (kernel
  // and stride >= 1, 0 <= padding < kernel, a window that fits the padded input), or for more
  // overlapping filters than int32 col2im sums hold (channels x ceil(kernel / stride)^2 <
  // 2^17).
  Conv2d(const ImageShape& input, int channels, const Window& window,
         const LinearExponents& exponents, int bits, TrainRounding rounding, SeedSequence* init);

  const ImageShape& input_shape() const { return input_; }
  const ImageShape& output_shape() const { return output_shape_; }
  const Window& window() const { return window_; }
  // The filters and bias, as a Linear layer over the patches (channels x kernel^2 * input
  // channels).
  const Linear& filters() const { return filters_; }
  Linear& filters() { return filters_; }

  bool rounds() const override { return true; }
  bool learns() const override { return true; }
  const DyadicInt8& Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) override;
  void Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                DyadicInt8* input_gradient) override;
  int InputGradientExponent(int output_gradient_exponent) const override {
    return filters_.InputGradientExponent(output_gradient_exponent);
  }
  void Update(const SgdSettings& sgd, SeedSequence* seeds) override { filters_.Update(sgd, seeds); }
  std::size_t StateSize() const override { return filters_.StateSize(); }
  void GetState(std::int32_t* state) const override { filters_.GetState(state); }
  void SetState(const std::int32_t* state) override { filters_.SetState(state); }
  std::int64_t clipped_outputs() const override { return clipped_outputs_; }
  bool FuseRelu() override { return filters_.FuseRelu(); }

 private:
  ImageShape input_;
  Window window_;
  ImageShape output_shape_;
  Linear filters_;
  int bits_;
  TrainRounding rounding_;
  // batch x output pixels rows, kernel^2 x input channels columns, and Im2col's slack.
  std::vector<std::int8_t> patches_;
  int patch_rows_ = 0;
  DyadicInt8 output_;
  std::vector<std::int8_t> masked_gradient_;
  // Backward's patch gradients for this many patch rows at a time (rounded to whole examples):
  // 256 rows of 144 int32s are 144 KiB, within L2.
  static constexpr int kPatchGradientRows = 256;
  std::vector<std::int32_t> patch_gradients_;
  DyadicInt32 input_sums_;  // col2im's sums of the patch gradients
  std::int64_t clipped_outputs_ = 0;
};

// The largest value of each channel in each `size` x `size` window (stride `size`, no padding;
// rows and columns past the last whole window are dropped). The gradient goes to the pixel
// that held the maximum (the first, in row-major order, of equal ones); exponents pass
// unchanged. Keeps a pointer to its input for the backward pass (Layer::Forward's contract).
class MaxPool2d : public Layer {
 public:
  // Throws lowbit::Error naming "maxpool" unless 1 <= size <= the input's height and width.
  MaxPool2d(const ImageShape& input, int size);
  const ImageShape& output_shape() const { return output_shape_; }
  const DyadicInt8& Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) override;
  void Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                DyadicInt8* input_gradient) override;

 private:
  ImageShape input_;
  int size_;
  ImageShape output_shape_;
  const DyadicInt8* input_values_ = nullptr;
  DyadicInt8 output_;
};

// The mean of each channel in each `size` x `size` window (stride `size`, no padding), `size` a
// power of two so that the mean is a shift: the window's int32 sum rounded by 2 log2(size) bits
// with the network's rounding (ShiftRound), at the input's exponent. Backward is exact: each
// pixel of a window gets the output's gradient mantissa at an exponent 2 log2(size) finer.
class AvgPool2d : public Layer {
 public:
  // Throws lowbit::Error naming "avgpool" unless size is a power of two in [1, the input's
  // height and width].
  AvgPool2d(const ImageShape& input, int size, TrainRounding rounding);
  const ImageShape& output_shape() const { return output_shape_; }
  bool rounds() const override { return true; }
  const DyadicInt8& Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) override;
  void Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                DyadicInt8* input_gradient) override;
  int InputGradientExponent(int output_gradient_exponent) const override {
    return output_gradient_exponent + shift_;
  }

 private:
  ImageShape input_;
  int size_;
  int shift_;
  TrainRounding rounding_;
  ImageShape output_shape_;
  DyadicInt8 output_;
};

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_IMAGE_LAYERS_H_
