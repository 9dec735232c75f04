// The micro-kernel check shared by the kernel suites (kernel_x86_test, kernel_narrow_test,
// kernel_bit_serial_test, kernel_neon_test): a tile's operands packed by the kernel's own packers,
// its sums against the 64-bit reference; the narrow operands they are checked on; and the check
// of the tiles on 4-bit weights.
#ifndef LOWBIT_TEST_KERNEL_CHECK_H_
#define LOWBIT_TEST_KERNEL_CHECK_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/kernel/kernel.h"
#include "test/test_util.h"

namespace lowbit {
namespace test {

// The value range of a `bits`-bit operand of this type.
inline int MinValue(internal::ElementType type, int bits) {
  return type == internal::ElementType::kUint8 ? 0 : -(1 << (bits - 1));
}
inline int MaxValue(internal::ElementType type, int bits) {
  return type == internal::ElementType::kUint8 ? (1 << bits) - 1 : (1 << (bits - 1)) - 1;
}

// Picks for NarrowMatrix: every value at the bottom or the top of its range, or uniform over it.
inline int Lowest(int, int, int min, int) { return min; }
inline int Highest(int, int, int, int max) { return max; }
inline auto Uniform(std::mt19937& random) {
  return [&random](int, int, int min, int max) {
    return std::uniform_int_distribution<int>(min, max)(random);
  };
}

// A rows x cols matrix of `bits`-bit values; `pick` chooses each from [min, max].
struct NarrowMatrix {
  std::vector<std::uint8_t> bytes;
  internal::MatrixView view;

  template <typename Pick>
  NarrowMatrix(int rows, int cols, Order order, internal::ElementType type, int bits, Pick pick)
      : bytes(static_cast<std::size_t>(rows) * cols + 1) {
    view = internal::MatrixView{bytes.data(), type,  rows,
                                cols,         order, order == Order::kRowMajor ? cols : rows};
    view.bits = bits;
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        const int value = pick(r, c, MinValue(type, bits), MaxValue(type, bits));
        bytes[Index(r, c)] = static_cast<std::uint8_t>(value);
      }
    }
  }
  std::size_t Index(int r, int c) const {
    return view.order == Order::kRowMajor ? static_cast<std::size_t>(r) * view.stride + c
                                          : static_cast<std::size_t>(c) * view.stride + r;
  }
  std::int64_t Value(int r, int c) const {
    const std::uint8_t byte = bytes[Index(r, c)];
    return view.type == internal::ElementType::kInt8 ? static_cast<std::int8_t>(byte) : byte;
  }
};

// `lhs` (rows x depth) and `rhs_transposed` (cols x depth: the rhs is packed through its
// transpose, as the driver does) packed by the kernel's packers, in whole panels, and the 64-bit
// dot products of the packed (shifted) values of the first `sum_rows` rows by every column,
// row-major. Matrix has `view` (an internal::MatrixView) and Value(row, col), the integer stored
// there.
struct PackedProducts {
  std::vector<std::uint8_t> lhs;
  std::vector<std::uint8_t> rhs;
  std::vector<std::int64_t> sums;
};
template <typename Matrix>
PackedProducts PackAndMultiply(const internal::KernelImplementation& kernel, const Matrix& lhs,
                               const Matrix& rhs_transposed, int sum_rows) {
  const internal::KernelFormat& format = kernel.format;
  const int rows = lhs.view.rows, cols = rhs_transposed.view.rows, depth = lhs.view.cols;
  const int padded_depth = internal::RoundUp(depth, format.depth_group);
  const auto packed_bytes = [&](int count, int panel, internal::PackedType type) {
    return internal::PackedBytes(
        type, static_cast<std::int64_t>(internal::RoundUp(count, panel)) * padded_depth);
  };
  PackedProducts packed{
      std::vector<std::uint8_t>(packed_bytes(rows, format.lhs_rows, format.lhs_type)),
      std::vector<std::uint8_t>(packed_bytes(cols, format.rhs_cols, format.rhs_type)),
      {}};
  std::vector<std::int32_t> row_sums(rows), col_sums(cols);
  kernel.pack_lhs(lhs.view, 0, rows, 0, depth, packed.lhs.data(), row_sums.data());
  kernel.pack_rhs(rhs_transposed.view, 0, cols, 0, depth, packed.rhs.data(), col_sums.data());
  const int lhs_shift = internal::PackedValueShift(format.lhs_type, lhs.view);
  const int rhs_shift = internal::PackedValueShift(format.rhs_type, rhs_transposed.view);
  // The packed (shifted) values, each row and column contiguous.
  std::vector<std::int64_t> lhs_rows(static_cast<std::size_t>(rows) * depth);
  std::vector<std::int64_t> rhs_cols(static_cast<std::size_t>(cols) * depth);
  for (int d = 0; d < depth; ++d) {
    for (int r = 0; r < rows; ++r) {
      lhs_rows[static_cast<std::size_t>(r) * depth + d] = lhs.Value(r, d) - lhs_shift;
    }
    for (int c = 0; c < cols; ++c) {
      rhs_cols[static_cast<std::size_t>(c) * depth + d] = rhs_transposed.Value(c, d) - rhs_shift;
    }
  }
  packed.sums = DotProducts(lhs_rows, rhs_cols, sum_rows, cols, depth);
  return packed;
}

// Packs `lhs` (lhs_rows x depth) and `rhs_transposed` (rhs_cols x depth) with the kernel's packers
// (PackAndMultiply), runs the micro-kernel on the first `used_rows` rows (store, then accumulate)
// and compares each of their entries with the 64-bit dot product of the packed (shifted) values
// taken modulo 2^32; entries beyond them must stay untouched.
template <typename Matrix>
void CheckMicroKernel(const internal::KernelImplementation& kernel, const Matrix& lhs,
                      const Matrix& rhs_transposed, int used_rows, const std::string& name) {
  const internal::KernelFormat& format = kernel.format;
  const int rows = format.lhs_rows, cols = format.rhs_cols;
  ASSERT_EQ(lhs.view.rows, rows) << name;
  ASSERT_EQ(rhs_transposed.view.rows, cols) << name;
  const int depth = lhs.view.cols;
  const int padded_depth = internal::RoundUp(depth, format.depth_group);
  const PackedProducts packed = PackAndMultiply(kernel, lhs, rhs_transposed, used_rows);
  const std::vector<std::int64_t>& sums = packed.sums;

  const int acc_stride = cols + 5;
  constexpr std::int32_t kUntouched = -12345;
  std::vector<std::int32_t> acc(static_cast<std::size_t>(rows) * acc_stride, kUntouched);
  for (bool accumulate : {false, true}) {
    if (kernel.prepare != nullptr) kernel.prepare();
    kernel.micro_kernel(packed.lhs.data(), packed.rhs.data(), padded_depth, used_rows, acc.data(),
                        acc_stride, accumulate);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < acc_stride; ++c) {
        const std::int32_t entry = acc[static_cast<std::size_t>(r) * acc_stride + c];
        if (r >= used_rows || c >= cols) {
          ASSERT_EQ(entry, kUntouched) << name << ": written outside the " << used_rows
                                       << " rows at (" << r << ", " << c << ")";
          continue;
        }
        const std::int64_t sum = sums[static_cast<std::size_t>(r) * cols + c];
        const std::uint64_t times = accumulate ? 2 : 1;
        const auto expected = static_cast<std::int32_t>(
            static_cast<std::uint32_t>(static_cast<std::uint64_t>(sum) * times));
        ASSERT_EQ(entry, expected)
            << name << " depth " << depth << " entry (" << r << ", " << c << ") of " << used_rows
            << " rows" << (accumulate ? " accumulating" : "");
      }
    }
  }
}

// A tile of 8-bit lhs values by 4-bit weights (a layout for weights of at most 4 bits) exact at
// the extremes of both ranges and on random values, for every row count and both element types
// on each side, at each depth of `depths`; above `all_cases_up_to`, only for one row and the
// whole tile and at the extremes that come closest to overflow (low x high, high x high).
inline void CheckFourBitWeightsTile(const internal::KernelImplementation& implementation,
                                    std::initializer_list<int> depths, int all_cases_up_to,
                                    std::mt19937& random, const std::string& name) {
  using internal::ElementType;
  const auto uniform = Uniform(random);
  const int rows = implementation.format.lhs_rows, cols = implementation.format.rhs_cols;
  for (ElementType lhs_type : {ElementType::kUint8, ElementType::kInt8}) {
    for (ElementType rhs_type : {ElementType::kUint8, ElementType::kInt8}) {
      for (int depth : depths) {
        const bool deep = depth > all_cases_up_to;
        const NarrowMatrix lhs_low(rows, depth, Order::kRowMajor, lhs_type, 8, Lowest);
        const NarrowMatrix lhs_high(rows, depth, Order::kColMajor, lhs_type, 8, Highest);
        const NarrowMatrix lhs_random(rows, depth, Order::kRowMajor, lhs_type, 8, uniform);
        const NarrowMatrix rhs_low(cols, depth, Order::kRowMajor, rhs_type, 4, Lowest);
        const NarrowMatrix rhs_high(cols, depth, Order::kColMajor, rhs_type, 4, Highest);
        const NarrowMatrix rhs_random(cols, depth, Order::kColMajor, rhs_type, 4, uniform);
        for (int used_rows = 1; used_rows <= rows; ++used_rows) {
          if (deep && used_rows != 1 && used_rows != rows) continue;
          CheckMicroKernel(implementation, lhs_low, rhs_high, used_rows, name + " low x high");
          CheckMicroKernel(implementation, lhs_high, rhs_high, used_rows, name + " high x high");
          if (!deep) {
            CheckMicroKernel(implementation, lhs_high, rhs_low, used_rows, name + " high x low");
            CheckMicroKernel(implementation, lhs_random, rhs_random, used_rows, name + " random");
          }
          if (testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

}  // namespace test
}  // namespace lowbit

#endif  // LOWBIT_TEST_KERNEL_CHECK_H_
