// The frame the bit-serial kernels for 1- and 2-bit operands (kernel_bit_serial_<isa>.cc) share:
// a tile's format, the micro-kernel and packers around its arithmetic, and the choice of tile by
// bit depths. Include it only from a file compiled for the tile's ISA.
//
// An int32 lane holds 32 depth bits of one row's or column's plane (kBitPlaneGroup's layout):
// popcount(lhs plane p AND rhs plane q) counts the depth values where both bits are set, which
// the product of the packed values counts 2^(p + q) times. The tiles add the counts of each weight
// p + q (a "class") apart and weight them once, at the end.
#ifndef LOWBIT_INTERNAL_KERNEL_KERNEL_BIT_SERIAL_H_
#define LOWBIT_INTERNAL_KERNEL_KERNEL_BIT_SERIAL_H_

#include <cstdint>
#include <type_traits>

#include "lowbit/internal/kernel/kernel.h"

namespace lowbit {
namespace internal {

constexpr PackedType BitPlaneType(int planes) {
  return planes == 1 ? PackedType::kOneBitPlane : PackedType::kTwoBitPlanes;
}

// The weights p + q a product of these operands adds up.
constexpr int WeightClasses(int lhs_planes, int rhs_planes) { return lhs_planes + rhs_planes - 1; }

// For ISAs that count bits per byte: how many depth groups a byte may count before it could wrap.
// A group adds at most 8 to a byte for each plane pair of a class, and the class of weight 1 of two
// 2-bit operands has two pairs, (0, 1) and (1, 0).
constexpr int ByteCountGroups(int lhs_planes, int rhs_planes) {
  return 255 / (8 * (lhs_planes < rhs_planes ? lhs_planes : rhs_planes));
}

// A PackFunction for bit planes given the type and panel width: PackBitPlanesAvx2 or
// PackBitPlanesAvx512 (pack_x86.h), or PackBitPlanesPortable (pack.h).
using BitPlanePacker = void (*)(const MatrixView& source, PackedType type, int panel_width,
                                int start, int count, int depth_start, int depth, void* packed,
                                std::int32_t* sums);

// Tile<kLhsPlanes, kRhsPlanes> provides kRows, kCols and Run<kUsedRows>(const std::uint32_t* lhs,
// const std::uint32_t* rhs, int padded_depth, std::int32_t* acc, int acc_stride, bool accumulate),
// the micro-kernel for kUsedRows rows.
// And where the ISA has them, RequantizingPacker is a type whose static Pack(source,
// requantization, type, panel_width, start, count, depth, packed, sums) packs bit planes of lines
// it requantizes as it reads them (PackBitPlanesRequantizingAvx512, pack_x86.h), else void. (A
// type rather than a function pointer that may be null: GCC's sanitizer builds do not take a
// function's address compared with null as a constant.)
template <template <int, int> class Tile, int kLhsPlanes, int kRhsPlanes, Kernel kKernel,
          BitPlanePacker kPack, typename RequantizingPacker>
struct BitSerialKernel {
  using PlaneTile = Tile<kLhsPlanes, kRhsPlanes>;
  static constexpr KernelFormat kFormat{PlaneTile::kRows, PlaneTile::kCols, kBitPlaneGroup,
                                        BitPlaneType(kLhsPlanes), BitPlaneType(kRhsPlanes)};

  static void MicroKernel(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                          std::int32_t* acc, int acc_stride, bool accumulate) {
    ForRowCount<PlaneTile::kRows>(rows, [&](auto used_rows) {
      PlaneTile::template Run<decltype(used_rows)::value>(
          static_cast<const std::uint32_t*>(lhs_panel),
          static_cast<const std::uint32_t*>(rhs_panel), padded_depth, acc, acc_stride, accumulate);
    });
  }

  static void PackLhs(const MatrixView& source, int start, int count, int depth_start, int depth,
                      void* packed, std::int32_t* sums) {
    kPack(source, kFormat.lhs_type, kFormat.lhs_rows, start, count, depth_start, depth, packed,
          sums);
  }

  static void PackRhs(const MatrixView& source, int start, int count, int depth_start, int depth,
                      void* packed, std::int32_t* sums) {
    kPack(source, kFormat.rhs_type, kFormat.rhs_cols, start, count, depth_start, depth, packed,
          sums);
  }

  template <bool kLhs>
  static void PackRequantizing(const MatrixView& source, const PackRequantization& requantization,
                               int start, int count, int depth, void* packed, std::int32_t* sums) {
    RequantizingPacker::Pack(source, requantization, kLhs ? kFormat.lhs_type : kFormat.rhs_type,
                             kLhs ? kFormat.lhs_rows : kFormat.rhs_cols, start, count, depth,
                             packed, sums);
  }

  template <bool kLhs>
  static constexpr RequantizingPackFunction RequantizingPack() {
    if constexpr (std::is_void<RequantizingPacker>::value) {
      return nullptr;
    } else {
      return &PackRequantizing<kLhs>;
    }
  }

  static constexpr RequantizingPackFunction kLhsRequantizing = RequantizingPack<true>();
  static constexpr RequantizingPackFunction kRhsRequantizing = RequantizingPack<false>();
  static constexpr KernelImplementation kImplementation{
      kKernel, kFormat, &PackLhs, &PackRhs,         &MicroKernel,    nullptr,
      nullptr, nullptr, nullptr,  kLhsRequantizing, kRhsRequantizing};
};

// The implementation of Tile for these bit depths, or null unless both are 1 or 2.
template <template <int, int> class Tile, Kernel kKernel, BitPlanePacker kPack,
          typename RequantizingPacker = void>
const KernelImplementation* BitSerialKernelFor(int lhs_bits, int rhs_bits) {
  if (lhs_bits < 1 || lhs_bits > 2 || rhs_bits < 1 || rhs_bits > 2) return nullptr;
  if (lhs_bits == 1) {
    return rhs_bits == 1
               ? &BitSerialKernel<Tile, 1, 1, kKernel, kPack, RequantizingPacker>::kImplementation
               : &BitSerialKernel<Tile, 1, 2, kKernel, kPack, RequantizingPacker>::kImplementation;
  }
  return rhs_bits == 1
             ? &BitSerialKernel<Tile, 2, 1, kKernel, kPack, RequantizingPacker>::kImplementation
             : &BitSerialKernel<Tile, 2, 2, kKernel, kPack, RequantizingPacker>::kImplementation;
}

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_KERNEL_KERNEL_BIT_SERIAL_H_
