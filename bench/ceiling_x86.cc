// The instruction ceilings that the AVX2 targets are set against, measured in the same run as
// the GEMMs: ceiling/<mix>/1024x1024x1024/threads:1 executes as many multiply-adds as a 1024^3
// GEMM through nothing but a kernel's arithmetic (no loads, packing or output), with the same
// GOPS counter. This host's speed swings by 10 to 25% within seconds (doc/performance.md), so a
// GEMM's fraction of the ceiling measured alongside it says more than its GOPS alone.
#include <cstdint>
#include <functional>

#include "bench/bench_common.h"

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

// Registers a mix whose step does `multiply_adds` multiply-adds, for the 1024^3 case.
void RegisterCeiling(const char* mix, std::int64_t multiply_adds, void (*run)(std::int64_t)) {
  const Case c{{1024, 1024, 1024}, 1};
  const std::int64_t total = static_cast<std::int64_t>(c.shape.rows) * c.shape.cols * c.shape.depth;
  const std::int64_t steps = (total + multiply_adds - 1) / multiply_adds;
  RegisterCases("ceiling", mix, [steps, run](const Case&) { return [steps, run] { run(steps); }; },
                {c});
}

const Registration registration([] {
  if (!__builtin_cpu_supports("avx2")) return;
  RegisterCeiling("vpmaddwd_vpaddd", 12 * 16, &RunPairSteps);
  RegisterCeiling("vpmaddubsw_vpaddw", 12 * 32, &RunByteSteps);
  RegisterCeiling("vpmaddubsw_vpmaddwd_vpaddd", 12 * 32, &RunWidenedByteSteps);
});

}  // namespace
}  // namespace lowbit_bench
