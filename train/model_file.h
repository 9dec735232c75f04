// lowbit-train's model files: a network's settings and every layer's integer state, versioned
// and checksummed, so that a network can be evaluated or trained further later.
#ifndef LOWBIT_TRAIN_MODEL_FILE_H_
#define LOWBIT_TRAIN_MODEL_FILE_H_

#include <string>

#include "train/network.h"

namespace lowbit {
namespace train {

// The layout (little-endian): the 8 bytes "LBTRAIN\0", the format version (uint32, 2), the
// settings (int32s: the input's height, width and channels, the layer count and for each layer
// its kind, outputs, kernel, stride and padding (LayerSpec), the input and activation exponents,
// bits, rounding, loss, the four SGD shifts and max step; the seed as uint64), then for each
// layer that learns its four exponents and its state (Layer::GetState), and last the CRC-32
// (zlib's) of all the bytes before it. Version 1 files (MLPs: a width count and the widths in
// place of the architecture) load too.
void SaveModel(const Network& network, const std::string& path);

// The network saved in `path`. A missing, truncated or corrupt file, another format or version,
// or a state that does not match the settings, is a DataError naming the file and the fault.
Network LoadModel(const std::string& path);

}  // namespace train
}  // namespace lowbit

#endif  // LOWBIT_TRAIN_MODEL_FILE_H_
