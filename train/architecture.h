// lowbit-train's --arch notation: "784-128-10" for an MLP, or layers joined by commas for
// convolutional networks ("conv3x3:16,pool2,conv3x3:32,pool2,linear:10"), parsed into an
// Architecture (train/network.h) for the data's example shape.
#ifndef LOWBIT_TRAIN_ARCHITECTURE_H_
#define LOWBIT_TRAIN_ARCHITECTURE_H_

#include <string>

#include "train/network.h"

namespace lowbit {
namespace train {

// The notation (doc/training.md, "The command"):
//   widths joined by '-'   an MLP; the first width must be the input's size (an image is
//                          flattened first)
//   convKxK:C[/sS][/pP]    Conv2d with C channels, a K x K kernel, stride S (1), padding P
//                          (K / 2, the input's size for odd K and stride 1), then ReLU
//   poolK, maxpoolK        MaxPool2d over K x K windows; avgpoolK: AvgPool2d (K a power of two)
//   flatten                implied before the first linear layer after image layers
//   linear:N               Linear with N outputs, then ReLU unless it is the last layer
// Throws lowbit::Error naming `argument` for anything else, and for layers that do not fit the
// input (LayerShapes).
Architecture ParseArchitecture(const std::string& text, const ImageShape& input,
                               const std::string& argument);

// The notation of an architecture, with its implied layers written out ("relu", "flatten").
std::string DescribeArchitecture(const Architecture& architecture);

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_ARCHITECTURE_H_
