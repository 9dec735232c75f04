// The GEMM entry points: result = pipeline((lhs + lhs_offset) * (rhs + rhs_offset)), for uint8
// or int8 operands (optionally narrower than 8 bits: lowbit/public/bit_depth.h) and uint8, int8,
// int16 or int32 results (doc/design.md, "What a GEMM computes"). Every argument is checked before
// any result entry is written.
#ifndef LOWBIT_PUBLIC_GEMM_H_
#define LOWBIT_PUBLIC_GEMM_H_

#include <cstdint>
#include <tuple>
#include <type_traits>

#include "lowbit/internal/driver/bit_depth.h"
#include "lowbit/internal/driver/driver.h"
#include "lowbit/meta/output_pipeline.h"
#include "lowbit/public/bit_depth.h"
#include "lowbit/public/context.h"
#include "lowbit/public/error.h"
#include "lowbit/public/map.h"
#include "lowbit/public/output_stages.h"
#include "lowbit/public/prepacked.h"

namespace lowbit {

namespace gemm_detail {

template <typename Scalar>
constexpr bool kIsOperandScalar = std::is_same<std::remove_const_t<Scalar>, std::uint8_t>::value ||
                                  std::is_same<std::remove_const_t<Scalar>, std::int8_t>::value;

/// Runs the fused pipeline over one block of accumulators and stores the results, walking the
/// block in the result's storage order so that stores are sequential.
template <typename ResultScalar, typename Pipeline>
struct ResultWriter {
  const Pipeline& pipeline;
  const MatrixMap<ResultScalar>& result;

  static void Consume(const void* closure, const internal::AccumulatorBlock& block) {
    const auto& self = *static_cast<const ResultWriter*>(closure);
    const bool row_major = self.result.order() == Order::kRowMajor;
    // Lines are result rows (row-major) or columns, each `length` entries long.
    const int lines = row_major ? block.rows : block.cols;
    const int length = row_major ? block.cols : block.rows;
    const std::ptrdiff_t line_step = row_major ? block.row_stride : block.col_stride;
    const std::ptrdiff_t entry_step = row_major ? block.col_stride : block.row_stride;
    for (int line = 0; line < lines; ++line) {
      const std::int32_t* acc = block.data + line * line_step;
      const int first_row = block.row_start + (row_major ? line : 0);
      const int first_col = block.col_start + (row_major ? 0 : line);
      ResultScalar* out = &self.result(first_row, first_col);
      for (int i = 0; i < length; ++i) {
        out[i] =
            meta::EvalPipeline(self.pipeline, acc[i * entry_step], first_row + (row_major ? 0 : i),
                               first_col + (row_major ? i : 0));
      }
    }
  }
};

}  // namespace gemm_detail

namespace gemm_detail {

/// Every entry point's work, with the rhs either a matrix (prepacked_rhs null) or prepacked, and
/// operands of 8 bits (bit_depth null) or narrower.
template <typename LhsScalar, typename ResultScalar, typename... Stages>
void Run(Context* context, const MatrixMap<LhsScalar>& lhs, const internal::MatrixView& rhs,
         const PrepackedRhs* prepacked_rhs, MatrixMap<ResultScalar>* result,
         const Offsets& lhs_offset, const Offsets& rhs_offset,
         const std::tuple<Stages...>& pipeline, const BitDepthParams* bit_depth) {
  static_assert(kIsOperandScalar<LhsScalar>, "lhs must be uint8_t or int8_t");
  static_assert(!std::is_const<ResultScalar>::value, "the result map must be writable");
  using PipelineResult = typename meta::PipelineOutput<std::tuple<Stages...>>::type;
  static_assert(std::is_same<PipelineResult, ResultScalar>::value,
                "the output pipeline must produce the result's scalar type: end it with a cast "
                "stage (e.g. OutputStageSaturatingCastToUint8 for a uint8 result), or use an "
                "int32 result");
  if (result == nullptr) throw Error("result", "must not be null");
  if (context == nullptr) throw Error("context", "must not be null");
  // Before the checks, so that no other thread changes the context's kernel in between.
  const internal::ContextUse context_use(*context);
  const internal::MatrixView lhs_view = internal::ViewOf(lhs);
  const internal::MatrixView result_view = internal::ViewOf(*result);
  const internal::PackedOperand* packed_rhs =
      prepacked_rhs != nullptr ? &prepacked_rhs->packed() : nullptr;
  internal::ValidateGemmArguments(*context, lhs_view, rhs, packed_rhs, result_view, lhs_offset,
                                  rhs_offset);
  internal::ValidateBitDepthArguments(bit_depth, lhs_view, rhs, prepacked_rhs);
  meta::ValidatePipeline(pipeline, result_view);
  if (result->rows() == 0 || result->cols() == 0) return;

  const ResultWriter<ResultScalar, std::tuple<Stages...>> writer{pipeline, *result};
  internal::OutputProgram program;
  const bool compiled = meta::CompileOutputProgram(pipeline, &program);
  const internal::ResultTarget target{result_view, compiled ? &program : nullptr,
                                      &decltype(writer)::Consume, &writer};
  if (bit_depth != nullptr) {
    internal::RunBitDepthGemm(*context, lhs_view, rhs, prepacked_rhs, lhs_offset, rhs_offset,
                              *bit_depth, target);
  } else {
    internal::RunGemm(*context, lhs_view,
                      packed_rhs != nullptr ? internal::ViewOf(*packed_rhs) : rhs, packed_rhs,
                      lhs_offset, rhs_offset, target);
  }
}

}  // namespace gemm_detail

/// result = pipeline((lhs + lhs_offset) * (rhs + rhs_offset)). The offsets are scalars or one
/// value per lhs row / rhs column. Throws lowbit::Error, before writing anything, for bad input.
template <typename LhsScalar, typename RhsScalar, typename ResultScalar, typename... Stages>
void GemmWithOutputPipeline(Context* context, const MatrixMap<LhsScalar>& lhs,
                            const MatrixMap<RhsScalar>& rhs, MatrixMap<ResultScalar>* result,
                            const Offsets& lhs_offset, const Offsets& rhs_offset,
                            const std::tuple<Stages...>& pipeline) {
  static_assert(gemm_detail::kIsOperandScalar<RhsScalar>, "rhs must be uint8_t or int8_t");
  gemm_detail::Run(context, lhs, internal::ViewOf(rhs), nullptr, result, lhs_offset, rhs_offset,
                   pipeline, nullptr);
}

/// The same with an rhs packed once (lowbit/public/prepacked.h) on a context running the same
/// kernel.
template <typename LhsScalar, typename ResultScalar, typename... Stages>
void GemmWithOutputPipeline(Context* context, const MatrixMap<LhsScalar>& lhs,
                            const PrepackedRhs& rhs, MatrixMap<ResultScalar>* result,
                            const Offsets& lhs_offset, const Offsets& rhs_offset,
                            const std::tuple<Stages...>& pipeline) {
  gemm_detail::Run(context, lhs, rhs.view(), &rhs, result, lhs_offset, rhs_offset, pipeline,
                   nullptr);
}

/// With narrow operands (lowbit/public/bit_depth.h, doc/less-than-8-bit.md): in kRequantize mode
/// the result approximates the 8-bit result pipeline((lhs + lhs_offset) * (rhs + rhs_offset)); in
/// kDeclaredRange mode it is exact. The rhs is a MatrixMap or a PrepackedRhs packed with
/// matching params.
template <typename LhsScalar, typename RhsScalar, typename ResultScalar, typename... Stages>
void GemmWithOutputPipeline(Context* context, const MatrixMap<LhsScalar>& lhs,
                            const MatrixMap<RhsScalar>& rhs, MatrixMap<ResultScalar>* result,
                            const Offsets& lhs_offset, const Offsets& rhs_offset,
                            const std::tuple<Stages...>& pipeline,
                            const BitDepthParams& bit_depth) {
  static_assert(gemm_detail::kIsOperandScalar<RhsScalar>, "rhs must be uint8_t or int8_t");
  gemm_detail::Run(context, lhs, internal::ViewOf(rhs), nullptr, result, lhs_offset, rhs_offset,
                   pipeline, &bit_depth);
}

template <typename LhsScalar, typename ResultScalar, typename... Stages>
void GemmWithOutputPipeline(Context* context, const MatrixMap<LhsScalar>& lhs,
                            const PrepackedRhs& rhs, MatrixMap<ResultScalar>* result,
                            const Offsets& lhs_offset, const Offsets& rhs_offset,
                            const std::tuple<Stages...>& pipeline,
                            const BitDepthParams& bit_depth) {
  gemm_detail::Run(context, lhs, rhs.view(), &rhs, result, lhs_offset, rhs_offset, pipeline,
                   &bit_depth);
}

/// The int32 accumulators themselves (an empty pipeline); Rhs is a MatrixMap or a PrepackedRhs.
template <typename LhsScalar, typename Rhs>
void Gemm(Context* context, const MatrixMap<LhsScalar>& lhs, const Rhs& rhs,
          MatrixMap<std::int32_t>* result, const Offsets& lhs_offset, const Offsets& rhs_offset) {
  GemmWithOutputPipeline(context, lhs, rhs, result, lhs_offset, rhs_offset, std::tuple<>());
}

/// The int32 accumulators of a GEMM with narrow operands; Rhs is a MatrixMap or a PrepackedRhs.
template <typename LhsScalar, typename Rhs>
void Gemm(Context* context, const MatrixMap<LhsScalar>& lhs, const Rhs& rhs,
          MatrixMap<std::int32_t>* result, const Offsets& lhs_offset, const Offsets& rhs_offset,
          const BitDepthParams& bit_depth) {
  GemmWithOutputPipeline(context, lhs, rhs, result, lhs_offset, rhs_offset, std::tuple<>(),
                         bit_depth);
}

/// gemmlowp's classic uint8 GEMM, its bits: saturate_uint8(RoundingDivideByPOT((acc +
/// result_offset) * result_mult_int, result_shift)), the sum and the product wrapping in int32.
template <typename LhsScalar, typename RhsScalar>
void Gemm(Context* context, const MatrixMap<LhsScalar>& lhs, const MatrixMap<RhsScalar>& rhs,
          MatrixMap<std::uint8_t>* result, const Offsets& lhs_offset, const Offsets& rhs_offset,
          std::int32_t result_offset, std::int32_t result_mult_int, int result_shift) {
  GemmWithOutputPipeline(
      context, lhs, rhs, result, lhs_offset, rhs_offset,
      std::make_tuple(
          OutputStageQuantizeDownInt32ToUint8Scale{result_offset, result_mult_int, result_shift},
          OutputStageSaturatingCastToUint8{}));
}

}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_GEMM_H_
