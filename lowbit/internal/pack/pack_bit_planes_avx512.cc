// The AVX-512 bit-plane packer (kBitPlaneGroup's layout, compiled with -mavx2 -mavx512f
// -mavx512bw -mpopcnt) for sources whose lines run along the depth: vptestmb gathers one bit of
// 64 depth values into a mask, two words of a plane; and the same of lines requantized as they
// are read, which then need neither a requantization pass nor a copy of the requantized values.
// Sources whose lines are adjacent go to PackBitPlanesAvx2.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "lowbit/internal/pack/pack_bit_planes.h"
#include "lowbit/internal/pack/pack_x86.h"
#include "lowbit/internal/pack/requantize_avx512.h"  // and <immintrin.h>

namespace lowbit {
namespace internal {
namespace {

constexpr int kStep = 64;   // depth values a step: a register of bytes, two words of each plane
constexpr int kBlock = 16;  // lines a block: a step's set-up serves all of them

// Lines [0, count) of `depth` values into `rows` (kPlanes planes): `plane_bits(line, d, step,
// in_depth, bits)` sets bits[p] to plane p of a line's packed values at depths [d, d + 64), zero
// outside `in_depth`; each line's sum of packed values is added to its sum at `sums`.
template <int kPlanes, typename PlaneBits>
void PackPlanesAlongDepth(const BitPlaneRows& rows, int count, int depth,
                          const PlaneBits& plane_bits, std::int32_t* sums) {
  const std::ptrdiff_t group_stride = static_cast<std::ptrdiff_t>(kPlanes) * rows.panel_width;
  const std::ptrdiff_t plane_stride = rows.panel_width;
  for (int first = 0; first < count; first += kBlock) {
    const int lines = std::min(kBlock, count - first);
    std::uint32_t* out[kBlock];
    std::int32_t block_sums[kBlock] = {};
    for (int i = 0; i < lines; ++i) out[i] = rows.Row(first + i);
    for (int d = 0; d < depth; d += kStep) {
      const __mmask64 in_depth =
          depth - d >= kStep ? ~__mmask64{0} : (__mmask64{1} << (depth - d)) - 1;
      const SequenceStep step(d, depth);
      const std::ptrdiff_t group = d / kBitPlaneGroup;
      // The step's second group holds depth values (else it lies past the padded depth).
      const bool second = d + kBitPlaneGroup < depth;
      for (int i = 0; i < lines; ++i) {
        std::uint64_t bits[kPlanes];
        plane_bits(first + i, d, step, in_depth, bits);
        std::int32_t sum = 0;
        for (int plane = 0; plane < kPlanes; ++plane) {
          std::uint32_t* const words = out[i] + group * group_stride + plane * plane_stride;
          words[0] = static_cast<std::uint32_t>(bits[plane]);
          if (second) words[group_stride] = static_cast<std::uint32_t>(bits[plane] >> 32);
          sum += static_cast<std::int32_t>(__builtin_popcountll(bits[plane])) << plane;
        }
        block_sums[i] += sum;
      }
    }
    for (int i = 0; i < lines; ++i) sums[first + i] += block_sums[i];
  }
}

// PackPlanesAlongDepth with as many planes as `rows` has, of the packed values `values(line, d,
// step, in_depth)` gives.
template <typename Values>
void PackValuesAlongDepth(const BitPlaneRows& rows, int count, int depth, const Values& values,
                          std::int32_t* sums) {
  const auto planes = [&](auto planes_constant) {
    constexpr int kPlanes = decltype(planes_constant)::value;
    PackPlanesAlongDepth<kPlanes>(
        rows, count, depth,
        [&](int line, int d, const SequenceStep& step, __mmask64 in_depth,
            std::uint64_t(&bits)[kPlanes]) {
          const __m512i packed = values(line, d, step, in_depth);
          for (int plane = 0; plane < kPlanes; ++plane) {
            bits[plane] =
                _mm512_test_epi8_mask(packed, _mm512_set1_epi8(static_cast<char>(1 << plane)));
          }
        },
        sums);
  };
  if (rows.planes == 1) {
    planes(std::integral_constant<int, 1>());
  } else {
    planes(std::integral_constant<int, 2>());
  }
}

}  // namespace

void PackBitPlanesAvx512(const MatrixView& source, PackedType type, int panel_width, int start,
                         int count, int depth_start, int depth, void* packed, std::int32_t* sums) {
  if (source.order != Order::kRowMajor) {
    PackBitPlanesAvx2(source, type, panel_width, start, count, depth_start, depth, packed, sums);
    return;
  }
  const BitPlaneRows rows = BitPlaneRows::Cleared(type, panel_width, count, depth, packed);
  const __m512i delta = _mm512_set1_epi8(static_cast<char>(-PackedValueShift(type, source)));
  const auto* lines = static_cast<const std::uint8_t*>(source.data) +
                      static_cast<std::ptrdiff_t>(start) * source.stride + depth_start;
  const std::ptrdiff_t stride = source.stride;
  PackValuesAlongDepth(
      rows, count, depth,
      [&](int line, int d, const SequenceStep&, __mmask64 in_depth) {
        return _mm512_maskz_add_epi8(
            in_depth, _mm512_maskz_loadu_epi8(in_depth, lines + line * stride + d), delta);
      },
      sums);
}

void PackBitPlanesRequantizingAvx512(const MatrixView& source,
                                     const PackRequantization& requantization, PackedType type,
                                     int panel_width, int start, int count, int depth, void* packed,
                                     std::int32_t* sums) {
  const BitPlaneRows rows = BitPlaneRows::Cleared(type, panel_width, count, depth, packed);
  const RequantizingLineReader read(static_cast<const std::uint8_t*>(source.data) +
                                        static_cast<std::ptrdiff_t>(start) * source.stride,
                                    source.stride, requantization,
                                    static_cast<std::int8_t>(-PackedValueShift(type, source)));
  if (rows.planes == 1 && read.OneBitUnshifted()) {
    PackPlanesAlongDepth<1>(
        rows, count, depth,
        [&](int line, int d, const SequenceStep& step, __mmask64 in_depth,
            std::uint64_t(&bits)[1]) { bits[0] = read.OneBitMask(line, d, step, in_depth); },
        sums);
    return;
  }
  PackValuesAlongDepth(rows, count, depth, read, sums);
}

}  // namespace internal
}  // namespace lowbit
