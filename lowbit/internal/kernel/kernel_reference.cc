// The portable reference micro-kernel (4x4 tile, int16 operands, depth in pairs) and its
// packing: the path every ISA kernel is checked against, and the one used on unknown CPUs.
#include <cstdint>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack.h"

namespace lowbit {
namespace internal {
namespace {

constexpr KernelFormat kReferenceFormat{4, 4, 2, PackedType::kInt16, PackedType::kInt16};

void PackLhsReference(const MatrixView& source, int start, int count, int depth_start, int depth,
                      void* packed, std::int32_t* sums) {
  PackWithFormat<std::int16_t>(source, kReferenceFormat, kReferenceFormat.lhs_rows, start, count,
                               depth_start, depth, packed, sums);
}

void PackRhsReference(const MatrixView& source, int start, int count, int depth_start, int depth,
                      void* packed, std::int32_t* sums) {
  PackWithFormat<std::int16_t>(source, kReferenceFormat, kReferenceFormat.rhs_cols, start, count,
                               depth_start, depth, packed, sums);
}

void MicroKernelReference(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                          std::int32_t* acc, int acc_stride, bool accumulate) {
  constexpr int kRows = kReferenceFormat.lhs_rows;
  constexpr int kCols = kReferenceFormat.rhs_cols;
  constexpr int kGroup = kReferenceFormat.depth_group;
  const auto* lhs = static_cast<const std::int16_t*>(lhs_panel);
  const auto* rhs = static_cast<const std::int16_t*>(rhs_panel);
  // Unsigned sums: wrapping is the defined int32 behaviour of every SIMD kernel, and the
  // offset terms added at unpacking bring a wrapped sum back to the exact result.
  std::uint32_t sums[kRows][kCols] = {};
  for (int group = 0; group < padded_depth; group += kGroup) {
    // The whole tile, whose constant bounds the compiler unrolls; only `rows` rows are stored.
    for (int i = 0; i < kRows; ++i) {
      for (int j = 0; j < kCols; ++j) {
        for (int k = 0; k < kGroup; ++k) {
          sums[i][j] += static_cast<std::uint32_t>(lhs[i * kGroup + k] * rhs[j * kGroup + k]);
        }
      }
    }
    lhs += kRows * kGroup;
    rhs += kCols * kGroup;
  }
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < kCols; ++j) {
      std::int32_t& out = acc[i * acc_stride + j];
      out = static_cast<std::int32_t>(sums[i][j] +
                                      (accumulate ? static_cast<std::uint32_t>(out) : 0U));
    }
  }
}

}  // namespace

const KernelImplementation& ReferenceKernel() {
  static const KernelImplementation implementation{Kernel::kReference, kReferenceFormat,
                                                   &PackLhsReference, &PackRhsReference,
                                                   &MicroKernelReference};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
