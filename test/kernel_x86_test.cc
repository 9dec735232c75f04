// The x86 packing routines and micro-kernels (SSE4.1, AVX2, AVX-512 VNNI; for ordinary and
// prepacked rhs operands), tested directly: packed layout and row sums against the portable packer,
// tile sums (a tile at a time, and down a column of panels) against a 64-bit dot product at
// extreme values, at depths that are not a multiple of the depth group, around the nibble
// kernel's int16 run and where int32 sums wrap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack.h"
#include "lowbit/internal/pack/pack_x86.h"
#include "lowbit/lowbit.h"
#include "test/kernel_check.h"

namespace lowbit {
namespace test {
namespace {

using internal::ElementType;
using internal::KernelFormat;
using internal::KernelImplementation;
using internal::MatrixView;
using internal::PackFunction;

std::vector<Kernel> X86Kernels() {
  std::vector<Kernel> kernels;
  for (Kernel kernel : AvailableKernels()) {
    if (kernel != Kernel::kReference) kernels.push_back(kernel);
  }
  return kernels;
}

// A rows x cols uint8 or int8 matrix in either storage order with a padded stride; `fill`
// gives the raw byte of entry (row, col).
struct SourceMatrix {
  std::vector<std::uint8_t> bytes;
  MatrixView view;

  template <typename Fill>
  SourceMatrix(int rows, int cols, Order order, ElementType type, int padding, Fill fill) {
    const int stride = (order == Order::kRowMajor ? cols : rows) + padding;
    bytes.assign(static_cast<std::size_t>(stride) * (order == Order::kRowMajor ? rows : cols),
                 0x5a);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        const std::size_t index = order == Order::kRowMajor
                                      ? static_cast<std::size_t>(r) * stride + c
                                      : static_cast<std::size_t>(c) * stride + r;
        bytes[index] = fill(r, c);
      }
    }
    view = MatrixView{bytes.data(), type, rows, cols, order, stride};
  }

  std::int64_t Value(int row, int col) const {
    const std::uint8_t byte =
        bytes[view.order == Order::kRowMajor ? static_cast<std::size_t>(row) * view.stride + col
                                             : static_cast<std::size_t>(col) * view.stride + row];
    return view.type == ElementType::kInt8 ? static_cast<std::int8_t>(byte) : byte;
  }
};

// Every implementation of the kernel: for an ordinary rhs, and for prepacked ones (an lhs of
// several rows, and of one), each once.
std::vector<const KernelImplementation*> Implementations(Kernel kernel) {
  std::vector<const KernelImplementation*> implementations;
  for (const KernelImplementation* implementation :
       {&internal::GetKernelImplementation(kernel),
        &internal::GetPrepackedRhsKernelImplementation(kernel, 8, 8, 8),
        &internal::GetPrepackedRhsKernelImplementation(kernel, 8, 8, 1)}) {
    bool seen = false;
    for (const KernelImplementation* other : implementations) seen |= other == implementation;
    if (!seen) implementations.push_back(implementation);
  }
  return implementations;
}

std::size_t PackedBytes(int count, int width, int depth, const KernelFormat& format,
                        internal::PackedType type) {
  return internal::PackedBytes(type, static_cast<std::int64_t>((count + width - 1) / width) *
                                         width * internal::RoundUp(depth, format.depth_group));
}

// The portable packer's output for `type`, in `format`'s lhs chunks where it has them; nibbles
// are its uint8 byte groups, each group split into its values' low 4 bits and then their high 4
// bits.
void PackPortably(const MatrixView& source, const KernelFormat& format, internal::PackedType type,
                  int width, int start, int count, int depth_start, int depth, std::uint8_t* packed,
                  std::int32_t* sums) {
  if (format.lhs_chunk != 0) {
    internal::PackRowChunksPortable(source, type, format, width, start, count, depth_start, depth,
                                    packed, sums);
    return;
  }
  switch (type) {
    case internal::PackedType::kInt16:
      internal::PackWithFormat<std::int16_t>(source, format, width, start, count, depth_start,
                                             depth, packed, sums);
      return;
    case internal::PackedType::kInt8:
    case internal::PackedType::kUint8:
      internal::PackBytesPortable(source, type, format, width, start, count, depth_start, depth,
                                  packed, sums);
      return;
    case internal::PackedType::kNibbles: {
      const std::size_t bytes = PackedBytes(count, width, depth, format, type) / 2;
      std::vector<std::uint8_t> groups(bytes);
      internal::PackBytesPortable(source, internal::PackedType::kUint8, format, width, start, count,
                                  depth_start, depth, groups.data(), sums);
      for (std::size_t i = 0; i < bytes; ++i) {
        const std::size_t group = i / 4, j = i % 4;
        packed[8 * group + j] = groups[i] & 0x0f;
        packed[8 * group + 4 + j] = groups[i] >> 4;
      }
      return;
    }
    case internal::PackedType::kUint4Pairs:
    case internal::PackedType::kInt4Pairs: {
      // Byte groups, each step's two halves (the tile's two rhs vectors) folded into nibbles,
      // int8 values plus 8.
      const bool is_signed = type == internal::PackedType::kInt4Pairs;
      const std::size_t bytes = 2 * PackedBytes(count, width, depth, format, type);
      std::vector<std::uint8_t> groups(bytes);
      internal::PackBytesPortable(
          source, is_signed ? internal::PackedType::kInt8 : internal::PackedType::kUint8, format,
          width, start, count, depth_start, depth, groups.data(), sums);
      const int bias = is_signed ? 8 : 0;
      const std::size_t half = 2 * static_cast<std::size_t>(width);
      for (std::size_t step = 0; step < bytes; step += 2 * half) {
        for (std::size_t j = 0; j < half; ++j) {
          const int low = static_cast<std::int8_t>(groups[step + j]) + bias;
          const int high = static_cast<std::int8_t>(groups[step + half + j]) + bias;
          ASSERT_TRUE(low >= 0 && low < 16 && high >= 0 && high < 16) << "not a 4-bit value";
          *packed++ = static_cast<std::uint8_t>(low | high << 4);
        }
      }
      return;
    }
    case internal::PackedType::kOneBitPlane:
    case internal::PackedType::kTwoBitPlanes:
      internal::PackBitPlanesPortable(source, type, width, start, count, depth_start, depth, packed,
                                      sums);
      return;
  }
}

// A prepacked rhs is packed once, for whatever lhs comes: every implementation that multiplies
// it must read the layout it was packed in. AVX2 runs the nibble tile for one or two lhs rows.
TEST(KernelX86Test, PrepackedImplementationsShareTheRhsLayout) {
  for (Kernel kernel : X86Kernels()) {
    const KernelFormat& packed = internal::GetPrepackedRhsKernelImplementation(kernel).format;
    for (int lhs_rows = 1; lhs_rows <= 9; ++lhs_rows) {
      const KernelFormat& format =
          internal::GetPrepackedRhsKernelImplementation(kernel, 8, 8, lhs_rows).format;
      EXPECT_TRUE(internal::SameRhsLayout(packed, format)) << KernelName(kernel) << " " << lhs_rows;
      const bool nibbles = kernel == Kernel::kAvx2 && lhs_rows <= 2;
      EXPECT_EQ(format.lhs_type == internal::PackedType::kNibbles, nibbles)
          << KernelName(kernel) << " " << lhs_rows;
    }
  }
}

// `pack` (a PackFunction for `width`-row panels of `packed_type` values in `format`'s depth
// groups) must write exactly what the portable packer writes, and add the same row sums, for
// every panel fill, depth tail, storage order, type and source offset.
template <typename Pack>
void ExpectPackerMatchesPortablePacker(const std::string& name, const KernelFormat& format,
                                       int width, internal::PackedType packed_type, Pack pack) {
  std::mt19937 random(7);
  for (Order order : {Order::kRowMajor, Order::kColMajor}) {
    for (ElementType type : {ElementType::kUint8, ElementType::kInt8}) {
      // 70: past 32 rows, where packers that work 32 rows at a time start a block inside a panel.
      for (int count : {1, width - 1, width, width + 1, 2 * width + 3, 70}) {
        for (int depth : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 64, 67, 100, 192, 259}) {
          for (int depth_start : {0, 5}) {
            const int start = 2;
            const SourceMatrix source(start + count + 1, depth_start + depth + 1, order, type, 3,
                                      [&](int, int) { return random() & 0xff; });
            const std::size_t size = PackedBytes(count, width, depth, format, packed_type);
            std::vector<std::uint8_t> expected(size + 1, 77), packed(size + 1, 77);
            std::vector<std::int32_t> expected_sums(count, 1000), sums(count, 1000);
            PackPortably(source.view, format, packed_type, width, start, count, depth_start, depth,
                         expected.data(), expected_sums.data());
            pack(source.view, start, count, depth_start, depth, packed.data(), sums.data());
            ASSERT_EQ(packed, expected)
                << name << " count " << count << " depth " << depth << " start " << depth_start
                << (order == Order::kRowMajor ? " row-major" : " col-major")
                << (type == ElementType::kInt8 ? " int8" : " uint8");
            ASSERT_EQ(sums, expected_sums) << name << " count " << count << " depth " << depth;
          }
        }
      }
    }
  }
}

// Prepacked weights of at most 4 bits, where a kernel stores them two to a byte: its packer
// against the portable one, and its micro-kernel exact at the extremes of 8-bit lhs values and
// 4-bit weights and on random ones.
TEST(KernelX86Test, FourBitWeightsTwoToAByte) {
  std::mt19937 random(5);
  const auto uniform = Uniform(random);
  for (Kernel kernel : X86Kernels()) {
    const KernelImplementation& implementation =
        internal::GetPrepackedRhsKernelImplementation(kernel, 8, 4, 1);
    const KernelFormat& format = implementation.format;
    if (format.rhs_type != internal::PackedType::kUint4Pairs &&
        format.rhs_type != internal::PackedType::kInt4Pairs) {
      continue;
    }
    const std::string name = KernelName(kernel);
    for (int lhs_rows : {2, 8}) {
      EXPECT_EQ(&internal::GetPrepackedRhsKernelImplementation(kernel, 8, 4, lhs_rows),
                &implementation)
          << name << ": one layout for every lhs";
    }
    for (Order order : {Order::kRowMajor, Order::kColMajor}) {
      for (ElementType type : {ElementType::kUint8, ElementType::kInt8}) {
        for (int count : {1, 31, 32, 33, 70}) {
          for (int depth : {1, 3, 4, 5, 64, 67, 259}) {
            const NarrowMatrix source(count + 3, depth + 6, order, type, 4, uniform);
            const std::size_t size =
                PackedBytes(count, format.rhs_cols, depth, format, format.rhs_type);
            std::vector<std::uint8_t> expected(size + 1, 77), packed(size + 1, 77);
            std::vector<std::int32_t> expected_sums(count, 1000), sums(count, 1000);
            PackPortably(source.view, format, format.rhs_type, format.rhs_cols, 2, count, 5, depth,
                         expected.data(), expected_sums.data());
            implementation.pack_rhs(source.view, 2, count, 5, depth, packed.data(), sums.data());
            ASSERT_EQ(packed, expected) << name << " count " << count << " depth " << depth;
            ASSERT_EQ(sums, expected_sums) << name << " count " << count << " depth " << depth;
          }
        }
      }
    }
    // 70001: 16 times a high nibble's sum at the extremes exceeds int32 (what the tile
    // accumulates for them), so the depth goes to the tile in parts; fewer cases there.
    CheckFourBitWeightsTile(implementation, {1, 3, 4, 5, 64, 1001, 70001}, 1001, random, name);
    if (HasFatalFailure()) return;
  }
}

TEST(KernelX86Test, PackingMatchesPortablePacker) {
  for (Kernel kernel : X86Kernels()) {
    for (const KernelImplementation* implementation : Implementations(kernel)) {
      for (bool lhs_side : {true, false}) {
        KernelFormat format = implementation->format;
        // Chunks are an lhs layout.
        if (!lhs_side) format.lhs_chunk = 0;
        ExpectPackerMatchesPortablePacker(
            std::string(KernelName(kernel)) + (lhs_side ? " lhs" : " rhs"), format,
            lhs_side ? format.lhs_rows : format.rhs_cols,
            lhs_side ? format.lhs_type : format.rhs_type,
            lhs_side ? implementation->pack_lhs : implementation->pack_rhs);
      }
    }
  }
}

// The byte-group packers for both packed types and the widths the kernels use, whichever type
// their kernels take today: each hands part of its work to the next narrower one.
TEST(KernelX86Test, ByteGroupPackersMatchPortablePacker) {
  const std::vector<Kernel> available = X86Kernels();
  const auto has = [&](Kernel kernel) {
    return std::find(available.begin(), available.end(), kernel) != available.end();
  };
  std::vector<std::pair<std::string, internal::PackByteGroupsFunction>> packers;
  if (has(Kernel::kSse41)) packers.push_back({"sse41", &internal::PackByteGroupsSse41});
  if (has(Kernel::kAvx2)) packers.push_back({"avx2", &internal::PackByteGroupsAvx2});
  if (has(Kernel::kAvx512Vnni)) packers.push_back({"avx512", &internal::PackByteGroupsAvx512});
  for (const auto& packer : packers) {
    for (internal::PackedType packed_type :
         {internal::PackedType::kUint8, internal::PackedType::kInt8}) {
      for (int width : {3, 6, 16, 32}) {
        const KernelFormat format{width, width, 4, packed_type, packed_type};
        const auto pack = [&](const MatrixView& source, int start, int count, int depth_start,
                              int depth, void* packed, std::int32_t* sums) {
          packer.second(source, packed_type, width, start, count, depth_start, depth, packed, sums);
        };
        ExpectPackerMatchesPortablePacker(
            packer.first + (packed_type == internal::PackedType::kInt8 ? " int8" : " uint8") +
                " width " + std::to_string(width),
            format, width, packed_type, pack);
      }
    }
  }
}

struct Operands {
  ElementType lhs_type;
  ElementType rhs_type;
  // Raw bytes of lhs(row, d) and rhs(d, col).
  std::uint8_t (*lhs)(int row, int d);
  std::uint8_t (*rhs)(int d, int col);
  const char* name;
};

std::uint8_t Byte255(int, int) { return 255; }
std::uint8_t ByteMinus128(int, int) { return 0x80; }
std::uint8_t Mixed(int a, int b) {
  const std::uint8_t extremes[] = {0, 255, 0x80, 0x7f, 1};
  return extremes[(a * 7 + b * 3) % 5];
}
std::uint8_t Pseudorandom(int a, int b) {
  return static_cast<std::uint8_t>((a * 2654435761U + b * 40503U) >> 11);
}

// The micro-kernel on `operands` (kernel_check.h), for the first `used_rows` rows.
void CheckMicroKernelOn(const KernelImplementation& implementation, const Operands& operands,
                        int depth, int used_rows) {
  const KernelFormat& format = implementation.format;
  const SourceMatrix lhs(format.lhs_rows, depth, Order::kRowMajor, operands.lhs_type, 0,
                         operands.lhs);
  const SourceMatrix rhs_transposed(format.rhs_cols, depth, Order::kColMajor, operands.rhs_type, 1,
                                    [&](int c, int d) { return operands.rhs(d, c); });
  CheckMicroKernel(implementation, lhs, rhs_transposed, used_rows,
                   std::string(KernelName(implementation.kernel)) + " " + operands.name);
}

const Operands kOperands[] = {
    {ElementType::kUint8, ElementType::kUint8, &Byte255, &Byte255, "uint8 255 x 255"},
    {ElementType::kInt8, ElementType::kInt8, &ByteMinus128, &ByteMinus128, "int8 -128 x -128"},
    {ElementType::kUint8, ElementType::kInt8, &Byte255, &ByteMinus128, "uint8 255 x int8 -128"},
    {ElementType::kInt8, ElementType::kUint8, &Mixed, &Mixed, "mixed extremes"},
    {ElementType::kUint8, ElementType::kInt8, &Pseudorandom, &Pseudorandom, "pseudorandom"},
};

// The depths include one int16 run of the nibble kernel (kNibbleSteps groups of 4: 32) and
// around it; 255 x int8 -128 is its worst case.
TEST(KernelX86Test, MicroKernelMatchesDotProductAtExtremeValues) {
  for (Kernel kernel : X86Kernels()) {
    for (const KernelImplementation* implementation : Implementations(kernel)) {
      for (const Operands& operands : kOperands) {
        for (int depth : {1, 2, 3, 5, 16, 17, 31, 32, 33, 63, 64, 65, 1001}) {
          CheckMicroKernelOn(*implementation, operands, depth, implementation->format.lhs_rows);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

// A short last panel runs a kernel for fewer rows: each count computes exactly its rows.
TEST(KernelX86Test, MicroKernelComputesOnlyTheRowsAskedFor) {
  for (Kernel kernel : X86Kernels()) {
    for (const KernelImplementation* implementation : Implementations(kernel)) {
      for (int used_rows = 1; used_rows <= implementation->format.lhs_rows; ++used_rows) {
        for (const Operands& operands : kOperands) {
          for (int depth : {1, 17, 1001}) {
            CheckMicroKernelOn(*implementation, operands, depth, used_rows);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
}

// A kernel's column of tiles (micro_kernel_column, where it has one: AMX loads each next panel's
// first operands before it stores a panel's sums) on lhs panels packed by its own packer: every
// row asked for matches the 64-bit dot products, stored and then accumulated, with whole and
// short last panels (of at most 16 rows and of more), depths without a whole step of the kernel,
// with one and with a tail, and columns past the tile's untouched.
TEST(KernelX86Test, MicroKernelColumnMatchesDotProducts) {
  for (Kernel kernel : X86Kernels()) {
    for (const KernelImplementation* implementation : Implementations(kernel)) {
      if (implementation->micro_kernel_column == nullptr) continue;
      const KernelFormat& format = implementation->format;
      const int cols = format.rhs_cols;
      for (int rows : {1, format.lhs_rows, format.lhs_rows + 3, 2 * format.lhs_rows + 16,
                       3 * format.lhs_rows - 1, 3 * format.lhs_rows}) {
        for (int depth : {17, 64, 65, 200, 256}) {
          const SourceMatrix lhs(rows, depth, Order::kRowMajor, ElementType::kUint8, 3,
                                 &Pseudorandom);
          const SourceMatrix rhs_transposed(cols, depth, Order::kRowMajor, ElementType::kInt8, 1,
                                            &Mixed);
          const int padded_depth = internal::RoundUp(depth, format.depth_group);
          const std::size_t lhs_panel_bytes = internal::PackedBytes(
              format.lhs_type, static_cast<std::int64_t>(format.lhs_rows) * padded_depth);
          const PackedProducts packed = PackAndMultiply(*implementation, lhs, rhs_transposed, rows);
          const std::vector<std::int64_t>& sums = packed.sums;
          const int acc_stride = cols + 5;
          constexpr std::int32_t kUntouched = -12345;
          std::vector<std::int32_t> acc(
              static_cast<std::size_t>(internal::RoundUp(rows, format.lhs_rows)) * acc_stride,
              kUntouched);
          for (int times = 1; times <= 2; ++times) {
            if (implementation->prepare != nullptr) implementation->prepare();
            implementation->micro_kernel_column(packed.lhs.data(), lhs_panel_bytes,
                                                packed.rhs.data(), padded_depth, rows, acc.data(),
                                                acc_stride, /*accumulate=*/times == 2);
            for (int r = 0; r < rows; ++r) {
              for (int c = 0; c < acc_stride; ++c) {
                const std::int32_t entry = acc[static_cast<std::size_t>(r) * acc_stride + c];
                const std::int32_t expected =
                    c < cols ? static_cast<std::int32_t>(static_cast<std::uint32_t>(
                                   times * sums[static_cast<std::size_t>(r) * cols + c]))
                             : kUntouched;
                ASSERT_EQ(entry, expected)
                    << KernelName(kernel) << " rows " << rows << " depth " << depth << " at (" << r
                    << ", " << c << ") after " << times << " calls";
              }
            }
          }
        }
      }
    }
  }
}

// Raw sums past the int32 range must wrap exactly: 255 * 255 * 66051 is 2^32 - 1021, and
// 16384 * 131072 is 2^31, which wraps to INT32_MIN; odd depths leave a padded last pair.
TEST(KernelX86Test, MicroKernelSumsWrapAtTheInt32Limit) {
  for (Kernel kernel : X86Kernels()) {
    for (const KernelImplementation* implementation : Implementations(kernel)) {
      const int rows = implementation->format.lhs_rows;
      CheckMicroKernelOn(*implementation, kOperands[0], 33025, rows);
      CheckMicroKernelOn(*implementation, kOperands[0], 66051, rows);
      CheckMicroKernelOn(*implementation, kOperands[1], 131072, rows);
      CheckMicroKernelOn(*implementation, kOperands[1], 131073, rows);
      CheckMicroKernelOn(*implementation, kOperands[2], 131071, rows);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace lowbit
