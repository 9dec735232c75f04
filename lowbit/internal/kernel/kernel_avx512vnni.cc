// The AVX-512 VNNI kernel (compiled with -mavx512f -mavx512bw -mavx512vnni): the 6-row tile of
// kernel_pairs_x86.h on zmm registers, 6 rows by 32 columns, where one vpdpbusd multiplies 4
// depth values of unsigned rhs bytes by a signed lhs group and adds them to an int32 lane.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/kernel/kernel_pairs_x86.h"
#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

struct Avx512Isa {
  using Vector = __m512i;
  static constexpr int kInt32Lanes = 16;
  static Vector Zero() { return _mm512_setzero_si512(); }
  static Vector Load(const void* bytes) { return _mm512_loadu_si512(bytes); }
  static Vector BroadcastGroup(const std::uint8_t* group) {
    std::int32_t bits;
    std::memcpy(&bits, group, sizeof(bits));
    return _mm512_set1_epi32(bits);
  }
  static Vector AddInt32(Vector a, Vector b) { return _mm512_add_epi32(a, b); }
  static Vector LoadInt32(const std::int32_t* values) { return Load(values); }
  static void StoreInt32(std::int32_t* values, Vector v) { _mm512_storeu_si512(values, v); }
};

// vpdpbusd adds the 4 products of a lane's unsigned and signed bytes to its int32 sum in one
// instruction, without the int16 saturation of vpmaddubsw: every 8-bit value is exact once
// packing centres the lhs as int8 and the rhs as uint8 (kernel.h's PackedType), which the driver
// adds back through the offsets. That is 64 products an instruction where the AVX2 tile's
// vpmaddwd does 16 and needs a vpaddd besides, at the same issue rate on the CPUs that have it.
// The signed operand is the broadcast one, the one vpdpbusd can take from memory as an embedded
// broadcast.
struct ByteDotProducts {
  using Vector = __m512i;
  static constexpr int kDepth = 4;
  static constexpr PackedType kLhsType = PackedType::kInt8;
  static constexpr PackedType kRhsType = PackedType::kUint8;
  static Vector Add(Vector sums, Vector group, Vector rhs) {
    return _mm512_dpbusd_epi32(sums, rhs, group);
  }
};

using Tile = SixRowTile<Avx512Isa, ByteDotProducts>;
constexpr KernelFormat kFormat = Tile::kFormat;

void PackLhsAvx512Vnni(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackByteGroupsAvx2(source, kFormat.lhs_type, kFormat.lhs_rows, start, count, depth_start, depth,
                     packed, sums);
}

void PackRhsAvx512Vnni(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackByteGroupsAvx512(source, kFormat.rhs_type, kFormat.rhs_cols, start, count, depth_start, depth,
                       packed, sums);
}

}  // namespace

const KernelImplementation& Avx512VnniKernel() {
  static const KernelImplementation implementation{Kernel::kAvx512Vnni, kFormat, &PackLhsAvx512Vnni,
                                                   &PackRhsAvx512Vnni, &Tile::MicroKernel};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
