// The argument checks that the quantization helpers (lowbit/internal/quantization/quantization.cc),
// the quantized add (lowbit/internal/quantization/quantized_add.cc) and the quantized GEMM
// (lowbit/internal/quantization/quantized_gemm.cc) share, with the same messages.
#ifndef LOWBIT_INTERNAL_QUANTIZATION_QUANTIZATION_CHECKS_H_
#define LOWBIT_INTERNAL_QUANTIZATION_QUANTIZATION_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "lowbit/public/quantization.h"

namespace lowbit {
namespace internal {

// A double as short as it can be and still read back exactly, for error messages ("1e-12").
std::string Text(double value);

// Throws lowbit::Error naming `name` unless scale is finite and positive.
void CheckScale(double scale, const std::string& name);

// Throws lowbit::Error naming `name`.bits unless type.bits is in [2, 8].
void CheckType(const QuantizedType& type, const std::string& name);

// Throws lowbit::Error naming `name` unless zero_point lies in the type's range.
void CheckZeroPoint(std::int32_t zero_point, const QuantizedType& type, const std::string& name);

// Throws lowbit::Error naming `name` for a null pointer to a nonzero count of entries.
void CheckPointer(const void* pointer, std::size_t count, const std::string& name);

// ChooseQuantizationParams, its errors naming `min_name` and `max_name`.
QuantizationParams ChooseChecked(double min, double max, const QuantizedType& type,
                                 QuantizationMode mode, const std::string& min_name,
                                 const std::string& max_name);

// QuantizeMultiplier, its errors naming `name`.
FixedPointMultiplier QuantizeChecked(double real_multiplier, const std::string& name);

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_QUANTIZATION_QUANTIZATION_CHECKS_H_
