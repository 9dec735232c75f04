// Conv2d by im2col and col2im around lowbit's GEMM, and max and average pooling
// (train/image_layers.h).
#include "train/image_layers.h"

#include <algorithm>
#include <string>

namespace lowbit {
namespace train {
namespace {

std::string ShapeText(const ImageShape& shape) {
  return std::to_string(shape.height) + " x " + std::to_string(shape.width) + " x " +
         std::to_string(shape.channels);
}

Linear CheckedFilters(const ImageShape& input, int channels, const Window& window,
                      const LinearExponents& exponents, int bits, TrainRounding rounding,
                      SeedSequence* init) {
  const int k = window.kernel;
  if (k < 1 || window.stride < 1 || window.padding < 0 || window.padding >= k ||
      window.Outputs(input.height) < 1 || window.Outputs(input.width) < 1) {
    throw Error("conv2d",
                "needs kernel >= 1, stride >= 1, 0 <= padding < kernel and a window "
                "that fits the padded input; got kernel " +
                    std::to_string(k) + ", stride " + std::to_string(window.stride) + ", padding " +
                    std::to_string(window.padding) + " on " + ShapeText(input));
  }
  // col2im adds, per pixel, the patch gradients of every window over it: at most
  // ceil(k / stride)^2 of them, each a sum of `channels` products of at most 2^14.
  const std::int64_t overlap = (k + window.stride - 1) / window.stride;
  if (channels < 1 || channels * overlap * overlap >= (std::int64_t{1} << 17)) {
    throw Error("conv2d",
                "needs 1 <= channels and channels x ceil(kernel / stride)^2 < 2^17 "
                "(int32 col2im sums), got " +
                    std::to_string(channels) + " channels");
  }
  return Linear(k * k * input.channels, channels, exponents, bits, rounding, init);
}

}  // namespace

Conv2d::Conv2d(const ImageShape& input, int channels, const Window& window,
               const LinearExponents& exponents, int bits, TrainRounding rounding,
               SeedSequence* init)
    : input_(input),
      window_(window),
      filters_(CheckedFilters(input, channels, window, exponents, bits, rounding, init)),
      bits_(bits),
      rounding_(rounding) {
  output_shape_ = {window.Outputs(input.height), window.Outputs(input.width), channels};
}

const DyadicInt8& Conv2d::Forward(Context* context, const DyadicInt8& x, std::uint32_t seed) {
  CheckShape("conv2d input", x, -1, input_.size(), filters_.exponents().input_exponent);
  // Every patch value is written: the buffer is resized, not cleared.
  patch_rows_ = x.rows * output_shape_.height * output_shape_.width;
  patches_.resize(static_cast<std::size_t>(patch_rows_) * filters_.inputs() + kIm2colSlackBytes);
  Im2col(x.mantissas.data(), x.rows, input_, window_, output_shape_, patches_.data());
  output_.Reshape(x.rows, output_shape_.size(), filters_.exponents().output_exponent());
  clipped_outputs_ = filters_.Multiply(context, patches_.data(), patch_rows_, RowsIn::kRhs, seed,
                                       output_.mantissas.data());
  return output_;
}

void Conv2d::Backward(Context* context, const DyadicInt8& dy, std::uint32_t seed,
                      DyadicInt8* input_gradient) {
  CheckShape("conv2d output gradient", dy, output_.rows, output_.cols, dy.exponent);
  masked_gradient_.resize(dy.mantissas.size());
  filters_.MaskClipped(dy.mantissas.data(), output_.mantissas.data(), dy.mantissas.size(),
                       masked_gradient_.data());
  // As matrices, the output and its gradient are (examples x output pixels) x channels.
  filters_.ComputeGradients(context, masked_gradient_.data(), dy.exponent, patches_.data(),
                            patch_rows_, RowsIn::kRhs);
  if (input_gradient == nullptr) return;
  // dY W into int32 patch gradients and col2im onto the pixels, a few examples at a time: the
  // patch gradients (4 bytes per patch value) stay in cache between the two rather than travel
  // to memory and back.
  const int pixels = output_shape_.height * output_shape_.width;
  const int examples_per_chunk = std::max(1, kPatchGradientRows / pixels);
  patch_gradients_.resize(static_cast<std::size_t>(std::min(examples_per_chunk, dy.rows)) * pixels *
                          filters_.inputs());
  input_sums_.Reshape(dy.rows, input_.size(), dy.exponent + filters_.exponents().weight_exponent);
  for (int first = 0; first < dy.rows; first += examples_per_chunk) {
    const int examples = std::min(examples_per_chunk, dy.rows - first);
    filters_.InputGradientAccumulators(
        context,
        masked_gradient_.data() + static_cast<std::size_t>(first) * pixels * filters_.outputs(),
        examples * pixels, RowsIn::kRhs, patch_gradients_.data());
    Col2im(patch_gradients_.data(), examples, input_, window_, output_shape_,
           input_sums_.mantissas.data() + static_cast<std::size_t>(first) * input_.size());
  }
  *input_gradient =
      Requantize(input_sums_, InputGradientExponent(dy.exponent), bits_, rounding_, seed);
}

MaxPool2d::MaxPool2d(const ImageShape& input, int size) : input_(input), size_(size) {
  if (size < 1 || size > input.height || size > input.width) {
    throw Error("maxpool", "needs a size in [1, " +
                               std::to_string(std::min(input.height, input.width)) + "] on " +
                               ShapeText(input) + ", got " + std::to_string(size));
  }
  output_shape_ = {input.height / size, input.width / size, input.channels};
}

const DyadicInt8& MaxPool2d::Forward(Context* /*context*/, const DyadicInt8& x,
                                     std::uint32_t /*seed*/) {
  CheckShape("maxpool input", x, -1, input_.size(), x.exponent);
  input_values_ = &x;
  output_.Reshape(x.rows, output_shape_.size(), x.exponent);
  MaxPool(x.mantissas.data(), x.rows, input_, size_, output_shape_, output_.mantissas.data());
  return output_;
}

void MaxPool2d::Backward(Context* /*context*/, const DyadicInt8& dy, std::uint32_t /*seed*/,
                         DyadicInt8* input_gradient) {
  CheckShape("maxpool output gradient", dy, output_.rows, output_.cols, dy.exponent);
  if (input_gradient == nullptr) return;
  input_gradient->Reshape(dy.rows, input_.size(), dy.exponent);
  MaxPoolGradient(input_values_->mantissas.data(), dy.rows, input_, size_, output_shape_,
                  output_.mantissas.data(), dy.mantissas.data(), input_gradient->mantissas.data());
}

AvgPool2d::AvgPool2d(const ImageShape& input, int size, TrainRounding rounding)
    : input_(input), size_(size), shift_(0), rounding_(rounding) {
  if (size < 1 || (size & (size - 1)) != 0 || size > input.height || size > input.width) {
    throw Error("avgpool", "needs a power of two size in [1, " +
                               std::to_string(std::min(input.height, input.width)) + "] on " +
                               ShapeText(input) + ", got " + std::to_string(size));
  }
  while ((1 << shift_) < size * size) ++shift_;
  output_shape_ = {input.height / size, input.width / size, input.channels};
}

const DyadicInt8& AvgPool2d::Forward(Context* /*context*/, const DyadicInt8& x,
                                     std::uint32_t seed) {
  CheckShape("avgpool input", x, -1, input_.size(), x.exponent);
  output_.Reshape(x.rows, output_shape_.size(), x.exponent);
  const int channels = input_.channels;
  std::vector<std::int32_t> sums(channels);
  for (int b = 0; b < x.rows; ++b) {
    const std::int8_t* image = x.mantissas.data() + static_cast<std::size_t>(b) * x.cols;
    for (int oy = 0; oy < output_shape_.height; ++oy) {
      for (int ox = 0; ox < output_shape_.width; ++ox) {
        std::fill(sums.begin(), sums.end(), 0);
        for (int ky = 0; ky < size_; ++ky) {
          for (int kx = 0; kx < size_; ++kx) {
            const std::int8_t* pixel =
                image + ((oy * size_ + ky) * input_.width + ox * size_ + kx) * channels;
            for (int c = 0; c < channels; ++c) sums[c] += pixel[c];
          }
        }
        const int col = (oy * output_shape_.width + ox) * channels;
        for (int c = 0; c < channels; ++c) {
          // A mean of int8 values rounds to an int8 value: no clipping.
          output_.at(b, col + c) =
              static_cast<std::int8_t>(ShiftRound(sums[c], shift_, rounding_, seed, b, col + c));
        }
      }
    }
  }
  return output_;
}

void AvgPool2d::Backward(Context* /*context*/, const DyadicInt8& dy, std::uint32_t /*seed*/,
                         DyadicInt8* input_gradient) {
  CheckShape("avgpool output gradient", dy, output_.rows, output_.cols, dy.exponent);
  if (input_gradient == nullptr) return;
  *input_gradient = DyadicInt8(dy.rows, input_.size(), InputGradientExponent(dy.exponent));
  const int channels = input_.channels;
  for (int b = 0; b < dy.rows; ++b) {
    for (int oy = 0; oy < output_shape_.height; ++oy) {
      for (int ox = 0; ox < output_shape_.width; ++ox) {
        const std::int8_t* gradient =
            dy.mantissas.data() + static_cast<std::size_t>(b) * dy.cols +
            static_cast<std::size_t>(oy * output_shape_.width + ox) * channels;
        for (int ky = 0; ky < size_; ++ky) {
          for (int kx = 0; kx < size_; ++kx) {
            std::copy_n(gradient, channels,
                        &input_gradient->at(
                            b, ((oy * size_ + ky) * input_.width + ox * size_ + kx) * channels));
          }
        }
      }
    }
  }
}

}  // namespace train
}  // namespace lowbit
