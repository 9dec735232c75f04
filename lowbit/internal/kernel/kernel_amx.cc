// The AMX kernel (compiled with -mavx2 -mavx512f -mavx512bw -mavx512vnni -mamx-tile -mamx-int8):
// a 32 x 32 tile of int32 sums held in four AMX tile registers, where one tdpbsud multiplies a
// 16 x 64 block of signed lhs bytes by a 64 x 16 block of unsigned rhs bytes: the multiply-adds
// of 256 vpdpbusd. The rhs panels are the AVX-512
// VNNI kernel's (4-byte depth groups across 32 columns, which is the layout a tile load of the
// multiplier reads); the lhs panels hold rows of 64 depth values (KernelFormat::lhs_chunk).
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

// <immintrin.h> through this header first: without GCC 12's false -Wuninitialized reports.
#include "lowbit/fixedpoint/fixedpoint_avx512.h"
#include "lowbit/internal/kernel/amx_tile_config.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/pack/pack_x86.h"
#include "lowbit/internal/pack/requantize_avx512.h"
#include "lowbit/internal/pack/transpose_avx512.h"

namespace lowbit {
namespace internal {
namespace {

constexpr int kRows = 32;
constexpr int kCols = 32;
// Depth values per lhs row of a tile load: 64 bytes, the widest row a tile holds.
constexpr int kChunk = 64;
constexpr int kGroup = 4;
// A half of the tile: 16 rows or columns, the most a tile register holds.
constexpr int kHalf = 16;
constexpr KernelFormat kFormat{kRows,  kCols, kGroup, PackedType::kInt8, PackedType::kUint8,
                               kChunk, true};
// Bytes between the rows of an rhs panel's depth groups: a group of 4 values for each column.
constexpr int kRhsGroupBytes = kCols * kGroup;

// Configures the tiles unless they are so already (KernelImplementation::prepare, before each
// block's calls): code between blocks and GEMMs (an output stage, a library in another GEMM on
// the same thread, as oneDNN, which releases the tiles after each of its GEMMs) may have
// configured or released them otherwise. STTILECFG waits for the tile instructions before it: in
// every call it took a quarter of the kernel's time at 256^3, the calls no longer overlapping.
// The tiles stay configured after a GEMM, so that the thread's next one skips LDTILECFG (about
// 300 cycles): released after each GEMM, 64^3 GEMMs ran 6 to 10% slower, 256^3 ones up to 2%. What
// that leaves to the OS: saving the 8 KiB of tile data on a context switch of the thread, and on
// Sapphire Rapids and later intel_idle puts them back to their initial state before deep idle.
void EnsureTilesConfigured() {
  static const TileConfig wanted;
  TileConfig current;
  asm volatile("sttilecfg %0" : "=m"(current));
  if (std::memcmp(&current, &wanted, sizeof(TileConfig)) != 0) LoadTileConfig(wanted);
}

// The tile registers: the sums of the top rows (lhs rows 0-15) by the left columns (rhs columns
// 0-15) and by the right ones, the same for the bottom rows, and the operands of a step. Macros,
// not constants: the tile intrinsics paste their register numbers into the instruction's text.
#define LOWBIT_AMX_TOP_LEFT 0
#define LOWBIT_AMX_TOP_RIGHT 1
#define LOWBIT_AMX_BOTTOM_LEFT 2
#define LOWBIT_AMX_BOTTOM_RIGHT 3
#define LOWBIT_AMX_TOP_LHS 4
#define LOWBIT_AMX_BOTTOM_LHS 5
#define LOWBIT_AMX_LEFT_RHS 6
#define LOWBIT_AMX_RIGHT_RHS 7

// GCC's tile loads and stores name their addresses but not the memory there: without this
// between them and ordinary accesses of the same bytes, the compiler may drop or move those.
inline void MemoryBarrier() { asm volatile("" : : : "memory"); }

// The tile's sums, from acc or zero; back to `out` (acc, or a whole tile's copy).
template <bool kBottom>
__attribute__((always_inline)) inline void LoadSums(const std::int32_t* acc, int acc_stride,
                                                    bool accumulate) {
  const std::size_t stride = sizeof(std::int32_t) * acc_stride;
  if (accumulate) {
    _tile_loadd(LOWBIT_AMX_TOP_LEFT, acc, stride);
    _tile_loadd(LOWBIT_AMX_TOP_RIGHT, acc + kHalf, stride);
    if constexpr (kBottom) {
      _tile_loadd(LOWBIT_AMX_BOTTOM_LEFT, acc + kHalf * acc_stride, stride);
      _tile_loadd(LOWBIT_AMX_BOTTOM_RIGHT, acc + kHalf * acc_stride + kHalf, stride);
    }
  } else {
    _tile_zero(LOWBIT_AMX_TOP_LEFT);
    _tile_zero(LOWBIT_AMX_TOP_RIGHT);
    if constexpr (kBottom) {
      _tile_zero(LOWBIT_AMX_BOTTOM_LEFT);
      _tile_zero(LOWBIT_AMX_BOTTOM_RIGHT);
    }
  }
}

template <bool kBottom>
__attribute__((always_inline)) inline void StoreSums(std::int32_t* out, int out_stride) {
  const std::size_t stride = sizeof(std::int32_t) * out_stride;
  _tile_stored(LOWBIT_AMX_TOP_LEFT, out, stride);
  _tile_stored(LOWBIT_AMX_TOP_RIGHT, out + kHalf, stride);
  if constexpr (kBottom) {
    _tile_stored(LOWBIT_AMX_BOTTOM_LEFT, out + kHalf * out_stride, stride);
    _tile_stored(LOWBIT_AMX_BOTTOM_RIGHT, out + kHalf * out_stride + kHalf, stride);
  }
}

// The operand tiles of a step of 64 depth values: lhs rows `lhs_stride` bytes apart (the top
// 16, then the bottom 16), the rhs's depth groups kRhsGroupBytes apart. The lhs tiles load with
// the streaming hint (TILELOADDT1): a column call reads each lhs panel once, while the rhs panel
// serves every panel of the column. From 1024 deep on, an lhs and an rhs panel (32 KiB each) no
// longer fit L1 together, and through plain loads the lhs stream pushed the rhs panel out: the
// column calls alone ran 1.31 to 1.34 times as fast with the hint at 512 rows by 1024 deep, and
// the GEMM 1.18 times at 1024^3 and 2048^3 (1.10 on two threads), level at 64^3 to 512^3.
template <bool kBottom>
__attribute__((always_inline)) inline void LoadOperands(const std::uint8_t* lhs, int lhs_stride,
                                                        const std::uint8_t* rhs) {
  _tile_stream_loadd(LOWBIT_AMX_TOP_LHS, lhs, lhs_stride);
  if constexpr (kBottom) {
    _tile_stream_loadd(LOWBIT_AMX_BOTTOM_LHS, lhs + kHalf * lhs_stride, lhs_stride);
  }
  _tile_loadd(LOWBIT_AMX_LEFT_RHS, rhs, kRhsGroupBytes);
  _tile_loadd(LOWBIT_AMX_RIGHT_RHS, rhs + kHalf * kGroup, kRhsGroupBytes);
}

template <bool kBottom>
__attribute__((always_inline)) inline void MultiplyOperands() {
  _tile_dpbsud(LOWBIT_AMX_TOP_LEFT, LOWBIT_AMX_TOP_LHS, LOWBIT_AMX_LEFT_RHS);
  _tile_dpbsud(LOWBIT_AMX_TOP_RIGHT, LOWBIT_AMX_TOP_LHS, LOWBIT_AMX_RIGHT_RHS);
  if constexpr (kBottom) {
    _tile_dpbsud(LOWBIT_AMX_BOTTOM_LEFT, LOWBIT_AMX_BOTTOM_LHS, LOWBIT_AMX_LEFT_RHS);
    _tile_dpbsud(LOWBIT_AMX_BOTTOM_RIGHT, LOWBIT_AMX_BOTTOM_LHS, LOWBIT_AMX_RIGHT_RHS);
  }
}

// One panel: the whole steps of 64, then the tail (padded_depth % 64, a multiple of 4) as one
// more step from copies padded with zeros to 64: its lhs rows are `tail` bytes long in the panel,
// and its rhs holds tail / 4 depth groups. The sums of a tile of `rows` rows, not a multiple of
// 16, go through a copy of the whole tile, since a tile store writes all its 16 rows. With
// `first_loaded` the first step's operands are in their tiles already; with a `next_lhs` panel,
// its first step's operands are loaded before this panel's sums are stored, so that the loads
// overlap the stores. On the 256^3 GEMM's blocks the stores of each panel's four sum tiles took
// a third of the tile's time (a harness of the tile alone), and with this order the GEMM ran 3
// to 4% faster at 256^3 (1% in the host's slow phases), level at 64^3 and 1024^3.
template <bool kBottom>
void MultiplyPanel(const std::uint8_t* lhs, const std::uint8_t* rhs, int padded_depth, int rows,
                   std::int32_t* acc, int acc_stride, bool accumulate, bool first_loaded,
                   const std::uint8_t* next_lhs) {
  const std::uint8_t* const rhs_panel = rhs;
  LoadSums<kBottom>(acc, acc_stride, accumulate);
  const int whole = padded_depth / kChunk;
  for (int step = 0; step < whole; ++step) {
    if (step > 0 || !first_loaded) LoadOperands<kBottom>(lhs, kChunk, rhs);
    MultiplyOperands<kBottom>();
    lhs += kRows * kChunk;
    rhs += kChunk / kGroup * kRhsGroupBytes;
  }
  const int tail = padded_depth % kChunk;
  if (tail > 0) {
    alignas(64) std::uint8_t lhs_rows[kRows][kChunk] = {};
    alignas(64) std::uint8_t rhs_groups[kChunk / kGroup][kRhsGroupBytes] = {};
    const int copied_rows = kBottom ? kRows : kHalf;
    for (int i = 0; i < copied_rows; ++i) std::memcpy(lhs_rows[i], lhs + i * tail, tail);
    std::memcpy(rhs_groups, rhs, tail / kGroup * kRhsGroupBytes);
    MemoryBarrier();
    LoadOperands<kBottom>(&lhs_rows[0][0], kChunk, &rhs_groups[0][0]);
    MultiplyOperands<kBottom>();
  }
  if (next_lhs != nullptr) LoadOperands<true>(next_lhs, kChunk, rhs_panel);
  if (rows % kHalf == 0) {
    StoreSums<kBottom>(acc, acc_stride);
    MemoryBarrier();
    return;
  }
  alignas(64) std::int32_t sums[kRows][kCols];
  StoreSums<kBottom>(&sums[0][0], kCols);
  MemoryBarrier();
  for (int i = 0; i < rows; ++i) std::memcpy(acc + i * acc_stride, sums[i], sizeof(sums[i]));
}

// The panels of a column in turn (MicroKernelColumnFunction), each next one's first operands
// loaded by the one before it, where the depth has a whole step. The packed lhs holds whole
// panels, so loading a short last panel's bottom rows, which it may not multiply, reads memory
// that is there.
void MultiplyColumnAmx(const void* lhs_panels, std::size_t lhs_panel_bytes, const void* rhs_panel,
                       int padded_depth, int rows, std::int32_t* acc, int acc_stride,
                       bool accumulate) {
  const auto* lhs = static_cast<const std::uint8_t*>(lhs_panels);
  const auto* rhs = static_cast<const std::uint8_t*>(rhs_panel);
  const bool preload = padded_depth >= kChunk;
  MemoryBarrier();
  for (int first = 0; first < rows; first += kRows) {
    const int panel_rows = std::min(kRows, rows - first);
    const std::uint8_t* next_lhs =
        preload && first + kRows < rows ? lhs + lhs_panel_bytes : nullptr;
    const bool first_loaded = preload && first > 0;
    if (panel_rows <= kHalf) {
      MultiplyPanel<false>(lhs, rhs, padded_depth, panel_rows, acc, acc_stride, accumulate,
                           first_loaded, next_lhs);
    } else {
      MultiplyPanel<true>(lhs, rhs, padded_depth, panel_rows, acc, acc_stride, accumulate,
                          first_loaded, next_lhs);
    }
    lhs += lhs_panel_bytes;
    acc += static_cast<std::ptrdiff_t>(kRows) * acc_stride;
  }
  MemoryBarrier();
}

void MicroKernelAmx(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                    std::int32_t* acc, int acc_stride, bool accumulate) {
  MultiplyColumnAmx(lhs_panel, 0, rhs_panel, padded_depth, rows, acc, acc_stride, accumulate);
}

// Rows [0, count) of lhs panels, 16 at a time: `rows_at(row, d, in_depth)` gives a reader whose
// calls return the chunks at depths [d, d + 64) of rows row, row + 1, ... in turn (their packed
// values in `in_depth`, zero past the depth). Each chunk is summed by vpdpbusd into a vector per
// row, and the 16 vectors transposed and added into one of 16 sums. The 16 rows' steps are
// unrolled, whole chunks of 16 rows apart from the rest, and the reader steps from row to row by
// itself (for bytes as they lie, a pointer's addition): with each row's address worked out from
// its index, the vectors of sums indexed at run time and the source's stride read again after
// every store (which may alias it), packing 256 x 256 took 1.3 times as long on its own and 1.9
// times as long in a GEMM's profile. Reduced one row at a time, the sums took half of the packing
// of 64 x 64.
template <typename RowsAt>
void PackLhsRowChunks(int count, int depth, std::uint8_t* out, std::int32_t* sums, RowsAt rows_at) {
  const int padded_depth = RoundUp(depth, kGroup);
  const __m512i ones = _mm512_set1_epi8(1);
  const auto mask_of = [](int bytes) {
    return bytes >= kChunk ? ~__mmask64{0} : (__mmask64{1} << bytes) - 1;
  };
  const std::size_t panel_bytes = static_cast<std::size_t>(kRows) * padded_depth;
  for (int first = 0; first < count; first += kHalf) {
    std::uint8_t* panel = out + first / kRows * panel_bytes;
    const int panel_row = first % kRows;
    const int rows = std::min(kHalf, count - first);
    __m512i row_sums[kHalf];
    for (__m512i& row_sum : row_sums) row_sum = _mm512_setzero_si512();
    // Whole chunks of 16 rows, then the rest: a depth tail, or the rows of a last group. Through
    // the rest's masked loop alone, packing took 1.5 to 1.7 times as long (64 x 64 to 256 x 256).
    const int whole_depth = rows == kHalf ? depth / kChunk * kChunk : 0;
    for (int d = 0; d < whole_depth; d += kChunk) {
      auto next_row = rows_at(first, d, AllLanes{});
      std::uint8_t* chunk_rows = panel + static_cast<std::size_t>(d) * kRows + panel_row * kChunk;
#pragma GCC unroll 16
      for (int i = 0; i < kHalf; ++i) _mm512_storeu_si512(chunk_rows + i * kChunk, next_row());
    }
    // The whole chunks' sums, read back from the panel just stored (in L1). Summed as each chunk
    // was read, the 16 rows' sums held half the vector registers through the reads: packing
    // 256 x 256 took 1.12 to 1.15 times as long at 8 bits and 1.03 to 1.07 times requantized to 4
    // or 7 bits (1024 x 1024: 1.01, and 1.06 to 1.08); with everything in L1 (64 x 64, 64 x 256)
    // the 8-bit packing is level and the requantizing one 2 to 4% slower this way.
    for (int d = 0; d < whole_depth; d += kChunk) {
      const std::uint8_t* chunk_rows =
          panel + static_cast<std::size_t>(d) * kRows + panel_row * kChunk;
#pragma GCC unroll 16
      for (int i = 0; i < kHalf; ++i) {
        row_sums[i] =
            _mm512_dpbusd_epi32(row_sums[i], ones, _mm512_loadu_si512(chunk_rows + i * kChunk));
      }
    }
    for (int d = whole_depth; d < padded_depth; d += kChunk) {
      const int width = std::min(kChunk, padded_depth - d);
      const __mmask64 stored = mask_of(width);
      auto next_row = rows_at(first, d, mask_of(depth - d));
      std::uint8_t* chunk_rows = panel + static_cast<std::size_t>(d) * kRows + panel_row * width;
#pragma GCC unroll 16
      for (int i = 0; i < kHalf; ++i) {
        const __m512i chunk = i < rows ? next_row() : _mm512_setzero_si512();
        row_sums[i] = _mm512_dpbusd_epi32(row_sums[i], ones, chunk);
        _mm512_mask_storeu_epi8(chunk_rows + i * width, stored, chunk);
      }
    }
    TransposeInt32x16x16(row_sums);
    __m512i total = row_sums[0];
    for (int g = 1; g < kHalf; ++g) total = _mm512_add_epi32(total, row_sums[g]);
    const __mmask16 present = static_cast<__mmask16>((1u << rows) - 1);
    _mm512_mask_storeu_epi32(
        sums + first, present,
        _mm512_add_epi32(_mm512_maskz_loadu_epi32(present, sums + first), total));
  }
  // The rows of a last panel past `count`, which the steps above leave alone past the last 16.
  const int last_written = RoundUp(count, kHalf);
  const int padded_rows = RoundUp(count, kRows);
  if (last_written < padded_rows) {
    std::uint8_t* panel = out + last_written / kRows * panel_bytes;
    for (int d = 0; d < padded_depth; d += kChunk) {
      const int width = std::min(kChunk, padded_depth - d);
      std::memset(panel + static_cast<std::size_t>(d) * kRows + kHalf * width, 0,
                  static_cast<std::size_t>(kHalf) * width);
    }
  }
}

// The first row of a source whose rows run along the depth, from `start`.
const std::uint8_t* FirstRow(const MatrixView& source, int start, int depth_start) {
  return static_cast<const std::uint8_t*>(source.data) +
         static_cast<std::ptrdiff_t>(start) * source.stride + depth_start;
}

// Rows [start, start + count) of a source whose rows run along the depth: each chunk copied as it
// is packed, shifted by `delta`.
void PackLhsRowsAlongDepth(const MatrixView& source, int start, int count, int depth_start,
                           int depth, std::uint8_t* out, std::int32_t* sums) {
  const __m512i delta =
      _mm512_set1_epi8(static_cast<char>(-PackedValueShift(kFormat.lhs_type, source)));
  const std::uint8_t* const rows = FirstRow(source, start, depth_start);
  const std::ptrdiff_t stride = source.stride;
  PackLhsRowChunks(count, depth, out, sums, [=](int row, int d, __mmask64 in_depth) {
    return [=, values = rows + row * stride + d]() mutable {
      const __m512i chunk =
          _mm512_maskz_add_epi8(in_depth, _mm512_maskz_loadu_epi8(in_depth, values), delta);
      values += stride;
      return chunk;
    };
  });
}

// The same rows requantized as they are read (RequantizingPackFunction).
void PackLhsRequantizingAmx(const MatrixView& source, const PackRequantization& requantization,
                            int start, int count, int depth, void* packed, std::int32_t* sums) {
  const RequantizingLineReader read(
      FirstRow(source, start, 0), source.stride, requantization,
      static_cast<std::int8_t>(-PackedValueShift(kFormat.lhs_type, source)));
  PackLhsRowChunks(count, depth, static_cast<std::uint8_t*>(packed), sums,
                   [&read, depth](int row, int d, auto in_depth) {
                     return read.LinesFrom(row, d, SequenceStep(d, depth), in_depth);
                   });
}

// A source whose rows are adjacent: packed in 4-byte depth groups by the AVX-512 VNNI kernel's
// packer, then each chunk of each panel transposed from groups of rows to rows of groups.
void PackLhsRowsAdjacent(const MatrixView& source, int start, int count, int depth_start, int depth,
                         std::uint8_t* out, std::int32_t* sums) {
  PackByteGroupsAvx512(source, kFormat.lhs_type, kRows, start, count, depth_start, depth, out,
                       sums);
  const int padded_depth = RoundUp(depth, kGroup);
  const int panels = (count + kRows - 1) / kRows;
  std::uint32_t groups[kRows * kChunk / kGroup];
  for (int panel = 0; panel < panels; ++panel) {
    std::uint8_t* chunk = out + static_cast<std::size_t>(panel) * kRows * padded_depth;
    for (int d = 0; d < padded_depth; d += kChunk) {
      const int chunk_groups = std::min(kChunk, padded_depth - d) / kGroup;
      std::memcpy(groups, chunk, sizeof(std::uint32_t) * kRows * chunk_groups);
      auto* rows = reinterpret_cast<std::uint32_t*>(chunk);
      for (int i = 0; i < kRows; ++i) {
        for (int g = 0; g < chunk_groups; ++g) {
          std::memcpy(rows + i * chunk_groups + g, &groups[g * kRows + i], sizeof(std::uint32_t));
        }
      }
      chunk += static_cast<std::size_t>(kRows) * chunk_groups * kGroup;
    }
  }
}

void PackLhsAmx(const MatrixView& source, int start, int count, int depth_start, int depth,
                void* packed, std::int32_t* sums) {
  auto* out = static_cast<std::uint8_t*>(packed);
  if (source.order == Order::kRowMajor) {
    PackLhsRowsAlongDepth(source, start, count, depth_start, depth, out, sums);
  } else {
    PackLhsRowsAdjacent(source, start, count, depth_start, depth, out, sums);
  }
}

void PackRhsAmx(const MatrixView& source, int start, int count, int depth_start, int depth,
                void* packed, std::int32_t* sums) {
  PackByteGroupsAvx512(source, kFormat.rhs_type, kFormat.rhs_cols, start, count, depth_start, depth,
                       packed, sums);
}

void PackRhsRequantizingAmx(const MatrixView& source, const PackRequantization& requantization,
                            int start, int count, int depth, void* packed, std::int32_t* sums) {
  PackByteGroupsRequantizingAvx512(source, requantization, kFormat.rhs_type, kFormat.rhs_cols,
                                   start, count, depth, packed, sums);
}

// CPUID leaf 7: EDX bit 24 AMX-TILE, bit 25 AMX-INT8. Linux hands out the tile registers' 8 KiB
// of state only to processes that ask (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, Linux 5.16);
// without that the first tile instruction faults.
bool AskForAmx() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool has_amx = (edx >> 24 & 1) != 0 && (edx >> 25 & 1) != 0;
  if (!has_amx) return false;
  constexpr long kArchRequestComponentPermission = 0x1023;
  constexpr long kTileDataComponent = 18;
  return syscall(SYS_arch_prctl, kArchRequestComponentPermission, kTileDataComponent) == 0;
}

#undef LOWBIT_AMX_TOP_LEFT
#undef LOWBIT_AMX_TOP_RIGHT
#undef LOWBIT_AMX_BOTTOM_LEFT
#undef LOWBIT_AMX_BOTTOM_RIGHT
#undef LOWBIT_AMX_TOP_LHS
#undef LOWBIT_AMX_BOTTOM_LHS
#undef LOWBIT_AMX_LEFT_RHS
#undef LOWBIT_AMX_RIGHT_RHS

}  // namespace

bool AmxSupported() {
  static const bool supported = AskForAmx();
  return supported;
}

const KernelImplementation& AmxKernel() {
  static const KernelImplementation implementation{Kernel::kAmx,
                                                   kFormat,
                                                   &PackLhsAmx,
                                                   &PackRhsAmx,
                                                   &MicroKernelAmx,
                                                   Avx512VnniKernel().direct_rhs,
                                                   nullptr,
                                                   nullptr,
                                                   &EnsureTilesConfigured,
                                                   &PackLhsRequantizingAmx,
                                                   &PackRhsRequantizingAmx,
                                                   0,
                                                   &MultiplyColumnAmx};
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
