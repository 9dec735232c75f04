// AVX-512 packing (see pack_x86.h), compiled with -mavx2 -mavx512f -mavx512bw -mavx512vnni:
// uint8 byte groups for the whole panels of 16 or 32 rows of a source whose rows run along the
// depth, 64 depth values a step, which are the AVX-512 VNNI kernel's rhs panels. Everything else
// (the depth tail, a last partial panel, other widths, int8 groups, a source whose rows are
// adjacent) goes to PackByteGroupsAvx2, which writes the same layout.
#include <cstddef>
#include <cstdint>

#include "lowbit/internal/pack/pack_x86.h"
#include "lowbit/internal/pack/transpose_avx512.h"  // and <immintrin.h>

namespace lowbit {
namespace internal {
namespace {

constexpr int kStep = 64;  // depth values per row and step: 16 groups of 4, one register
constexpr int kGroup = 4;

// The steps of one whole panel of `width` rows (a multiple of 16) of kUint8 values. A step of 16
// rows is a 16 x 16 square of 4-byte groups: transposed, register g holds those rows' group g in
// row order, which is where the layout wants it. vpdpbusd by ones adds each group's 4 values to
// its row's sum. The AVX2 packer's 4-row steps took three quarters of a 1 x 1024 x 1024 GEMM's
// time.
void PackUint8PanelSteps(const std::uint8_t* rows_base, std::ptrdiff_t stride, int width, int depth,
                         __m512i delta, std::uint8_t* out, std::int32_t* sums) {
  const __m512i ones = _mm512_set1_epi8(1);
  for (int first = 0; first < width; first += 16) {
    __m512i row_sums = _mm512_setzero_si512();
    for (int d = 0; d < depth; d += kStep) {
      __m512i groups[16];
      for (int i = 0; i < 16; ++i) {
        groups[i] =
            _mm512_add_epi8(_mm512_loadu_si512(rows_base + (first + i) * stride + d), delta);
      }
      TransposeInt32x16x16(groups);
      for (int g = 0; g < 16; ++g) {
        row_sums = _mm512_dpbusd_epi32(row_sums, groups[g], ones);
        const std::ptrdiff_t group = d / kGroup + g;
        _mm512_storeu_si512(out + (group * width + first) * kGroup, groups[g]);
      }
    }
    std::int32_t* first_sums = sums + first;
    _mm512_storeu_si512(first_sums, _mm512_add_epi32(_mm512_loadu_si512(first_sums), row_sums));
  }
}

}  // namespace

void PackByteGroupsAvx512(const MatrixView& source, PackedType type, int panel_width, int start,
                          int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  const __m512i delta = _mm512_set1_epi8(static_cast<char>(-PackedValueShift(type, source)));
  const auto steps = [&](const std::uint8_t* rows_base, int stepped_depth, std::uint8_t* out,
                         std::int32_t* panel_sums) {
    PackUint8PanelSteps(rows_base, source.stride, panel_width, stepped_depth, delta, out,
                        panel_sums);
  };
  const auto rest = [&](int first_row, int rows, int rest_depth_start, int rest_depth,
                        std::uint8_t* out, std::int32_t* rest_sums) {
    PackByteGroupsAvx2(source, type, panel_width, first_row, rows, rest_depth_start, rest_depth,
                       out, rest_sums);
  };
  const bool stepped = type == PackedType::kUint8 && panel_width % 16 == 0;
  PackWholePanelsInSteps(source, stepped, panel_width, start, count, depth_start, depth, kStep,
                         kGroup, static_cast<std::uint8_t*>(packed), sums, steps, rest);
}

}  // namespace internal
}  // namespace lowbit
