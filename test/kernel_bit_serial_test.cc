// The bit-serial kernels for 1- and 2-bit operands: their bit-plane packers against the portable
// one, and each micro-kernel at the extremes of every bit-depth pair and on random values, bit
// for bit against a 64-bit reference. Whole GEMMs through the driver are kernel_narrow_test's.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "lowbit/internal/driver/bit_depth.h"
#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack.h"
#include "lowbit/internal/pack/requantize.h"
#include "lowbit/lowbit.h"
#include "test/kernel_check.h"

namespace lowbit {
namespace test {
namespace {

using internal::ElementType;
using internal::KernelFormat;
using internal::KernelImplementation;
using internal::MatrixView;

struct BitSerial {
  std::string name;
  const KernelImplementation* implementation;
};

// Every bit-serial implementation this CPU runs, for each pair of bit depths.
std::vector<BitSerial> BitSerialImplementations() {
  std::vector<BitSerial> found;
  for (Kernel kernel : AvailableKernels()) {
    for (int lhs_bits : {1, 2}) {
      for (int rhs_bits : {1, 2}) {
        const KernelImplementation* implementation =
            internal::GetBitSerialKernelImplementation(kernel, lhs_bits, rhs_bits);
        if (implementation == nullptr) continue;
        found.push_back({std::string(KernelName(kernel)) + " L" + std::to_string(lhs_bits) + "R" +
                             std::to_string(rhs_bits),
                         implementation});
      }
    }
  }
  return found;
}

// The driver runs the bit-serial kernel for the bit depths and uses (products per packed value)
// where it pays (dispatch.cc's BitSerialPays) and the kernel's other one elsewhere: 1 x 1 bits on
// every ISA for prepacked weights and large GEMMs, but with AVX-512 VNNI and AMX not for a short
// lhs, whose rhs the 8-bit kernels read unpacked; 1 x 2 bits with AVX-512 VNNI only from 256 uses;
// 2 x 2 bits never by rule, only where the driver times them (with AVX-512 VNNI).
TEST(BitSerialKernelTest, GemmsOfOneBitOperandsRunThem) {
  for (Kernel kernel : AvailableKernels()) {
    const KernelImplementation* one_bit = internal::GetBitSerialKernelImplementation(kernel, 1, 1);
    if (one_bit == nullptr) continue;
    EXPECT_EQ(&internal::GetKernelImplementation(kernel, 1, 1, 1024), one_bit)
        << KernelName(kernel);
    EXPECT_EQ(&internal::GetPrepackedRhsKernelImplementation(kernel, 1, 1), one_bit)
        << KernelName(kernel);
    EXPECT_EQ(internal::GetBitSerialKernelImplementation(kernel, 3, 1), nullptr);
    EXPECT_NE(&internal::GetKernelImplementation(kernel, 2, 2),
              internal::GetBitSerialKernelImplementation(kernel, 2, 2))
        << KernelName(kernel) << ": 2 x 2 bits are faster without";
    const bool avx512 = kernel == Kernel::kAvx512Vnni || kernel == Kernel::kAmx;
    EXPECT_EQ(&internal::GetKernelImplementation(kernel, 1, 1, 8) == one_bit, !avx512)
        << KernelName(kernel) << ": 1 x 1 bits, 8 uses";
    const KernelImplementation* one_and_two_bits =
        internal::GetBitSerialKernelImplementation(kernel, 1, 2);
    EXPECT_EQ(&internal::GetKernelImplementation(kernel, 1, 2, 1024) == one_and_two_bits,
              kernel == Kernel::kAvx512Vnni)
        << KernelName(kernel) << ": 1 x 2 bits, 1024 uses";
    EXPECT_NE(&internal::GetKernelImplementation(kernel, 2, 1, 64),
              internal::GetBitSerialKernelImplementation(kernel, 2, 1))
        << KernelName(kernel) << ": 2 x 1 bits, 64 uses";
    // Where the two are a close call that another host or other load may turn around, the
    // driver times the other against the rule's pick, either way round (dispatch.cc's
    // BitSerialIsTimed); never for prepacked weights, packed for one of them.
    const auto timed = [&](int lhs_bits, int rhs_bits, int uses) {
      return internal::GetTimedAlternativeImplementation(kernel, lhs_bits, rhs_bits, uses);
    };
    // With AVX-512, the tile that runs 1 x 1 bits where bit-serial does not pay (8 uses).
    const KernelImplementation* one_bit_tile = &internal::GetKernelImplementation(kernel, 1, 1, 8);
    switch (kernel) {
      case Kernel::kAvx512Vnni:
        EXPECT_EQ(timed(1, 1, 16), one_bit);
        EXPECT_EQ(timed(1, 1, 64), one_bit_tile);
        EXPECT_EQ(timed(1, 1, 256), nullptr);
        EXPECT_EQ(timed(1, 2, 64), one_and_two_bits);
        EXPECT_EQ(timed(1, 2, 1024), &internal::GetKernelImplementation(kernel, 1, 2, 8));
        EXPECT_EQ(timed(1, 2, 63), nullptr);
        EXPECT_EQ(timed(2, 2, 64), internal::GetBitSerialKernelImplementation(kernel, 2, 2));
        EXPECT_EQ(timed(2, 2, 1024), internal::GetBitSerialKernelImplementation(kernel, 2, 2));
        EXPECT_EQ(timed(2, 2, 63), nullptr);
        break;
      case Kernel::kAmx:
        EXPECT_EQ(timed(1, 1, 1024), one_bit_tile);
        EXPECT_EQ(timed(1, 1, 256), one_bit);
        EXPECT_EQ(timed(1, 1, 255), nullptr);
        EXPECT_EQ(timed(1, 2, 1024), nullptr);
        break;
      case Kernel::kAvx2:
        EXPECT_EQ(timed(1, 2, 256), one_and_two_bits);
        EXPECT_EQ(timed(2, 1, 1024), internal::GetBitSerialKernelImplementation(kernel, 2, 1));
        EXPECT_EQ(timed(1, 2, 255), nullptr);
        EXPECT_EQ(timed(1, 1, 1024), nullptr);
        break;
      default:
        EXPECT_EQ(timed(1, 1, 1024), nullptr) << KernelName(kernel);
        EXPECT_EQ(timed(1, 2, 1024), nullptr) << KernelName(kernel);
    }
    EXPECT_EQ(timed(1, 1, internal::kUnboundedUses), nullptr);
    EXPECT_EQ(timed(1, 2, internal::kUnboundedUses), nullptr);
    EXPECT_EQ(timed(2, 2, internal::kUnboundedUses), nullptr);
    if (kernel != Kernel::kAvx512Vnni) {
      EXPECT_EQ(timed(2, 2, 1024), nullptr) << KernelName(kernel);
    }
  }
}

// The ISA packers write exactly what the portable packer writes, with the same sums, for every
// panel fill (70 rows: past a block of 32), depth tail, storage order, type and source offset.
TEST(BitSerialKernelTest, PackersMatchThePortablePacker) {
  std::mt19937 random(3);
  const auto uniform = Uniform(random);
  for (const BitSerial& bit_serial : BitSerialImplementations()) {
    const KernelFormat& format = bit_serial.implementation->format;
    for (bool lhs_side : {true, false}) {
      const int width = lhs_side ? format.lhs_rows : format.rhs_cols;
      const internal::PackedType type = lhs_side ? format.lhs_type : format.rhs_type;
      const internal::PackFunction pack =
          lhs_side ? bit_serial.implementation->pack_lhs : bit_serial.implementation->pack_rhs;
      for (Order order : {Order::kRowMajor, Order::kColMajor}) {
        for (ElementType source_type : {ElementType::kUint8, ElementType::kInt8}) {
          for (int bits = 1; bits <= internal::BitPlanes(type); ++bits) {
            for (int count : {1, width - 1, width, width + 1, 2 * width + 3, 70}) {
              if (count < 1) continue;
              for (int depth : {1, 5, 31, 32, 33, 64, 100, 259}) {
                for (int depth_start : {0, 5}) {
                  const int start = 2;
                  const NarrowMatrix source(start + count + 1, depth_start + depth + 1, order,
                                            source_type, bits, uniform);
                  const std::size_t size = internal::PackedBytes(
                      type, static_cast<std::int64_t>((count + width - 1) / width) * width *
                                internal::RoundUp(depth, format.depth_group));
                  std::vector<std::uint8_t> expected(size + 1, 77), packed(size + 1, 77);
                  std::vector<std::int32_t> expected_sums(count, 1000), sums(count, 1000);
                  internal::PackBitPlanesPortable(source.view, type, width, start, count,
                                                  depth_start, depth, expected.data(),
                                                  expected_sums.data());
                  pack(source.view, start, count, depth_start, depth, packed.data(), sums.data());
                  const std::string name =
                      bit_serial.name + (lhs_side ? " lhs" : " rhs") + " count " +
                      std::to_string(count) + " depth " + std::to_string(depth) + " start " +
                      std::to_string(depth_start) + " bits " + std::to_string(bits) +
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

// The requantizing packers (lines along the depth, requantized as they are read) write what
// requantizing the lines first and packing the result with the portable packer writes, with the
// same sums: every rounding, both operands, uint8 and int8 sources, depths across the rounding
// sequence's blocks of 255 values and around a step of 64, lines past a block of 16.
TEST(BitSerialKernelTest, RequantizingPackersMatchRequantizingThenPacking) {
  std::mt19937 random(7);
  const auto uniform = Uniform(random);
  int checked = 0;
  for (const BitSerial& bit_serial : BitSerialImplementations()) {
    const KernelImplementation& implementation = *bit_serial.implementation;
    if (implementation.pack_lhs_requantizing == nullptr) continue;
    const KernelFormat& format = implementation.format;
    for (bool lhs_side : {true, false}) {
      const int width = lhs_side ? format.lhs_rows : format.rhs_cols;
      const internal::PackedType type = lhs_side ? format.lhs_type : format.rhs_type;
      const internal::RequantizingPackFunction pack =
          lhs_side ? implementation.pack_lhs_requantizing : implementation.pack_rhs_requantizing;
      const internal::Operand operand =
          lhs_side ? internal::Operand::kLhs : internal::Operand::kRhs;
      for (ElementType source_type : {ElementType::kUint8, ElementType::kInt8}) {
        for (BitDepthRounding rounding : {BitDepthRounding::kNearest, BitDepthRounding::kXorshift,
                                          BitDepthRounding::kAddMod97}) {
          for (int bits = 1; bits <= internal::BitPlanes(type); ++bits) {
            for (int count : {1, width + 1, 37}) {
              for (int depth : {1, 63, 64, 65, 254, 256, 300, 600}) {
                const int start = 3;
                const NarrowMatrix source(start + count + 2, depth, Order::kRowMajor, source_type,
                                          8, uniform);
                MatrixView lines = source.view;
                lines.data = source.bytes.data() + start * depth;
                lines.rows = count;
                std::vector<std::int32_t> work(internal::RequantizeWorkBytes(source.view) / 4 + 1);
                std::vector<std::uint8_t> requantized(static_cast<std::size_t>(count) * depth);
                std::vector<std::int32_t> requantized_sums(count);
                internal::RequantizeLines(implementation.kernel, lines, bits, rounding, 9, operand,
                                          requantized.data(), requantized_sums.data(), work.data(),
                                          start);
                MatrixView requantized_view = internal::RequantizedView(lines, requantized.data());
                requantized_view.bits = bits;
                const std::size_t size = internal::PackedBytes(
                    type, static_cast<std::int64_t>((count + width - 1) / width) * width *
                              internal::RoundUp(depth, format.depth_group));
                std::vector<std::uint8_t> expected(size + 1, 77), packed(size + 1, 77);
                std::vector<std::int32_t> expected_sums(count, 1000), sums(count, 1000);
                internal::PackBitPlanesPortable(requantized_view, type, width, 0, count, 0, depth,
                                                expected.data(), expected_sums.data());
                // The GEMM's view of the operand has the requantized values' type and bits
                // (RunBitDepthGemm); the requantization reads the source's own.
                MatrixView gemm_view = source.view;
                gemm_view.type = ElementType::kUint8;
                gemm_view.bits = bits;
                pack(gemm_view,
                     internal::RequantizingPack(implementation.kernel, source.view, bits, rounding,
                                                9, operand, start, count, work.data()),
                     start, count, depth, packed.data(), sums.data());
                const std::string name = bit_serial.name + (lhs_side ? " lhs" : " rhs") +
                                         " count " + std::to_string(count) + " depth " +
                                         std::to_string(depth) + " bits " + std::to_string(bits) +
                                         " rounding " + std::to_string(static_cast<int>(rounding)) +
                                         (source_type == ElementType::kInt8 ? " int8" : " uint8");
                ASSERT_EQ(packed, expected) << name;
                ASSERT_EQ(sums, expected_sums) << name;
                ++checked;
              }
            }
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no bit-serial kernel on this CPU packs as it requantizes";
}

// The portable packer itself, on a case worked by hand: 2-bit int8 values -2..1 are packed as
// 0..3, plane 0 first, one bit per depth value, least significant first.
TEST(BitSerialKernelTest, PortablePackerLayout) {
  const std::int8_t values[2][3] = {{-2, 1, 0}, {-1, -2, 1}};
  MatrixView view{values, ElementType::kInt8, 2, 3, Order::kRowMajor, 3};
  view.bits = 2;
  std::uint32_t packed[2 * 2] = {};
  std::int32_t sums[2] = {};
  internal::PackBitPlanesPortable(view, internal::PackedType::kTwoBitPlanes, 2, 0, 2, 0, 3, packed,
                                  sums);
  // Row 0 packs as 0, 3, 2; row 1 as 1, 0, 3.
  EXPECT_EQ(packed[0], 0b010u);  // plane 0, row 0
  EXPECT_EQ(packed[1], 0b101u);  // plane 0, row 1
  EXPECT_EQ(packed[2], 0b110u);  // plane 1, row 0
  EXPECT_EQ(packed[3], 0b100u);  // plane 1, row 1
  EXPECT_EQ(sums[0], 5);
  EXPECT_EQ(sums[1], 4);
}

// Every bit of every plane set (the largest products, and each weight class at its largest),
// none set, mixed ends, and random values; depths around a word and long ones.
TEST(BitSerialKernelTest, MicroKernelsAreExactForEveryBitDepthPair) {
  std::mt19937 random(11);
  const auto uniform = Uniform(random);
  for (const BitSerial& bit_serial : BitSerialImplementations()) {
    const KernelImplementation& implementation = *bit_serial.implementation;
    const KernelFormat& format = implementation.format;
    const int lhs_bits = internal::BitPlanes(format.lhs_type);
    const int rhs_bits = internal::BitPlanes(format.rhs_type);
    for (ElementType lhs_type : {ElementType::kUint8, ElementType::kInt8}) {
      for (ElementType rhs_type : {ElementType::kUint8, ElementType::kInt8}) {
        for (int depth : {1, 31, 32, 33, 100, 2049}) {
          const NarrowMatrix lhs_low(format.lhs_rows, depth, Order::kRowMajor, lhs_type, lhs_bits,
                                     Lowest);
          const NarrowMatrix lhs_high(format.lhs_rows, depth, Order::kColMajor, lhs_type, lhs_bits,
                                      Highest);
          const NarrowMatrix rhs_low(format.rhs_cols, depth, Order::kColMajor, rhs_type, rhs_bits,
                                     Lowest);
          const NarrowMatrix rhs_high(format.rhs_cols, depth, Order::kRowMajor, rhs_type, rhs_bits,
                                      Highest);
          const NarrowMatrix lhs_random(format.lhs_rows, depth, Order::kColMajor, lhs_type,
                                        lhs_bits, uniform);
          const NarrowMatrix rhs_random(format.rhs_cols, depth, Order::kRowMajor, rhs_type,
                                        rhs_bits, uniform);
          for (int rows = 1; rows <= format.lhs_rows; ++rows) {
            const std::string name = bit_serial.name + " depth " + std::to_string(depth);
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

}  // namespace
}  // namespace test
}  // namespace lowbit
