// The bit-serial kernels for 1- and 2-bit operands on AVX2 (compiled with -mavx2), for CPUs
// without VPOPCNTDQ: products of bit planes by AND and a popcount from a nibble table (vpshufb).
#include <immintrin.h>

#include <cstdint>

#include "lowbit/internal/kernel/kernel_bit_serial.h"
#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// An rhs vector holds a plane's words of 8 columns, a broadcast one lhs row's word
// (kernel_bit_serial.h). AVX2 has no popcount instruction: vpshufb looks up the count of each
// nibble, and the byte counts of each weight class are added in bytes for a run of depth groups,
// as many as cannot wrap a byte, then widened into the lane's int32 total by vpmaddubsw (which
// applies the class's weight) and vpmaddwd.
template <int kLhsPlanes, int kRhsPlanes>
struct BitSerialTile {
  static constexpr int kClasses = WeightClasses(kLhsPlanes, kRhsPlanes);
  static constexpr int kRows = kClasses == 1 ? 4 : kClasses == 2 ? 2 : 1;
  static constexpr int kVectors = 2;
  static constexpr int kCols = 8 * kVectors;

  static constexpr int kRunGroups = ByteCountGroups(kLhsPlanes, kRhsPlanes);

  static __m256i CountBits(__m256i bits, __m256i table, __m256i low_nibbles) {
    const __m256i low = _mm256_and_si256(bits, low_nibbles);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_nibbles);
    return _mm256_add_epi8(_mm256_shuffle_epi8(table, low), _mm256_shuffle_epi8(table, high));
  }

  template <int kUsedRows>
  static void Run(const std::uint32_t* lhs, const std::uint32_t* rhs, int padded_depth,
                  std::int32_t* acc, int acc_stride, bool accumulate) {
    const __m256i table = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1,
                                           2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
    const __m256i low_nibbles = _mm256_set1_epi8(0x0f);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i totals[kUsedRows][kVectors];
    for (auto& row : totals) {
      for (__m256i& total : row) total = _mm256_setzero_si256();
    }
    const int groups = padded_depth / kBitPlaneGroup;
    for (int run_start = 0; run_start < groups; run_start += kRunGroups) {
      const int run_end = run_start + kRunGroups < groups ? run_start + kRunGroups : groups;
      __m256i counts[kUsedRows][kVectors][kClasses];
      for (auto& row : counts) {
        for (auto& vector : row) {
          for (__m256i& count : vector) count = _mm256_setzero_si256();
        }
      }
      for (int group = run_start; group < run_end; ++group) {
        const std::uint32_t* lhs_group = lhs + group * kLhsPlanes * kRows;
        const std::uint32_t* rhs_group = rhs + group * kRhsPlanes * kCols;
        __m256i rhs_planes[kRhsPlanes][kVectors];
        for (int q = 0; q < kRhsPlanes; ++q) {
          for (int v = 0; v < kVectors; ++v) {
            rhs_planes[q][v] =
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rhs_group + q * kCols + 8 * v));
          }
        }
        for (int i = 0; i < kUsedRows; ++i) {
          for (int p = 0; p < kLhsPlanes; ++p) {
            const __m256i lhs_plane = _mm256_set1_epi32(static_cast<int>(lhs_group[p * kRows + i]));
            for (int v = 0; v < kVectors; ++v) {
              for (int q = 0; q < kRhsPlanes; ++q) {
                const __m256i both = _mm256_and_si256(lhs_plane, rhs_planes[q][v]);
                counts[i][v][p + q] =
                    _mm256_add_epi8(counts[i][v][p + q], CountBits(both, table, low_nibbles));
              }
            }
          }
        }
      }
      for (int i = 0; i < kUsedRows; ++i) {
        for (int v = 0; v < kVectors; ++v) {
          // Byte pairs times their weight, at most 2 x 255 x (1 + 2 + 4) in int16.
          __m256i pairs = _mm256_maddubs_epi16(counts[i][v][0], _mm256_set1_epi8(1));
          for (int weight = 1; weight < kClasses; ++weight) {
            pairs = _mm256_add_epi16(
                pairs, _mm256_maddubs_epi16(counts[i][v][weight], _mm256_set1_epi8(1 << weight)));
          }
          totals[i][v] = _mm256_add_epi32(totals[i][v], _mm256_madd_epi16(pairs, ones));
        }
      }
    }
    for (int i = 0; i < kUsedRows; ++i) {
      for (int v = 0; v < kVectors; ++v) {
        auto* out =
            reinterpret_cast<__m256i*>(acc + static_cast<std::ptrdiff_t>(i) * acc_stride + 8 * v);
        __m256i sum = totals[i][v];
        if (accumulate) sum = _mm256_add_epi32(sum, _mm256_loadu_si256(out));
        _mm256_storeu_si256(out, sum);
      }
    }
  }
};

}  // namespace

const KernelImplementation* Avx2BitSerialKernel(int lhs_bits, int rhs_bits) {
  return BitSerialKernelFor<BitSerialTile, Kernel::kAvx2, &PackBitPlanesAvx2>(lhs_bits, rhs_bits);
}

}  // namespace internal
}  // namespace lowbit
