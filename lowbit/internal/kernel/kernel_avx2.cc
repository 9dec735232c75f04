// The AVX2 kernels (compiled with -mavx2): the 8-bit tile of kernel_pairs_x86.h, 6 rows by 16
// columns in 12 ymm registers; for prepacked weights (int8 byte groups), the quad tile below and
// the nibble tile of kernel_nibbles_x86.h for matrix-vector products; the narrow tiles of
// kernel_narrow_x86.h; and the narrow tile on prepacked 4-bit weights stored two to a byte.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/kernel/kernel_narrow_x86.h"
#include "lowbit/internal/kernel/kernel_nibbles_x86.h"
#include "lowbit/internal/kernel/kernel_pairs_x86.h"
#include "lowbit/internal/pack/pack_x86.h"

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
  // The same, by ones read from memory (see OneStepTile).
  static Vector WidenPairsFromMemory(Vector v) {
    asm("vpmaddwd %1, %0, %0" : "+x"(v) : "m"(kInt16Ones));
    return v;
  }
  static Vector AddInt32(Vector a, Vector b) { return _mm256_add_epi32(a, b); }
  static Vector LoadInt32(const std::int32_t* values) { return Load(values); }
  static void StoreInt32(std::int32_t* values, Vector v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(values), v);
  }
};

using Tile = PairTile<Avx2Isa>;
constexpr KernelFormat kAvx2Format = Tile::kFormat;

// Prepacked weights are read from memory on every call: they are int8, in the byte groups of 4
// depth values that the nibble tile (kernel_nibbles_x86.h) multiplies for matrix-vector
// products, and this tile for every other lhs. It is the 8-bit tile's arithmetic on that layout:
// for each half (8 columns) of a 16-column panel in turn, vpmovsxbw widens 4 columns x 4 depth
// values of weights, and each of 6 lhs rows, as a broadcast group of 4 int16 values, gives every
// column's two pair sums in adjacent int32 lanes, which are added when the half is stored. Per
// product it issues what the int16 tile does (12 vpmaddwd, 12 vpaddd, 2 vpmovsxbw and 6
// broadcasts per 192 products); on cached panels it measured 3 to 8% faster (medians) and 2 to
// 4% slower (best runs) than the int16 tile on int8 pairs that prepacked weights used before.
struct QuadTile {
  static constexpr int kRows = 6;
  static constexpr int kCols = 16;
  static constexpr int kGroup = 4;
  static constexpr KernelFormat kFormat =
      RhsPanelFromL2({kRows, kCols, kGroup, PackedType::kInt16, PackedType::kInt8});

  // One row's sums for one half: columns 0-3 and 4-7, two lanes each.
  struct Row {
    __m256i low;
    __m256i high;

    void Store(bool accumulate, std::int32_t* acc) const {
      // Lanes (0+1, 2+3) of each 128-bit half: columns 0, 1, 4, 5 | 2, 3, 6, 7, then in order.
      __m256i sums = _mm256_permute4x64_epi64(_mm256_hadd_epi32(low, high), 0xd8);
      if (accumulate) {
        sums = _mm256_add_epi32(sums, _mm256_loadu_si256(reinterpret_cast<__m256i*>(acc)));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc), sums);
    }
  };

  static Row MultiplyRow(Row sums, const std::int16_t* lhs_group, __m256i rhs_low,
                         __m256i rhs_high) {
    long long bits;
    std::memcpy(&bits, lhs_group, sizeof(bits));
    const __m256i group = _mm256_set1_epi64x(bits);
    return {_mm256_add_epi32(sums.low, _mm256_madd_epi16(group, rhs_low)),
            _mm256_add_epi32(sums.high, _mm256_madd_epi16(group, rhs_high))};
  }

  // The half of the panel at `rhs` (its first 8 columns' bytes), for the first kUsedRows rows.
  // Named rows and one store loop, as in SixRowTile::Rows.
  template <int kUsedRows>
  __attribute__((always_inline)) static void Half(const std::int16_t* lhs, const std::int8_t* rhs,
                                                  int groups, std::int32_t* acc, int acc_stride,
                                                  bool accumulate) {
    const Row zero{_mm256_setzero_si256(), _mm256_setzero_si256()};
    Row row0 = zero, row1 = zero, row2 = zero, row3 = zero, row4 = zero, row5 = zero;
#pragma GCC unroll 2
    for (int group = 0; group < groups; ++group) {
      // The weights stream from L3 or memory: 2 KiB ahead hides the latency.
      _mm_prefetch(reinterpret_cast<const char*>(rhs + 2048), _MM_HINT_T0);
      const __m256i rhs_low =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rhs)));
      const __m256i rhs_high =
          _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rhs + 16)));
      row0 = MultiplyRow(row0, lhs, rhs_low, rhs_high);
      if (kUsedRows > 1) row1 = MultiplyRow(row1, lhs + kGroup, rhs_low, rhs_high);
      if (kUsedRows > 2) row2 = MultiplyRow(row2, lhs + 2 * kGroup, rhs_low, rhs_high);
      if (kUsedRows > 3) row3 = MultiplyRow(row3, lhs + 3 * kGroup, rhs_low, rhs_high);
      if (kUsedRows > 4) row4 = MultiplyRow(row4, lhs + 4 * kGroup, rhs_low, rhs_high);
      if (kUsedRows > 5) row5 = MultiplyRow(row5, lhs + 5 * kGroup, rhs_low, rhs_high);
      lhs += kRows * kGroup;
      rhs += kCols * kGroup;
    }
    const Row rows[kRows] = {row0, row1, row2, row3, row4, row5};
    for (int i = 0; i < kUsedRows; ++i) rows[i].Store(accumulate, acc + i * acc_stride);
  }

  // One or two rows (the last panel of 7 or 8): both halves in one pass, which reads the lhs
  // and the weights once; 8 accumulators and 4 weight vectors fit the registers.
  template <int kUsedRows>
  __attribute__((always_inline)) static void BothHalves(const std::int16_t* lhs,
                                                        const std::int8_t* rhs, int groups,
                                                        std::int32_t* acc, int acc_stride,
                                                        bool accumulate) {
    const Row zero{_mm256_setzero_si256(), _mm256_setzero_si256()};
    Row first0 = zero, second0 = zero, first1 = zero, second1 = zero;
#pragma GCC unroll 2
    for (int group = 0; group < groups; ++group) {
      _mm_prefetch(reinterpret_cast<const char*>(rhs + 2048), _MM_HINT_T0);
      __m256i columns[4];
      for (int i = 0; i < 4; ++i) {
        columns[i] =
            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rhs + 16 * i)));
      }
      first0 = MultiplyRow(first0, lhs, columns[0], columns[1]);
      second0 = MultiplyRow(second0, lhs, columns[2], columns[3]);
      if (kUsedRows > 1) {
        first1 = MultiplyRow(first1, lhs + kGroup, columns[0], columns[1]);
        second1 = MultiplyRow(second1, lhs + kGroup, columns[2], columns[3]);
      }
      lhs += kRows * kGroup;
      rhs += kCols * kGroup;
    }
    first0.Store(accumulate, acc);
    second0.Store(accumulate, acc + kCols / 2);
    if (kUsedRows > 1) {
      first1.Store(accumulate, acc + acc_stride);
      second1.Store(accumulate, acc + acc_stride + kCols / 2);
    }
  }

  template <int kUsedRows>
  __attribute__((noinline)) static void Rows(const std::int16_t* lhs, const std::int8_t* rhs,
                                             int padded_depth, std::int32_t* acc, int acc_stride,
                                             bool accumulate) {
    const int groups = padded_depth / kGroup;
    if constexpr (kUsedRows <= 2) {
      BothHalves<kUsedRows>(lhs, rhs, groups, acc, acc_stride, accumulate);
    } else {
      Half<kUsedRows>(lhs, rhs, groups, acc, acc_stride, accumulate);
      Half<kUsedRows>(lhs, rhs + kCols / 2 * kGroup, groups, acc + kCols / 2, acc_stride,
                      accumulate);
    }
  }

  static void MicroKernel(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                          std::int32_t* acc, int acc_stride, bool accumulate) {
    const auto* lhs = static_cast<const std::int16_t*>(lhs_panel);
    const auto* rhs = static_cast<const std::int8_t*>(rhs_panel);
    ForRowCount<kRows>(rows, [&](auto used_rows) {
      Rows<decltype(used_rows)::value>(lhs, rhs, padded_depth, acc, acc_stride, accumulate);
    });
  }
};

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

void PackQuadLhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                     void* packed, std::int32_t* sums) {
  PackInt16QuadsAvx2(source, QuadTile::kRows, start, count, depth_start, depth, packed, sums);
}

void PackNibbleLhsAvx2(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackNibbleGroupsAvx2(source, kAvx2NibbleFormat.lhs_rows, start, count, depth_start, depth, packed,
                       sums);
}

// Both prepacked tiles' rhs layout.
void PackPrepackedRhsAvx2(const MatrixView& source, int start, int count, int depth_start,
                          int depth, void* packed, std::int32_t* sums) {
  static_assert(QuadTile::kCols == NibbleTileAvx2::kCols && QuadTile::kGroup == kNibbleGroup,
                "the prepacked tiles read one rhs layout");
  PackByteGroupsAvx2(source, PackedType::kInt8, QuadTile::kCols, start, count, depth_start, depth,
                     packed, sums);
}

// Prepacked weights of at most 4 bits (PackedType::kInt4Pairs): a step of the narrow tile's rhs
// panel, 4 depth values of 16 columns (two vectors of 32 bytes in kInt8's layout), is stored in
// 32 bytes, byte j holding byte j of the first vector plus 8 in its low nibble and byte j of the
// second plus 8 in its high one. A product bound by reading its weights from memory reads half the
// bytes, for five instructions a step to separate the nibbles.
struct Int4PairSteps {
  static constexpr PackedType kType = PackedType::kInt4Pairs;
  static constexpr int kStepBytes = 32;
  static void Load(const std::int8_t* rhs, __m256i& low, __m256i& high) {
    const __m256i pairs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rhs));
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    const __m256i eight = _mm256_set1_epi8(8);
    low = _mm256_sub_epi8(_mm256_and_si256(pairs, nibble), eight);
    high = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(pairs, 4), nibble), eight);
  }
};

using Int4PairTile = NarrowTile<Avx2Isa, Int4PairSteps>;
using Narrow = NarrowKernels<Avx2Isa>;
constexpr KernelFormat kInt4PairsFormat =
    RhsPanelFromL2({Narrow::kFormat.lhs_rows, Narrow::kFormat.rhs_cols, Narrow::kFormat.depth_group,
                    Narrow::kFormat.lhs_type, Int4PairSteps::kType});
// Every lhs of at most 8 bits against centred 4-bit weights: a pair of products is at most
// 2 x 255 x 8 in magnitude, 8 of them fit int16 (NarrowInt16Steps(8, 4)).
constexpr int kInt4PairSteps = NarrowInt16Steps(8, 4);

void PackRhsInt4Pairs(const MatrixView& source, int start, int count, int depth_start, int depth,
                      void* packed, std::int32_t* sums) {
  PackNibblePairs(&PackByteGroupsAvx2, PackedType::kInt8, kInt4PairsFormat.rhs_cols,
                  kInt4PairsFormat.depth_group, 2 * Int4PairSteps::kStepBytes, source, start, count,
                  depth_start, depth, packed, sums);
}

// The narrow tile's kInt8 panels back from kInt4Pairs ones: each step's 32 bytes into two vectors.
void UnfoldInt4Pairs(const void* packed, int panels, int padded_depth, void* out) {
  const auto* in = static_cast<const std::int8_t*>(packed);
  auto* bytes = static_cast<__m256i*>(out);
  const std::int64_t steps =
      static_cast<std::int64_t>(panels) * padded_depth / kInt4PairsFormat.depth_group;
  for (std::int64_t step = 0; step < steps; ++step) {
    __m256i low, high;
    Int4PairSteps::Load(in + step * Int4PairSteps::kStepBytes, low, high);
    _mm256_storeu_si256(bytes + 2 * step, low);
    _mm256_storeu_si256(bytes + 2 * step + 1, high);
  }
}

}  // namespace

const KernelImplementation& Avx2Int4PairsKernel() {
  static const KernelImplementation implementation = [] {
    KernelImplementation two_to_a_byte{
        Kernel::kAvx2,
        kInt4PairsFormat,
        &Narrow::PackLhs<kInt4PairsFormat.lhs_rows>,
        &PackRhsInt4Pairs,
        &Int4PairTile::MicroKernel<kInt4PairSteps>,
        nullptr,
        [](int lhs_bits, int rhs_bits) -> const KernelImplementation& {
          return *Avx2NarrowKernel(lhs_bits, rhs_bits);
        },
        &UnfoldInt4Pairs};
    // Measured on 4096 x 4096 weights of 4 bits, one thread, milliseconds a call of two to a
    // byte against unfolded (runs of gemm_repeat of 3000 calls, alternating, over the calls, the
    // set-up included; Intel Xeon, Emerald Rapids, kernel avx2): 0.60 to 0.65 against
    // 0.94 to 0.97 at 2 rows, 1.0 to 1.35 against 1.46 to 1.53 at 4, 1.40 to 1.43 against 1.50
    // to 1.59 at 6, 1.69 to 2.01 against 1.92 to 2.26 at 7, 2.13 to 2.27 against 1.96 to 2.12
    // at 8.
    two_to_a_byte.unfold_above_rows = 7;
    return two_to_a_byte;
  }();
  return implementation;
}

const KernelImplementation* Avx2NarrowKernel(int lhs_bits, int rhs_bits) {
  const int steps = NarrowInt16Steps(lhs_bits, rhs_bits);
  return steps == 0 ? nullptr : &NarrowKernels<Avx2Isa>::ForSteps(steps);
}

const KernelImplementation& Avx2Kernel() {
  static const KernelImplementation implementation{Kernel::kAvx2, kAvx2Format, &PackLhsAvx2,
                                                   &PackRhsAvx2, &Tile::MicroKernel};
  return implementation;
}

const KernelImplementation& Avx2PrepackedKernel() {
  static const KernelImplementation implementation{Kernel::kAvx2, QuadTile::kFormat,
                                                   &PackQuadLhsAvx2, &PackPrepackedRhsAvx2,
                                                   &QuadTile::MicroKernel};
  return implementation;
}

const KernelImplementation& Avx2NibbleKernel() {
  static const KernelImplementation implementation{Kernel::kAvx2, kAvx2NibbleFormat,
                                                   &PackNibbleLhsAvx2, &PackPrepackedRhsAvx2,
                                                   &NibbleTileAvx2::MicroKernel};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
