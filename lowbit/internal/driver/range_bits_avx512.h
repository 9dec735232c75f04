// A declared range's check (RangeBits, driver.h) in zmm registers, shared by the AVX-512 packer
// and the direct product. Include it only from a file compiled with -mavx512f.
#ifndef LOWBIT_INTERNAL_DRIVER_RANGE_BITS_AVX512_H_
#define LOWBIT_INTERNAL_DRIVER_RANGE_BITS_AVX512_H_

#include <cstdint>

#include "lowbit/fixedpoint/fixedpoint_avx512.h"  // <immintrin.h>, without GCC 12's false warnings
#include "lowbit/internal/driver/driver.h"

namespace lowbit {
namespace internal {

// ORs the 64 bytes of `bits` (values plus the range's bias, ORed together) into range->bits: of
// the 8-byte lanes, then of the bytes of that.
inline void OrBytesInto(__m512i bits, RangeBits* range) {
  auto word = static_cast<std::uint64_t>(_mm512_reduce_or_epi64(bits));
  word |= word >> 32;
  word |= word >> 16;
  word |= word >> 8;
  range->bits |= static_cast<std::uint8_t>(word);
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_DRIVER_RANGE_BITS_AVX512_H_
