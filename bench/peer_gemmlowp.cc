// gemmlowp (Debian's headers, built here with -mavx2 -DGEMMLOWP_ENABLE_AVX2) on the same cases
// and pipeline as lowbit: gemmlowp/l8r8/<M>x<N>x<K>/threads:<t>.
#include <gemmlowp/public/gemmlowp.h>

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "bench/bench_common.h"

namespace lowbit_bench {
namespace {

struct GemmlowpProblem {
  explicit GemmlowpProblem(const Shape& s) : operands(s) {}
  Uint8Operands operands;
  gemmlowp::GemmContext context;
};

std::function<void()> SetUpGemmlowp(const Case& c) {
  const Shape& s = c.shape;
  auto problem = std::make_shared<GemmlowpProblem>(s);
  problem->context.set_max_num_threads(c.threads);
  return [problem, s] {
    const gemmlowp::MatrixMap<const std::uint8_t, gemmlowp::MapOrder::RowMajor> lhs(
        problem->operands.lhs.data(), s.rows, s.depth);
    const gemmlowp::MatrixMap<const std::uint8_t, gemmlowp::MapOrder::ColMajor> rhs(
        problem->operands.rhs.data(), s.depth, s.cols);
    gemmlowp::MatrixMap<std::uint8_t, gemmlowp::MapOrder::ColMajor> result(
        problem->operands.result.data(), s.rows, s.cols);
    gemmlowp::OutputStageQuantizeDownInt32ByFixedPoint quantize;
    quantize.result_fixedpoint_multiplier = 1 << 30;
    quantize.result_shift = 15;
    quantize.result_offset_after_shift = 128;
    const auto pipeline = std::make_tuple(quantize, gemmlowp::OutputStageSaturatingCastToUint8());
    gemmlowp::GemmWithOutputPipeline<std::uint8_t, std::uint8_t,
                                     gemmlowp::DefaultL8R8BitDepthParams>(
        &problem->context, lhs, rhs, &result, -128, -128, pipeline);
  };
}

const Registration registration([] { RegisterCases("gemmlowp", "l8r8", SetUpGemmlowp); });

}  // namespace
}  // namespace lowbit_bench
