// Unpacking's vectorized half: per-ISA writers that run an OutputProgram over a block of final
// accumulators and store the results, bit for bit as the stages' scalar Eval would.
#ifndef LOWBIT_INTERNAL_OUTPUT_OUTPUT_H_
#define LOWBIT_INTERNAL_OUTPUT_OUTPUT_H_

#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/output/output_program.h"
#include "lowbit/internal/output/unpack.h"
#include "lowbit/public/context.h"

namespace lowbit {
namespace internal {

// `block` holds raw sums still owed `terms` (lowbit/internal/output/unpack.h), which the writer
// adds first, and, for requantized operands, `rescale` (in result coordinates; null if none), which
// it applies next.
using OutputWriter = void (*)(const OutputProgram& program, const AccumulatorBlock& block,
                              const OffsetTerms& terms, const Rescale* rescale,
                              const MatrixView& result);

// The writer of the kernel's ISA, or null where there is none (the scalar pipeline runs).
OutputWriter OutputWriterFor(Kernel kernel);

#if defined(__x86_64__)
void WriteOutputSse41(const OutputProgram& program, const AccumulatorBlock& block,
                      const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result);
void WriteOutputAvx2(const OutputProgram& program, const AccumulatorBlock& block,
                     const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result);
// Only where cpuinfo reports AVX-512 F and BW (the AVX-512 VNNI kernel's CPUs).
void WriteOutputAvx512(const OutputProgram& program, const AccumulatorBlock& block,
                       const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result);
#endif
#if defined(__aarch64__)
void WriteOutputNeon(const OutputProgram& program, const AccumulatorBlock& block,
                     const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result);
#endif

}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_OUTPUT_H_
