// Kernels for narrow operands (fewer than 8 bits): the int16 step bound, each micro-kernel at
// the worst-case values of every bit-depth pair, and whole GEMMs on narrow operands through
// the driver, bit for bit against a 64-bit reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack.h"
#include "lowbit/lowbit.h"
#include "test/kernel_check.h"
#include "test/test_util.h"

namespace lowbit {
namespace test {
namespace {

using internal::ElementType;
using internal::KernelFormat;
using internal::KernelImplementation;
using internal::MatrixView;

// The kernels whose narrow implementation differs from the 8-bit one. None with NEON on a CPU
// with SDOT, whose 8-bit kernel takes narrow operands: scripts/test --aarch64 runs these tests
// again on a CPU without it.
std::vector<Kernel> NarrowKernels() {
  std::vector<Kernel> kernels;
  for (Kernel kernel : AvailableKernels()) {
    if (&internal::GetKernelImplementation(kernel, 4, 4) !=
        &internal::GetKernelImplementation(kernel)) {
      kernels.push_back(kernel);
    }
  }
  return kernels;
}

std::int64_t Pow2(int bits) { return std::int64_t{1} << bits; }

// The proof in kernel.h, checked for every pair: steps int16 pair sums cannot overflow, and
// twice as many could (unless capped).
TEST(NarrowKernelTest, Int16StepsNeverOverflowAndAreTheLargestPowerOfTwo) {
  for (int lhs_bits = 1; lhs_bits <= 8; ++lhs_bits) {
    for (int rhs_bits = 1; rhs_bits <= 8; ++rhs_bits) {
      const std::int64_t pair_bound = (Pow2(lhs_bits) - 1) * Pow2(rhs_bits);
      const int steps = internal::NarrowInt16Steps(lhs_bits, rhs_bits);
      const std::string name = std::to_string(lhs_bits) + "x" + std::to_string(rhs_bits);
      if (pair_bound > 32767) {
        EXPECT_EQ(steps, 0) << name;
        continue;
      }
      ASSERT_GE(steps, 1) << name;
      EXPECT_EQ(steps & (steps - 1), 0) << name << ": a power of two";
      EXPECT_LE(steps * pair_bound, 32767) << name;
      if (steps < internal::kMaxNarrowInt16Steps) {
        EXPECT_GT(2 * steps * pair_bound, 32767) << name;
      }
    }
  }
  EXPECT_EQ(internal::NarrowInt16Steps(8, 8), 0);
  EXPECT_EQ(internal::NarrowInt16Steps(8, 7), 1);
  EXPECT_EQ(internal::NarrowInt16Steps(7, 8), 1);
}

// The same for NEON's single products of centred values: -2^(bits-1) times -2^(bits-1) is the
// largest magnitude.
TEST(NarrowKernelTest, NeonInt16StepsNeverOverflowAndAreTheLargestPowerOfTwo) {
  for (int lhs_bits = 1; lhs_bits <= 8; ++lhs_bits) {
    for (int rhs_bits = 1; rhs_bits <= 8; ++rhs_bits) {
      const std::int64_t product_bound = Pow2(lhs_bits - 1) * Pow2(rhs_bits - 1);
      const int steps = internal::NeonNarrowInt16Steps(lhs_bits, rhs_bits);
      const std::string name = std::to_string(lhs_bits) + "x" + std::to_string(rhs_bits);
      ASSERT_GE(steps, 1) << name;
      EXPECT_EQ(steps & (steps - 1), 0) << name << ": a power of two";
      EXPECT_LE(steps * product_bound, 32767) << name;
      if (steps < internal::kMaxNarrowInt16Steps) {
        EXPECT_GT(2 * steps * product_bound, 32767) << name;
      }
    }
  }
  EXPECT_EQ(internal::NeonNarrowInt16Steps(8, 8), 1);
}

// The depth one run of int16 sums covers, before the kernel widens them.
int Int16RunDepth(Kernel kernel, int lhs_bits, int rhs_bits) {
  if (kernel == Kernel::kNeon) return internal::NeonNarrowInt16Steps(lhs_bits, rhs_bits) * 8;
  return internal::NarrowInt16Steps(lhs_bits, rhs_bits) * 4;
}

// The narrow kernels' packers must write exactly what the portable packer writes, with the same
// sums, for every panel fill, depth tail, storage order, type, bit depth and source offset; for
// the tiles of several int16 steps (7 x 5 bits) and of one (7 x 8).
TEST(NarrowKernelTest, PackingMatchesThePortablePacker) {
  std::mt19937 random(3);
  const std::vector<Kernel> kernels = NarrowKernels();
  if (kernels.empty()) GTEST_SKIP() << "no narrow kernels on this CPU";
  for (Kernel kernel : kernels) {
    for (const KernelImplementation* tile : {&internal::GetKernelImplementation(kernel, 7, 5),
                                             &internal::GetKernelImplementation(kernel, 7, 8)}) {
      const KernelImplementation& implementation = *tile;
      const KernelFormat& format = implementation.format;
      // The NEON kernels' packer is tested by kernel_neon_test.
      if (format.lhs_type != internal::PackedType::kUint8) continue;
      for (bool lhs_side : {true, false}) {
        const int width = lhs_side ? format.lhs_rows : format.rhs_cols;
        const internal::PackedType type = lhs_side ? format.lhs_type : format.rhs_type;
        const internal::PackFunction pack =
            lhs_side ? implementation.pack_lhs : implementation.pack_rhs;
        for (Order order : {Order::kRowMajor, Order::kColMajor}) {
          for (ElementType source_type : {ElementType::kUint8, ElementType::kInt8}) {
            for (int bits : {1, 4, 7, 8}) {
              for (int count : {1, width - 1, width, width + 1, 2 * width + 3, 37}) {
                if (count < 1) continue;
                for (int depth : {1, 3, 4, 5, 15, 16, 17, 33, 64, 67}) {
                  const int start = 2, depth_start = 5;
                  const auto uniform = Uniform(random);
                  const NarrowMatrix source(start + count + 1, depth_start + depth + 1, order,
                                            source_type, bits, uniform);
                  const std::size_t size = static_cast<std::size_t>((count + width - 1) / width) *
                                           width * internal::RoundUp(depth, format.depth_group);
                  std::vector<std::uint8_t> expected(size + 1, 77), packed(size + 1, 77);
                  std::vector<std::int32_t> expected_sums(count, 1000), sums(count, 1000);
                  internal::PackBytesPortable(source.view, type, format, width, start, count,
                                              depth_start, depth, expected.data(),
                                              expected_sums.data());
                  pack(source.view, start, count, depth_start, depth, packed.data(), sums.data());
                  const std::string name =
                      std::string(KernelName(kernel)) + " " + std::to_string(format.lhs_rows) +
                      "-row tile" + (lhs_side ? " lhs" : " rhs") + " count " +
                      std::to_string(count) + " depth " + std::to_string(depth) + " bits " +
                      std::to_string(bits) +
                      (order == Order::kRowMajor ? " row-major" : " col-major") +
                      (source_type == ElementType::kInt8 ? " int8" : " uint8");
                  ASSERT_EQ(packed, expected) << name;
                  ASSERT_EQ(sums, expected_sums) << name;
                }
              }
            }
          }
        }
      }
    }
  }
}

// Worst cases: every value of each operand at one end of its range, for all four pairs of
// ends (the int16 sums of either kernel design come closest to overflow at one of them), at
// depths around one run of int16 sums and beyond; then random values.
TEST(NarrowKernelTest, MicroKernelsAreExactAtTheWorstCaseOfEveryBitDepthPair) {
  std::mt19937 random(11);
  const auto uniform = Uniform(random);
  const std::vector<Kernel> kernels = NarrowKernels();
  if (kernels.empty()) GTEST_SKIP() << "no narrow kernels on this CPU";
  for (Kernel kernel : kernels) {
    for (int lhs_bits = 1; lhs_bits <= 8; ++lhs_bits) {
      for (int rhs_bits = 1; rhs_bits <= 8; ++rhs_bits) {
        const KernelImplementation& implementation =
            internal::GetKernelImplementation(kernel, lhs_bits, rhs_bits);
        if (&implementation == &internal::GetKernelImplementation(kernel)) continue;
        const KernelFormat& format = implementation.format;
        const int run = Int16RunDepth(kernel, lhs_bits, rhs_bits);
        const std::string name = std::string(KernelName(kernel)) + " " + std::to_string(lhs_bits) +
                                 "x" + std::to_string(rhs_bits);
        for (ElementType lhs_type : {ElementType::kUint8, ElementType::kInt8}) {
          for (ElementType rhs_type : {ElementType::kUint8, ElementType::kInt8}) {
            for (int depth : {1, 5, run - 1, run, run + 1, 2 * run + 3}) {
              if (depth < 1) continue;
              const NarrowMatrix lhs_low(format.lhs_rows, depth, Order::kRowMajor, lhs_type,
                                         lhs_bits, Lowest);
              const NarrowMatrix lhs_high(format.lhs_rows, depth, Order::kRowMajor, lhs_type,
                                          lhs_bits, Highest);
              const NarrowMatrix rhs_low(format.rhs_cols, depth, Order::kRowMajor, rhs_type,
                                         rhs_bits, Lowest);
              const NarrowMatrix rhs_high(format.rhs_cols, depth, Order::kColMajor, rhs_type,
                                          rhs_bits, Highest);
              const NarrowMatrix lhs_random(format.lhs_rows, depth, Order::kColMajor, lhs_type,
                                            lhs_bits, uniform);
              const NarrowMatrix rhs_random(format.rhs_cols, depth, Order::kRowMajor, rhs_type,
                                            rhs_bits, uniform);
              for (int rows = 1; rows <= format.lhs_rows; ++rows) {
                CheckMicroKernel(implementation, lhs_low, rhs_low, rows, name + " low x low");
                CheckMicroKernel(implementation, lhs_low, rhs_high, rows, name + " low x high");
                CheckMicroKernel(implementation, lhs_high, rhs_low, rows, name + " high x low");
                CheckMicroKernel(implementation, lhs_high, rhs_high, rows, name + " high x high");
                CheckMicroKernel(implementation, lhs_random, rhs_random, rows, name + " random");
                if (HasFatalFailure()) return;
              }
            }
          }
        }
      }
    }
  }
}

// Whole GEMMs on narrow operands through the driver: every shape of a sweep, both storage
// orders, offsets, the thread counts and tiny cache blocks of PathSettings.
class NarrowGemmTest : public testing::TestWithParam<PathSetting> {
 protected:
  void SetUp() override { Configure(&context_, GetParam()); }
  Context context_;
};

struct Int32Result {
  int cols;
  std::vector<std::int32_t> values;
  static void Consume(const void* closure, const internal::AccumulatorBlock& block) {
    auto* self = static_cast<Int32Result*>(const_cast<void*>(closure));
    for (int r = 0; r < block.rows; ++r) {
      for (int c = 0; c < block.cols; ++c) {
        self->values[static_cast<std::size_t>(block.row_start + r) * self->cols + block.col_start +
                     c] = block.data[r * block.row_stride + c * block.col_stride];
      }
    }
  }
};

TEST_P(NarrowGemmTest, MatchesTheReferenceForEveryBitDepthPair) {
  std::mt19937 random(5);
  const std::vector<Shape> shapes = {
      {1, 1, 1}, {1, 300, 37}, {7, 13, 29}, {23, 97, 5}, {64, 130, 67}};
  // And for 1 and 2 bits, shapes past the thresholds at which the bit-serial kernels take over
  // (dispatch.cc's BitSerialPays: 32, 256 and 1024 for min(rows, cols)).
  std::vector<Shape> bit_serial_shapes = shapes;
  bit_serial_shapes.insert(bit_serial_shapes.end(),
                           {{40, 33, 70}, {300, 260, 17}, {1030, 1025, 5}});
  int index = 0;
  for (int lhs_bits = 1; lhs_bits <= 8; ++lhs_bits) {
    for (int rhs_bits = 1; rhs_bits <= 8; ++rhs_bits) {
      for (const Shape& shape : lhs_bits <= 2 && rhs_bits <= 2 ? bit_serial_shapes : shapes) {
        ++index;
        const ElementType lhs_type = index % 2 ? ElementType::kUint8 : ElementType::kInt8;
        const ElementType rhs_type = index % 3 ? ElementType::kInt8 : ElementType::kUint8;
        const auto uniform = Uniform(random);
        const NarrowMatrix lhs(shape.rows, shape.depth,
                               index % 4 < 2 ? Order::kRowMajor : Order::kColMajor, lhs_type,
                               lhs_bits, uniform);
        const NarrowMatrix rhs(shape.depth, shape.cols,
                               index % 5 < 2 ? Order::kRowMajor : Order::kColMajor, rhs_type,
                               rhs_bits, uniform);
        const int lhs_offset = index % 7 - 3, rhs_offset = 17 - index % 11;
        Int32Result result{shape.cols, std::vector<std::int32_t>(
                                           static_cast<std::size_t>(shape.rows) * shape.cols)};
        const internal::ResultTarget target{
            MatrixView{result.values.data(), ElementType::kInt32, shape.rows, shape.cols,
                       Order::kRowMajor, shape.cols},
            nullptr, &Int32Result::Consume, &result};
        internal::RunGemm(context_, lhs.view, rhs.view, nullptr, Offsets(lhs_offset),
                          Offsets(rhs_offset), target);
        for (int r = 0; r < shape.rows; ++r) {
          for (int c = 0; c < shape.cols; ++c) {
            std::int64_t sum = 0;
            for (int d = 0; d < shape.depth; ++d) {
              sum += (lhs.Value(r, d) + lhs_offset) * (rhs.Value(d, c) + rhs_offset);
            }
            ASSERT_EQ(result.values[static_cast<std::size_t>(r) * shape.cols + c], sum)
                << lhs_bits << "x" << rhs_bits << " shape " << shape.rows << "x" << shape.cols
                << "x" << shape.depth << " (" << r << ", " << c << ")";
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, NarrowGemmTest, testing::ValuesIn(PathSettings({1, 2})),
                         PathSettingName);

}  // namespace
}  // namespace test
}  // namespace lowbit
