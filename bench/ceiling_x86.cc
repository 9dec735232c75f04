// The instruction ceilings that the x86 targets are set against, measured in the same run as
// the GEMMs: ceiling/<mix>/1024x1024x1024/threads:<t> executes as many multiply-adds as a 1024^3
// GEMM through nothing but a kernel's arithmetic (no loads, packing or output), with the same
// GOPS counter, split over t threads at once. This host's speed swings by 10 to 25% within
// seconds (doc/performance.md), so a GEMM's fraction of the ceiling measured alongside it says
// more than its GOPS alone. And ceiling/vnni_tile_in_blocks/<shape>: the AVX-512 VNNI tile alone
// on a GEMM's packed operands, the rest of the GEMM left out (TileInBlocks), and
// ceiling/amx_tile_in_blocks/<shape> the same for the AMX kernel. And ceiling/output_batch_k64
// and ceiling/dot_tile_step_output_k<depth>: the 8-bit output's arithmetic alone, and between the
// tile's steps.
#include <immintrin.h>
#include <pthreadpool.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <memory>
#include <new>
#include <vector>

#include "bench/bench_common.h"
#include "lowbit/internal/driver/blocking.h"
#include "lowbit/internal/driver/scratch.h"
#include "lowbit/internal/kernel/amx_tile_config.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/lowbit.h"

namespace lowbit_bench {
namespace {

// One depth step of a 6 x 16 tile: 12 products, each added into its own accumulator (ymm0-11),
// in the order the kernels issue them, through two temporaries (ymm12-13). The operands
// (ymm14-15) are zero; these instructions take the same time for any value. `product(t)` is
// the assembly that leaves one product vector in ymm<t>.
#define LOWBIT_CEILING_PAIR(product, add, even, odd)                             \
  product(12) product(13) add " %%ymm12, %%ymm" #even ", %%ymm" #even "\n\t" add \
                              " %%ymm13, %%ymm" #odd ", %%ymm" #odd "\n\t"
#define LOWBIT_CEILING_LOOP(product, add) \
  "vpxor %%xmm14, %%xmm14, %%xmm14\n\t"                                                  \
  "vpxor %%xmm15, %%xmm15, %%xmm15\n\t"                                                  \
  "1:\n\t" LOWBIT_CEILING_PAIR(product, add, 0, 1) LOWBIT_CEILING_PAIR(product, add, 2, 3) \
      LOWBIT_CEILING_PAIR(product, add, 4, 5) LOWBIT_CEILING_PAIR(product, add, 6, 7)        \
          LOWBIT_CEILING_PAIR(product, add, 8, 9) LOWBIT_CEILING_PAIR(product, add, 10, 11)  \
              "dec %0\n\t"                                                                 \
              "jnz 1b\n\t"
#define LOWBIT_CEILING_CLOBBERS                                                            \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "cc"

// The exact 8-bit kernel's arithmetic: vpmaddwd (16 multiply-adds) and vpaddd.
#define LOWBIT_PAIR_PRODUCT(t) "vpmaddwd %%ymm14, %%ymm15, %%ymm" #t "\n\t"
__attribute__((target("avx2"))) void RunPairSteps(std::int64_t steps) {
  asm volatile(LOWBIT_CEILING_LOOP(LOWBIT_PAIR_PRODUCT, "vpaddd")
               : "+r"(steps)
               :
               : LOWBIT_CEILING_CLOBBERS);
}

// The narrow kernels' arithmetic: vpmaddubsw (32 multiply-adds) and vpaddw; their widening
// every few steps is left out.
#define LOWBIT_BYTE_PRODUCT(t) "vpmaddubsw %%ymm14, %%ymm15, %%ymm" #t "\n\t"
__attribute__((target("avx2"))) void RunByteSteps(std::int64_t steps) {
  asm volatile(LOWBIT_CEILING_LOOP(LOWBIT_BYTE_PRODUCT, "vpaddw")
               : "+r"(steps)
               :
               : LOWBIT_CEILING_CLOBBERS);
}

// The one-step narrow kernel's (declared 7 x 8 bits): vpmaddubsw, its int16 sums widened at once
// by vpmaddwd (by ones in the kernel; ymm14 stands in for them), and vpaddd.
#define LOWBIT_WIDENED_BYTE_PRODUCT(t) \
  LOWBIT_BYTE_PRODUCT(t) "vpmaddwd %%ymm14, %%ymm" #t ", %%ymm" #t "\n\t"
__attribute__((target("avx2"))) void RunWidenedByteSteps(std::int64_t steps) {
  asm volatile(LOWBIT_CEILING_LOOP(LOWBIT_WIDENED_BYTE_PRODUCT, "vpaddd")
               : "+r"(steps)
               :
               : LOWBIT_CEILING_CLOBBERS);
}

// The whole steps of the x86 tiles: a mix above with the loads that feed it, two rhs vectors and
// a broadcast 4-byte lhs group per row, all from L1 (fixed addresses). What a tile's loop could
// reach if its panels never missed L1 and the loop cost nothing. In a row, `sums(rhs, t)` leaves
// in ymm<t> the sums of the broadcast group (ymm14) and rhs, and `add` adds them to the row's
// accumulators.
// clang-format off
#define LOWBIT_TILE_ROW(sums, add, offset, even, odd)           \
  "vpbroadcastd " #offset "(%1), %%ymm14\n\t"                   \
  sums(12, 15) add " %%ymm15, %%ymm" #even ", %%ymm" #even "\n\t" \
  sums(13, 14) add " %%ymm14, %%ymm" #odd ", %%ymm" #odd "\n\t"
#define LOWBIT_TILE_RHS                                         \
  "vmovdqu (%1), %%ymm12\n\t"                                   \
  "vmovdqu 32(%1), %%ymm13\n\t"
#define LOWBIT_PAIR_SUMS(rhs, t) "vpmaddwd %%ymm" #rhs ", %%ymm14, %%ymm" #t "\n\t"
#define LOWBIT_BYTE_SUMS(rhs, t) "vpmaddubsw %%ymm" #rhs ", %%ymm14, %%ymm" #t "\n\t"
// The one-step tile's (declared 7 x 8 bits) sums: widened at once by vpmaddwd with its ones as
// a memory operand (zeros from L1 here).
#define LOWBIT_ONE_STEP_SUMS(rhs, t)                            \
  LOWBIT_BYTE_SUMS(rhs, t) "vpmaddwd (%1), %%ymm" #t ", %%ymm" #t "\n\t"
// The 6-row tile's step (SixRowTile, kernel_pairs_x86.h): 12 int32 accumulators.
#define LOWBIT_SIX_ROW_STEPS(sums)                                                   \
  "1:\n\t" LOWBIT_TILE_RHS                                                           \
  LOWBIT_TILE_ROW(sums, "vpaddd", 0, 0, 1) LOWBIT_TILE_ROW(sums, "vpaddd", 4, 2, 3)  \
  LOWBIT_TILE_ROW(sums, "vpaddd", 8, 4, 5) LOWBIT_TILE_ROW(sums, "vpaddd", 12, 6, 7) \
  LOWBIT_TILE_ROW(sums, "vpaddd", 16, 8, 9) LOWBIT_TILE_ROW(sums, "vpaddd", 20, 10, 11) \
  "dec %0\n\t"                                                                       \
  "jnz 1b\n\t"
// The 3-row narrow tile's step (NarrowTile, kernel_narrow_x86.h): int16 sums in ymm0-5.
#define LOWBIT_NARROW_STEP                                      \
  LOWBIT_TILE_RHS                                               \
  LOWBIT_TILE_ROW(LOWBIT_BYTE_SUMS, "vpaddw", 0, 0, 1)          \
  LOWBIT_TILE_ROW(LOWBIT_BYTE_SUMS, "vpaddw", 4, 2, 3)          \
  LOWBIT_TILE_ROW(LOWBIT_BYTE_SUMS, "vpaddw", 8, 4, 5)
// Widens a narrow tile's int16 sums into its int32 ones (ymm6-11) by ones (zeros here, in ymm12)
// and starts them again from zero.
#define LOWBIT_NARROW_WIDEN(narrow, wide)                       \
  "vpmaddwd %%ymm12, %%ymm" #narrow ", %%ymm15\n\t"              \
  "vpaddd %%ymm15, %%ymm" #wide ", %%ymm" #wide "\n\t"            \
  "vpxor %%xmm" #narrow ", %%xmm" #narrow ", %%xmm" #narrow "\n\t"
// clang-format on
alignas(64) const std::uint8_t kTileOperands[128] = {};
__attribute__((target("avx2"))) void RunPairTileSteps(std::int64_t steps) {
  asm volatile(LOWBIT_SIX_ROW_STEPS(LOWBIT_PAIR_SUMS)
               : "+r"(steps)
               : "r"(kTileOperands)
               : LOWBIT_CEILING_CLOBBERS);
}
__attribute__((target("avx2"))) void RunOneStepTileSteps(std::int64_t steps) {
  asm volatile(LOWBIT_SIX_ROW_STEPS(LOWBIT_ONE_STEP_SUMS)
               : "+r"(steps)
               : "r"(kTileOperands)
               : LOWBIT_CEILING_CLOBBERS);
}

// The AVX-512 VNNI kernel's (kernel_avx512vnni.cc): vpdpbusd, 64 multiply-adds into its own
// accumulator (zmm0-23) each, from zero operands (zmm30-31): 24 chains, more than its latency
// times its two ports, so that nothing but issue bounds it; and its tile's whole step, the
// 8-row tile's 16 accumulators (zmm0-15) on two 64-byte rhs vectors (zmm16-17) and a broadcast
// lhs group per row (zmm18).
// clang-format off
#define LOWBIT_DOT(lhs, rhs, acc) "vpdpbusd %%zmm" #lhs ", %%zmm" #rhs ", %%zmm" #acc "\n\t"
#define LOWBIT_DOT_ROW(offset, even, odd)                       \
  "vpbroadcastd " #offset "(%1), %%zmm18\n\t"                   \
  LOWBIT_DOT(18, 16, even) LOWBIT_DOT(18, 17, odd)
// clang-format on
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void RunDotSteps(std::int64_t steps) {
  // clang-format off
  asm volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n\t"
               "vpxord %%zmm31, %%zmm31, %%zmm31\n\t"
               "1:\n\t"
               LOWBIT_DOT(30, 31, 0) LOWBIT_DOT(30, 31, 1) LOWBIT_DOT(30, 31, 2)
               LOWBIT_DOT(30, 31, 3) LOWBIT_DOT(30, 31, 4) LOWBIT_DOT(30, 31, 5)
               LOWBIT_DOT(30, 31, 6) LOWBIT_DOT(30, 31, 7) LOWBIT_DOT(30, 31, 8)
               LOWBIT_DOT(30, 31, 9) LOWBIT_DOT(30, 31, 10) LOWBIT_DOT(30, 31, 11)
               LOWBIT_DOT(30, 31, 12) LOWBIT_DOT(30, 31, 13) LOWBIT_DOT(30, 31, 14)
               LOWBIT_DOT(30, 31, 15) LOWBIT_DOT(30, 31, 16) LOWBIT_DOT(30, 31, 17)
               LOWBIT_DOT(30, 31, 18) LOWBIT_DOT(30, 31, 19) LOWBIT_DOT(30, 31, 20)
               LOWBIT_DOT(30, 31, 21) LOWBIT_DOT(30, 31, 22) LOWBIT_DOT(30, 31, 23)
               "dec %0\n\t"
               "jnz 1b\n\t"
               : "+r"(steps)
               :
               : LOWBIT_CEILING_CLOBBERS, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21",
                 "xmm22", "xmm23", "xmm30", "xmm31");
  // clang-format on
}
// clang-format off
#define LOWBIT_DOT_TILE_STEP                                                    \
  "vmovdqu64 (%1), %%zmm16\n\t"                                                 \
  "vmovdqu64 64(%1), %%zmm17\n\t"                                               \
  LOWBIT_DOT_ROW(0, 0, 1) LOWBIT_DOT_ROW(4, 2, 3) LOWBIT_DOT_ROW(8, 4, 5)       \
  LOWBIT_DOT_ROW(12, 6, 7) LOWBIT_DOT_ROW(16, 8, 9) LOWBIT_DOT_ROW(20, 10, 11)  \
  LOWBIT_DOT_ROW(24, 12, 13) LOWBIT_DOT_ROW(28, 14, 15)
// clang-format on
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void RunDotTileSteps(std::int64_t steps) {
  asm volatile("1:\n\t" LOWBIT_DOT_TILE_STEP
               "dec %0\n\t"
               "jnz 1b\n\t"
               : "+r"(steps)
               : "r"(kTileOperands)
               : LOWBIT_CEILING_CLOBBERS, "xmm16", "xmm17", "xmm18");
}

// What the tile's step leaves free for the output. A batch of the AVX-512 writer's loop for
// 8-bit results of a QuantizeDown in its float form (output_avx512.cc): 64 sums of a line loaded
// from L1 with the line's offset term, converted, scaled and offset (vfmadd), tested against the
// window where float rounding could differ from the exact arithmetic (vaddps, vptestmd and a
// branch per pair), rounded down, narrowed to bytes and stored: 26 vector instructions for 64
// results, in zmm19-29 beside the tile's zmm0-18. The constants are zeros; these instructions
// take the same time for any value. output_batch_k64 runs batches alone, each counted as the
// multiply-adds of its 64 results at depth 64, so that its GOPS compare with the tile's;
// dot_tile_step_output_k<depth> runs a batch after every depth / 16 tile steps in the same loop:
// a GEMM of that depth whose tile writes the lines before it while it multiplies, as the AVX-512
// VNNI kernel writes 8-bit results (LinesBetweenSteps, lowbit/internal/kernel/kernel.h), against
// the tile and the writer one after the other.
// clang-format off
#define LOWBIT_OUTPUT_SCALE(v)                                    \
  "vcvtdq2ps %%zmm" #v ", %%zmm" #v "\n\t"                        \
  "vfmadd132ps %%zmm24, %%zmm25, %%zmm" #v "\n\t"
#define LOWBIT_OUTPUT_WINDOW(first, second)                       \
  "vaddps %%zmm26, %%zmm" #first ", %%zmm27\n\t"                  \
  "vptestmd %%zmm28, %%zmm27, %%k1\n\t"                           \
  "vaddps %%zmm26, %%zmm" #second ", %%zmm27\n\t"                 \
  "vptestmd %%zmm28, %%zmm27, %%k1%{%%k1%}\n\t"                   \
  "kortestw %%k1, %%k1\n\t"                                      \
  "jnc 3f\n\t"                                                   \
  "3:\n\t"                                                       \
  "vcvtps2dq %{rd-sae%}, %%zmm" #first ", %%zmm" #first "\n\t"   \
  "vcvtps2dq %{rd-sae%}, %%zmm" #second ", %%zmm" #second "\n\t"
#define LOWBIT_OUTPUT_BATCH                                       \
  "vpbroadcastd 256(%2), %%zmm19\n\t"                             \
  "vpaddd (%2), %%zmm19, %%zmm20\n\t"                             \
  "vpaddd 64(%2), %%zmm19, %%zmm21\n\t"                           \
  "vpaddd 128(%2), %%zmm19, %%zmm22\n\t"                          \
  "vpaddd 192(%2), %%zmm19, %%zmm23\n\t"                          \
  LOWBIT_OUTPUT_SCALE(20) LOWBIT_OUTPUT_SCALE(21)                 \
  LOWBIT_OUTPUT_SCALE(22) LOWBIT_OUTPUT_SCALE(23)                 \
  LOWBIT_OUTPUT_WINDOW(20, 21) LOWBIT_OUTPUT_WINDOW(22, 23)       \
  "vpackssdw %%zmm21, %%zmm20, %%zmm20\n\t"                       \
  "vpackssdw %%zmm23, %%zmm22, %%zmm22\n\t"                       \
  "vpackuswb %%zmm22, %%zmm20, %%zmm20\n\t"                       \
  "vpermd %%zmm20, %%zmm29, %%zmm20\n\t"                          \
  "vmovdqu64 %%zmm20, 320(%2)\n\t"
#define LOWBIT_OUTPUT_CONSTANTS                                   \
  "vpxord %%zmm24, %%zmm24, %%zmm24\n\t"                          \
  "vpxord %%zmm25, %%zmm25, %%zmm25\n\t"                          \
  "vpxord %%zmm26, %%zmm26, %%zmm26\n\t"                          \
  "vpxord %%zmm28, %%zmm28, %%zmm28\n\t"                          \
  "vpxord %%zmm29, %%zmm29, %%zmm29\n\t"
#define LOWBIT_OUTPUT_CLOBBERS                                                                  \
  "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", \
      "xmm29", "k1", "memory"
// A line's 64 sums, its offset term after them, and the 64 bytes the batch stores.
alignas(64) std::int32_t output_line[96] = {};
__attribute__((target("avx512f,avx512bw"))) void RunOutputBatches(std::int64_t batches) {
  asm volatile(LOWBIT_OUTPUT_CONSTANTS
               "1:\n\t" LOWBIT_OUTPUT_BATCH
               "dec %0\n\t"
               "jnz 1b\n\t"
               : "+r"(batches)
               : "r"(kTileOperands), "r"(output_line)
               : LOWBIT_OUTPUT_CLOBBERS, "cc");
}
template <int kDepth>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void RunDotTileStepsWithOutput(
    std::int64_t batches) {
  asm volatile(LOWBIT_OUTPUT_CONSTANTS
               "1:\n\t"
               "mov %3, %%rcx\n\t"
               "2:\n\t" LOWBIT_DOT_TILE_STEP
               "dec %%rcx\n\t"
               "jnz 2b\n\t" LOWBIT_OUTPUT_BATCH
               "dec %0\n\t"
               "jnz 1b\n\t"
               : "+r"(batches)
               : "r"(kTileOperands), "r"(output_line), "r"(std::int64_t{kDepth / 16})
               : LOWBIT_CEILING_CLOBBERS, "xmm16", "xmm17", "xmm18", LOWBIT_OUTPUT_CLOBBERS, "rcx");
}
// clang-format on

// The narrow tile widens every kSteps steps: L7R5 every 8, L4R4 every 128.
template <int kSteps>
__attribute__((target("avx2"))) void RunNarrowTileSteps(std::int64_t steps) {
  static_assert(kSteps % 8 == 0, "the inner loop runs 8 steps");
  std::int64_t widenings = steps / kSteps > 0 ? steps / kSteps : 1;
  // clang-format off
  asm volatile("1:\n\t"
               "mov %2, %%rcx\n\t"
               "2:\n\t"
               LOWBIT_NARROW_STEP LOWBIT_NARROW_STEP LOWBIT_NARROW_STEP LOWBIT_NARROW_STEP
               LOWBIT_NARROW_STEP LOWBIT_NARROW_STEP LOWBIT_NARROW_STEP LOWBIT_NARROW_STEP
               "dec %%rcx\n\t"
               "jnz 2b\n\t"
               "vmovdqu (%1), %%ymm12\n\t"
               LOWBIT_NARROW_WIDEN(0, 6) LOWBIT_NARROW_WIDEN(1, 7) LOWBIT_NARROW_WIDEN(2, 8)
               LOWBIT_NARROW_WIDEN(3, 9) LOWBIT_NARROW_WIDEN(4, 10) LOWBIT_NARROW_WIDEN(5, 11)
               "dec %0\n\t"
               "jnz 1b\n\t"
               : "+r"(widenings)
               : "r"(kTileOperands), "r"(std::int64_t{kSteps / 8})
               : LOWBIT_CEILING_CLOBBERS, "rcx");
  // clang-format on
}

// Runs `run` for `steps` steps in `threads` equal parts at once, on a pool made once per case.
class Split {
 public:
  Split(void (*run)(std::int64_t), std::int64_t steps, int threads)
      : run_(run), part_(steps / threads), threads_(threads), pool_(pthreadpool_create(threads)) {}

  void operator()() {
    pthreadpool_parallelize_1d(
        pool_.get(),
        [](void* split, std::size_t) {
          const auto* self = static_cast<const Split*>(split);
          self->run_(self->part_);
        },
        this, threads_, 0);
  }

 private:
  struct Destroy {
    void operator()(pthreadpool_t pool) const { pthreadpool_destroy(pool); }
  };
  void (*run_)(std::int64_t);
  std::int64_t part_;
  int threads_;
  std::unique_ptr<pthreadpool, Destroy> pool_;
};

// Registers a mix whose step does `multiply_adds` multiply-adds, for the 1024^3 case on
// each of `thread_counts`.
void RegisterCeiling(const char* mix, std::int64_t multiply_adds, void (*run)(std::int64_t),
                     std::initializer_list<int> thread_counts = {1}) {
  std::vector<Case> cases;
  for (int threads : thread_counts) cases.push_back({{1024, 1024, 1024}, threads});
  RegisterCases(
      "ceiling", mix,
      [multiply_adds, run](const Case& c) -> std::function<void()> {
        const std::int64_t total =
            static_cast<std::int64_t>(c.shape.rows) * c.shape.cols * c.shape.depth;
        const std::int64_t steps = (total + multiply_adds - 1) / multiply_adds;
        if (c.threads == 1) return [steps, run] { run(steps); };
        return [split = std::make_shared<Split>(run, steps, c.threads)] { (*split)(); };
      },
      cases);
}

// The bit-serial kernels' (kernel_bit_serial_avx512.cc): vpandd of two 512-bit planes,
// vpopcntd and vpaddd into its own accumulator, 512 one-bit multiply-adds.
// clang-format off
#define LOWBIT_POPCOUNT(temporary, acc)                                   \
  "vpandd %%zmm14, %%zmm15, %%zmm" #temporary "\n\t"                      \
  "vpopcntd %%zmm" #temporary ", %%zmm" #temporary "\n\t"                 \
  "vpaddd %%zmm" #temporary ", %%zmm" #acc ", %%zmm" #acc "\n\t"
// clang-format on
__attribute__((target("avx512f,avx512vpopcntdq"))) void RunPopcountSteps(std::int64_t steps) {
  // clang-format off
  asm volatile("vpxord %%zmm14, %%zmm14, %%zmm14\n\t"
               "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"
               "1:\n\t"
               LOWBIT_POPCOUNT(12, 0) LOWBIT_POPCOUNT(13, 1) LOWBIT_POPCOUNT(12, 2)
               LOWBIT_POPCOUNT(13, 3) LOWBIT_POPCOUNT(12, 4) LOWBIT_POPCOUNT(13, 5)
               LOWBIT_POPCOUNT(12, 6) LOWBIT_POPCOUNT(13, 7) LOWBIT_POPCOUNT(12, 8)
               LOWBIT_POPCOUNT(13, 9) LOWBIT_POPCOUNT(12, 10) LOWBIT_POPCOUNT(13, 11)
               "dec %0\n\t"
               "jnz 1b\n\t"
               : "+r"(steps)
               :
               : LOWBIT_CEILING_CLOBBERS);
  // clang-format on
}

// The AMX kernel's (kernel_amx.cc), under its tile configuration: tdpbsud, 16 x 16 x 64
// multiply-adds into each of its four sum tiles from operand tiles loaded once, its arithmetic
// alone; and with kLoadEachStep its tile's whole step, the two lhs and two rhs tile loads from L1
// (4 KiB) besides, with the kernel's strides. The operands are bytes of every value, as a GEMM's
// are: tdpbsud ran faster on zeros (5300 against 4700 GOPS on one thread of the Intel Xeon host
// with AMX, loaded zeros; twice as fast on tiles that TILEZERO cleared), a speed no GEMM sees.
struct AmxOperands {
  AmxOperands() {
    for (int i = 0; i < 4096; ++i) bytes[i] = static_cast<std::uint8_t>(i * 7 + 1);
  }
  alignas(64) std::uint8_t bytes[4096];
};
const AmxOperands kAmxOperands;

__attribute__((target("amx-tile,amx-int8"))) inline void LoadAmxOperands() {
  _tile_loadd(4, kAmxOperands.bytes, 64);
  _tile_loadd(5, kAmxOperands.bytes + 1024, 64);
  _tile_loadd(6, kAmxOperands.bytes + 2048, 128);
  _tile_loadd(7, kAmxOperands.bytes + 2048 + 64, 128);
}

template <bool kLoadEachStep>
__attribute__((target("amx-tile,amx-int8"))) void RunAmxSteps(std::int64_t steps) {
  const lowbit::internal::TileConfig config;
  lowbit::internal::LoadTileConfig(config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  if constexpr (!kLoadEachStep) LoadAmxOperands();
  for (std::int64_t step = 0; step < steps; ++step) {
    if constexpr (kLoadEachStep) LoadAmxOperands();
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    _tile_dpbsud(2, 5, 6);
    _tile_dpbsud(3, 5, 7);
  }
  _tile_release();
}

// Memory on cache lines, as the library's scratch is (its packed panels and accumulator blocks):
// on std::vector's 16-byte alignment each 64-byte row of an AMX tile load spans two lines, and
// the AMX tile in blocks ran at less than half the speed.
template <typename T>
class CacheLineBuffer {
 public:
  explicit CacheLineBuffer(std::size_t size)
      : size_(size),
        memory_(static_cast<T*>(std::aligned_alloc(64, (size * sizeof(T) + 63) / 64 * 64))) {
    if (memory_ == nullptr) throw std::bad_alloc();
  }
  std::size_t size() const { return size_; }
  T* data() { return memory_.get(); }
  T& operator[](std::size_t i) { return memory_.get()[i]; }

 private:
  struct FreeDeleter {
    void operator()(T* p) const { std::free(p); }
  };
  std::size_t size_;
  std::unique_ptr<T, FreeDeleter> memory_;
};

// A kernel's own micro-kernel (the AVX-512 VNNI or AMX kernel's) over a GEMM's packed operands,
// called as the driver calls it (driver.cc, RunBlocks): its tasks of blocking.rows rows,
// accumulator blocks, depth slices and panels from ComputeBlocking for this CPU's caches, the rhs
// packed whole or, for a single task, a block at a time into one buffer. Nothing else: no packing,
// offsets or output. ceiling/vnni_tile_in_blocks/<shape> beside dot_tile_step (the bare step, its
// operands in registers) is what the tile loses to its operands' memory; beside
// lowbit/avx512vnni/<shape>, what the GEMM spends outside the tile (amx_tile_in_blocks beside
// amx_tile_step and lowbit/amx likewise).
class TileInBlocks {
 public:
  TileInBlocks(const lowbit::internal::KernelImplementation& kernel, const Shape& shape)
      : kernel_(kernel),
        format_(kernel_.format),
        shape_(shape),
        blocking_(lowbit::internal::ComputeBlocking(format_, lowbit::internal::DetectCacheSizes(),
                                                    shape.rows, shape.cols, shape.depth)),
        padded_depth_(lowbit::internal::RoundUp(shape.depth, format_.depth_group)),
        streamed_(shape.rows <= blocking_.rows),
        block_width_(streamed_ ? blocking_.streamed_cols : blocking_.cols),
        acc_stride_(lowbit::internal::AccumulatorStride(blocking_.cols, format_)),
        lhs_(Bytes(std::min(shape.rows, blocking_.rows), format_.lhs_rows)),
        rhs_(Bytes(streamed_ ? block_width_ : shape.cols, format_.rhs_cols)),
        acc_(static_cast<std::size_t>(lowbit::internal::RoundUp(blocking_.rows, format_.lhs_rows)) *
             acc_stride_) {
    // Any values: the instructions take the same time for all.
    for (std::size_t i = 0; i < lhs_.size(); ++i) lhs_[i] = static_cast<std::uint8_t>(i * 7);
    for (std::size_t i = 0; i < rhs_.size(); ++i) rhs_[i] = static_cast<std::uint8_t>(i * 13);
  }

  void operator()() {
    const std::size_t lhs_panel_bytes = static_cast<std::size_t>(format_.lhs_rows) * padded_depth_;
    const std::size_t rhs_panel_bytes = static_cast<std::size_t>(format_.rhs_cols) * padded_depth_;
    for (int row_start = 0; row_start < shape_.rows; row_start += blocking_.rows) {
      const int rows = std::min(blocking_.rows, shape_.rows - row_start);
      for (int block_start = 0; block_start < shape_.cols; block_start += block_width_) {
        const int block_cols = std::min(block_width_, shape_.cols - block_start);
        const std::uint8_t* const packed_rhs =
            rhs_.data() + (streamed_ ? 0 : block_start / format_.rhs_cols * rhs_panel_bytes);
        if (kernel_.prepare != nullptr) kernel_.prepare();
        for (int depth_start = 0; depth_start < shape_.depth; depth_start += blocking_.depth) {
          const int slice_depth = lowbit::internal::RoundUp(
              std::min(blocking_.depth, shape_.depth - depth_start), format_.depth_group);
          const std::uint8_t* rhs_panel =
              packed_rhs + static_cast<std::size_t>(depth_start) * format_.rhs_cols;
          for (int j = 0; j < block_cols; j += format_.rhs_cols, rhs_panel += rhs_panel_bytes) {
            const std::uint8_t* lhs_panel =
                lhs_.data() + static_cast<std::size_t>(depth_start) * format_.lhs_rows;
            if (kernel_.micro_kernel_column != nullptr) {
              kernel_.micro_kernel_column(lhs_panel, lhs_panel_bytes, rhs_panel, slice_depth, rows,
                                          acc_.data() + j, acc_stride_, depth_start > 0);
              continue;
            }
            for (int i = 0; i < rows; i += format_.lhs_rows, lhs_panel += lhs_panel_bytes) {
              kernel_.micro_kernel(lhs_panel, rhs_panel, slice_depth,
                                   std::min(format_.lhs_rows, rows - i),
                                   acc_.data() + static_cast<std::ptrdiff_t>(i) * acc_stride_ + j,
                                   acc_stride_, depth_start > 0);
            }
          }
        }
      }
    }
  }

 private:
  // Packed bytes of `lines` lines (whole panels of `panel_lines`) of the padded depth.
  std::size_t Bytes(int lines, int panel_lines) const {
    return static_cast<std::size_t>(lowbit::internal::RoundUp(lines, panel_lines)) * padded_depth_;
  }

  const lowbit::internal::KernelImplementation& kernel_;
  const lowbit::internal::KernelFormat format_;
  const Shape shape_;
  const lowbit::internal::Blocking blocking_;
  const int padded_depth_;
  const bool streamed_;  // one task: the driver packs each block of rhs columns just before use
  const int block_width_;
  const int acc_stride_;
  CacheLineBuffer<std::uint8_t> lhs_, rhs_;
  CacheLineBuffer<std::int32_t> acc_;
};

const Registration registration([] {
  if (!__builtin_cpu_supports("avx2")) return;
  // The 8-bit ones on two threads too: what the two cores of this host give the GEMM's
  // arithmetic together, for its two-thread target.
  RegisterCeiling("vpmaddwd_vpaddd", 12 * 16, &RunPairSteps, {1, 2});
  RegisterCeiling("pair_tile_step", 12 * 16, &RunPairTileSteps, {1, 2});
  RegisterCeiling("vpmaddubsw_vpaddw", 12 * 32, &RunByteSteps);
  RegisterCeiling("narrow_tile_step_k8", 6 * 32, &RunNarrowTileSteps<8>);
  RegisterCeiling("narrow_tile_step_k128", 6 * 32, &RunNarrowTileSteps<128>);
  RegisterCeiling("vpmaddubsw_vpmaddwd_vpaddd", 12 * 32, &RunWidenedByteSteps);
  RegisterCeiling("one_step_tile_step", 12 * 32, &RunOneStepTileSteps);
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vnni")) {
    return;
  }
  RegisterCeiling("vpdpbusd", 24 * 64, &RunDotSteps, {1, 2});
  RegisterCeiling("dot_tile_step", 16 * 64, &RunDotTileSteps, {1, 2});
  RegisterCeiling("output_batch_k64", 64 * 64, &RunOutputBatches);
  RegisterCeiling("dot_tile_step_output_k64", 64 * 64, &RunDotTileStepsWithOutput<64>);
  RegisterCeiling("dot_tile_step_output_k256", 64 * 256, &RunDotTileStepsWithOutput<256>);
  const auto register_tile_in_blocks = [](const char* name,
                                          const lowbit::internal::KernelImplementation& kernel) {
    RegisterCases("ceiling", name,
                  [&kernel](const Case& c) -> std::function<void()> {
                    return [tile = std::make_shared<TileInBlocks>(kernel, c.shape)] { (*tile)(); };
                  },
                  {{{64, 64, 64}, 1},
                   {{256, 256, 256}, 1},
                   {{1024, 1024, 1024}, 1},
                   {{2048, 2048, 2048}, 1}});
  };
  register_tile_in_blocks("vnni_tile_in_blocks", lowbit::internal::Avx512VnniKernel());
  if (__builtin_cpu_supports("avx512vpopcntdq")) {
    RegisterCeiling("vpandd_vpopcntd_vpaddd", 12 * 512, &RunPopcountSteps);
  }
  // Asking for the kernels asks the OS for the tile registers, where the CPU has them.
  const std::vector<lowbit::Kernel> kernels = lowbit::AvailableKernels();
  if (std::find(kernels.begin(), kernels.end(), lowbit::Kernel::kAmx) != kernels.end()) {
    RegisterCeiling("tdpbsud", 4 * 16 * 16 * 64, &RunAmxSteps<false>, {1, 2});
    RegisterCeiling("amx_tile_step", 4 * 16 * 16 * 64, &RunAmxSteps<true>, {1, 2});
    register_tile_in_blocks("amx_tile_in_blocks", lowbit::internal::AmxKernel());
  }
});

}  // namespace
}  // namespace lowbit_bench
