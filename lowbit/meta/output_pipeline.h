// Compile-time fusion of an output pipeline (a std::tuple of stages) into one function applied
// per accumulator, plus the checks that run on every stage before any work is done.
#ifndef LOWBIT_META_OUTPUT_PIPELINE_H_
#define LOWBIT_META_OUTPUT_PIPELINE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/output/output_program.h"
#include "lowbit/public/map.h"

namespace lowbit {
namespace meta {

/// The type a pipeline produces from an int32 accumulator: each stage's Eval return type feeds
/// the next stage. An empty pipeline produces int32.
template <typename Pipeline, typename Input = std::int32_t>
struct PipelineOutput;
template <typename Input>
struct PipelineOutput<std::tuple<>, Input> {
  using type = Input;
};
template <typename First, typename... Rest, typename Input>
struct PipelineOutput<std::tuple<First, Rest...>, Input> {
  using type =
      typename PipelineOutput<std::tuple<Rest...>, decltype(std::declval<const First&>().Eval(
                                                       std::declval<Input>(), 0, 0))>::type;
};

template <std::size_t Index = 0, typename Pipeline, typename Value>
inline auto EvalPipeline(const Pipeline& pipeline, Value value, int row, int col) {
  if constexpr (Index == std::tuple_size<Pipeline>::value) {
    return value;
  } else {
    return EvalPipeline<Index + 1>(pipeline, std::get<Index>(pipeline).Eval(value, row, col), row,
                                   col);
  }
}

/// Validate is optional for custom stages: a stage without parameters has nothing to check.
template <typename Stage, typename = void>
struct HasValidate : std::false_type {};
template <typename Stage>
struct HasValidate<Stage, decltype(std::declval<const Stage&>().Validate(
                              0, 0, std::declval<const std::string&>()))> : std::true_type {};

/// Throws lowbit::Error naming "pipeline[i].field" for an input of the stage that lies in the
/// result's memory: blocks of the result are written while later blocks still read it.
struct InputNotInResultCheck {
  const internal::MatrixView& result;
  const std::string& owner;

  template <typename Scalar>
  void operator()(const char* field, const VectorMap<Scalar>& vector) const {
    internal::CheckNotInResult(
        result, owner, field, vector.data(),
        sizeof(Scalar) * static_cast<std::size_t>(std::max(vector.size(), 0)));
  }
  template <typename Scalar>
  void operator()(const char* field, const MatrixMap<Scalar>& matrix) const {
    internal::CheckNotInResult(result, owner, field, matrix.data(),
                               internal::StoredBytes(matrix.rows(), matrix.cols(), matrix.order(),
                                                     matrix.stride(), sizeof(Scalar)));
  }
};

/// A stage that reads caller memory as it runs (per-channel vectors, a residual operand) names
/// it with VisitInputs(visit), calling visit("field", map) for each VectorMap or MatrixMap.
template <typename Stage, typename = void>
struct HasVisitInputs : std::false_type {};
template <typename Stage>
struct HasVisitInputs<Stage, decltype(std::declval<const Stage&>().VisitInputs(
                                 std::declval<const InputNotInResultCheck&>()))> : std::true_type {
};

/// Throws lowbit::Error naming "pipeline[i].field" for the first stage whose parameters break
/// its rule for the result, or that reads memory inside the result.
template <std::size_t Index = 0, typename Pipeline>
void ValidatePipeline(const Pipeline& pipeline, const internal::MatrixView& result) {
  if constexpr (Index < std::tuple_size<Pipeline>::value) {
    using Stage = std::tuple_element_t<Index, Pipeline>;
    if constexpr (HasValidate<Stage>::value || HasVisitInputs<Stage>::value) {
      // Built once per stage position: built on every call, it took 1% of a 64^3 GEMM.
      static const std::string name = "pipeline[" + std::to_string(Index) + "]";
      const Stage& stage = std::get<Index>(pipeline);
      if constexpr (HasValidate<Stage>::value) stage.Validate(result.rows, result.cols, name);
      if constexpr (HasVisitInputs<Stage>::value) {
        stage.VisitInputs(InputNotInResultCheck{result, name});
      }
    }
    ValidatePipeline<Index + 1>(pipeline, result);
  }
}

/// Compile is optional too: without it a stage runs on the scalar Eval path.
template <typename Stage, typename = void>
struct HasCompile : std::false_type {};
template <typename Stage>
struct HasCompile<Stage, decltype(static_cast<void>(std::declval<const Stage&>().Compile(
                             std::declval<internal::OutputProgram*>())))> : std::true_type {};

/// Describes the pipeline as an OutputProgram; false when a stage has no compiled form.
template <std::size_t Index = 0, typename Pipeline>
bool CompileOutputProgram(const Pipeline& pipeline, internal::OutputProgram* program) {
  if constexpr (Index == std::tuple_size<Pipeline>::value) {
    return true;
  } else {
    using Stage = std::tuple_element_t<Index, Pipeline>;
    if constexpr (HasCompile<Stage>::value) {
      return std::get<Index>(pipeline).Compile(program) &&
             CompileOutputProgram<Index + 1>(pipeline, program);
    } else {
      return false;
    }
  }
}

}  // namespace meta
}  // namespace lowbit

#endif  // LOWBIT_META_OUTPUT_PIPELINE_H_
