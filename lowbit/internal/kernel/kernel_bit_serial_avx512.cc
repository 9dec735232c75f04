// The bit-serial kernels for 1- and 2-bit operands on AVX-512 VPOPCNTDQ (compiled with -mavx512f
// -mavx512bw -mavx512vpopcntdq): products of bit planes by AND and a popcount per int32 lane.
#include <cstdint>

// <immintrin.h> through this header first: without GCC 12's false -Wuninitialized reports.
#include "lowbit/fixedpoint/fixedpoint_avx512.h"
#include "lowbit/internal/kernel/kernel_bit_serial.h"
#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// An rhs vector holds a plane's words of 16 columns, a broadcast one lhs row's word: vpopcntd
// counts each lane's bits, and the counts of each weight class are added in their own int32
// accumulators (kernel_bit_serial.h). Registers: kRows x 2 vectors x classes accumulators, 2 x rhs
// planes rhs vectors and a broadcast, within the 32 zmm registers.
template <int kLhsPlanes, int kRhsPlanes>
struct BitSerialTile {
  static constexpr int kClasses = WeightClasses(kLhsPlanes, kRhsPlanes);
  static constexpr int kRows = kClasses == 1 ? 8 : kClasses == 2 ? 4 : 3;
  static constexpr int kVectors = 2;
  static constexpr int kCols = 16 * kVectors;

  template <int kUsedRows>
  static void Run(const std::uint32_t* lhs, const std::uint32_t* rhs, int padded_depth,
                  std::int32_t* acc, int acc_stride, bool accumulate) {
    __m512i counts[kUsedRows][kVectors][kClasses];
    for (auto& row : counts) {
      for (auto& vector : row) {
        for (__m512i& count : vector) count = _mm512_setzero_si512();
      }
    }
    for (int group = 0; group < padded_depth; group += kBitPlaneGroup) {
      __m512i rhs_planes[kRhsPlanes][kVectors];
      for (int q = 0; q < kRhsPlanes; ++q) {
        for (int v = 0; v < kVectors; ++v) {
          rhs_planes[q][v] = _mm512_loadu_si512(rhs + q * kCols + 16 * v);
        }
      }
      for (int i = 0; i < kUsedRows; ++i) {
        for (int p = 0; p < kLhsPlanes; ++p) {
          const __m512i lhs_plane = _mm512_set1_epi32(static_cast<int>(lhs[p * kRows + i]));
          for (int v = 0; v < kVectors; ++v) {
            for (int q = 0; q < kRhsPlanes; ++q) {
              const __m512i both = _mm512_and_si512(lhs_plane, rhs_planes[q][v]);
              __m512i& count = counts[i][v][p + q];
              count = _mm512_add_epi32(count, _mm512_popcnt_epi32(both));
            }
          }
        }
      }
      lhs += kLhsPlanes * kRows;
      rhs += kRhsPlanes * kCols;
    }
    for (int i = 0; i < kUsedRows; ++i) {
      for (int v = 0; v < kVectors; ++v) {
        __m512i sum = counts[i][v][0];
        for (int weight = 1; weight < kClasses; ++weight) {
          sum = _mm512_add_epi32(sum, _mm512_slli_epi32(counts[i][v][weight], weight));
        }
        std::int32_t* out = acc + static_cast<std::ptrdiff_t>(i) * acc_stride + 16 * v;
        if (accumulate) sum = _mm512_add_epi32(sum, _mm512_loadu_si512(out));
        _mm512_storeu_si512(out, sum);
      }
    }
  }
};

// The packers that requantize lines along the depth as they read them.
struct RequantizingBitPlanes {
  static void Pack(const MatrixView& source, const PackRequantization& requantization,
                   PackedType type, int panel_width, int start, int count, int depth, void* packed,
                   std::int32_t* sums) {
    PackBitPlanesRequantizingAvx512(source, requantization, type, panel_width, start, count, depth,
                                    packed, sums);
  }
};

}  // namespace

const KernelImplementation* Avx512BitSerialKernel(int lhs_bits, int rhs_bits) {
  return BitSerialKernelFor<BitSerialTile, Kernel::kAvx512Vnni, &PackBitPlanesAvx512,
                            RequantizingBitPlanes>(lhs_bits, rhs_bits);
}

}  // namespace internal
}  // namespace lowbit
