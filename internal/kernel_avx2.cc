// The AVX2 kernels (compiled with -mavx2): the 8-bit tile of kernel_pairs_x86.h, 6 rows by 16
// columns in 12 ymm registers, with the rhs packed as int16, or as int8 for prepacked weights;
// the nibble tile of kernel_nibbles_x86.h for weights prepacked for matrix-vector products; and
// the narrow tiles of kernel_narrow_x86.h.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "internal/kernel.h"
#include "internal/kernel_narrow_x86.h"
#include "internal/kernel_nibbles_x86.h"
#include "internal/kernel_pairs_x86.h"
#include "internal/pack.h"
#include "internal/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// The vector operations of the x86 tiles (kernel_pairs_x86.h, kernel_narrow_x86.h).
struct Avx2Isa {
  using Vector = __m256i;
  static constexpr Kernel kKernel = Kernel::kAvx2;
  static constexpr int kInt32Lanes = 8;
  static constexpr PackByteGroupsFunction kPackByteGroups = &PackByteGroupsAvx2;
  static Vector Zero() { return _mm256_setzero_si256(); }
  static Vector Load(const void* bytes) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(bytes));
  }
  static Vector LoadPairs(const std::int16_t* pairs) { return Load(pairs); }
  static Vector LoadPairs(const std::int8_t* pairs) {
    return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pairs)));
  }
  static Vector BroadcastGroup(const std::uint8_t* group) {
    std::int32_t bits;
    std::memcpy(&bits, group, sizeof(bits));
    return _mm256_set1_epi32(bits);
  }
  static Vector MultiplyAddPairs(Vector a, Vector b) { return _mm256_madd_epi16(a, b); }
  static Vector MultiplyAddBytes(Vector unsigned_bytes, Vector signed_bytes) {
    return _mm256_maddubs_epi16(unsigned_bytes, signed_bytes);
  }
  static Vector AddInt16(Vector a, Vector b) { return _mm256_add_epi16(a, b); }
  static Vector SplatInt16(std::int16_t value) { return _mm256_set1_epi16(value); }
  static Vector WidenPairs(Vector v) { return MultiplyAddPairs(v, SplatInt16(1)); }
  static Vector AddInt32(Vector a, Vector b) { return _mm256_add_epi32(a, b); }
  static Vector LoadInt32(const std::int32_t* values) { return Load(values); }
  static void StoreInt32(std::int32_t* values, Vector v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(values), v);
  }
};

using Tile = PairTile<Avx2Isa>;
constexpr KernelFormat kAvx2Format = Tile::Format(PackedType::kInt16);
// Prepacked weights are read from memory on every call, and a matrix-vector product does little
// else: int8 halves that traffic, for one vpmovsxbw per rhs vector.
constexpr KernelFormat kAvx2Int8RhsFormat = Tile::Format(PackedType::kInt8);
using NibbleTileAvx2 = NibbleTile<Avx2Isa>;
constexpr KernelFormat kAvx2NibbleFormat = NibbleTileAvx2::kFormat;

void PackLhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                 void* packed, std::int32_t* sums) {
  PackInt16PairsAvx2(source, kAvx2Format.lhs_rows, start, count, depth_start, depth, packed, sums);
}

void PackRhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                 void* packed, std::int32_t* sums) {
  PackInt16PairsAvx2(source, kAvx2Format.rhs_cols, start, count, depth_start, depth, packed, sums);
}

void PackInt8RhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                     void* packed, std::int32_t* sums) {
  PackBytesPortable(source, PackedType::kInt8, kAvx2Int8RhsFormat, kAvx2Int8RhsFormat.rhs_cols,
                    start, count, depth_start, depth, packed, sums);
}

void PackNibbleLhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackNibbleGroupsAvx2(source, kAvx2NibbleFormat.lhs_rows, start, count, depth_start, depth, packed,
                       sums);
}

void PackNibbleRhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackByteGroupsAvx2(source, PackedType::kInt8, kAvx2NibbleFormat.rhs_cols, start, count,
                     depth_start, depth, packed, sums);
}

}  // namespace

const KernelImplementation* Avx2NarrowKernel(int lhs_bits, int rhs_bits) {
  const int steps = NarrowInt16Steps(lhs_bits, rhs_bits);
  return steps == 0 ? nullptr : &NarrowKernels<Avx2Isa>::ForSteps(steps);
}

const KernelImplementation& Avx2Kernel() {
  static const KernelImplementation implementation{Kernel::kAvx2, kAvx2Format, &PackLhsAvx2,
                                                   &PackRhsAvx2, &Tile::MicroKernel<std::int16_t>};
  return implementation;
}

const KernelImplementation& Avx2Int8RhsKernel() {
  static const KernelImplementation implementation{Kernel::kAvx2, kAvx2Int8RhsFormat, &PackLhsAvx2,
                                                   &PackInt8RhsAvx2,
                                                   &Tile::MicroKernel<std::int8_t>};
  return implementation;
}

const KernelImplementation& Avx2NibbleKernel() {
  static const KernelImplementation implementation{Kernel::kAvx2, kAvx2NibbleFormat,
                                                   &PackNibbleLhsAvx2, &PackNibbleRhsAvx2,
                                                   &NibbleTileAvx2::MicroKernel};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
