// The output stages as Python classes, and a Python list of them as one run-time stage that keeps
// the library's vectorized writers (python/bindings.h, RuntimePipeline).
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "lowbit/meta/output_pipeline.h"
#include "python/bindings.h"

namespace lowbit {
namespace python {

void RuntimePipeline::Validate(int rows, int cols, const std::string&) const {
  for (std::size_t i = 0; i < stages.size(); ++i) {
    std::visit(
        [&](const auto& stage) {
          stage.Validate(rows, cols, "pipeline[" + std::to_string(i) + "]");
        },
        stages[i]);
  }
}

bool RuntimePipeline::Compile(internal::OutputProgram* program) const {
  for (const StageVariant& variant : stages) {
    const bool compiled = std::visit(
        [program](const auto& stage) {
          if constexpr (meta::HasCompile<std::decay_t<decltype(stage)>>::value) {
            return stage.Compile(program);
          } else {
            return false;
          }
        },
        variant);
    if (!compiled) return false;
  }
  return true;
}

std::int32_t RuntimePipeline::Eval(std::int32_t acc, int row, int col) const {
  for (const StageVariant& variant : stages) {
    acc = std::visit(
        [acc, row, col](const auto& stage) -> std::int32_t { return stage.Eval(acc, row, col); },
        variant);
  }
  return acc;
}

RuntimePipeline PipelineFromSequence(py::handle pipeline, ResultKind* result_kind,
                                     py::tuple* stage_objects) {
  if (!py::isinstance<py::list>(pipeline) && !py::isinstance<py::tuple>(pipeline)) {
    throw py::type_error("pipeline must be a list or tuple of lowbit stages, got " +
                         TypeName(pipeline));
  }
  *stage_objects = py::tuple(py::reinterpret_borrow<py::object>(pipeline));
  RuntimePipeline runtime;
  for (const py::handle item : *stage_objects) {
    if (!py::isinstance<PipelineStage>(item)) {
      throw py::type_error("pipeline[" + std::to_string(runtime.stages.size()) +
                           "] must be a lowbit output stage (lowbit.Clamp, ...), got " +
                           TypeName(item));
    }
    runtime.stages.push_back(py::cast<const PipelineStage&>(item).stage);
  }
  *result_kind = ResultKind::kInt32;
  if (runtime.stages.empty()) return runtime;
  const StageVariant& last = runtime.stages.back();
  if (std::holds_alternative<OutputStageSaturatingCastToUint8>(last)) {
    *result_kind = ResultKind::kSaturatingUint8;
  } else if (std::holds_alternative<OutputStageSaturatingCastToInt8>(last)) {
    *result_kind = ResultKind::kSaturatingInt8;
  } else if (std::holds_alternative<OutputStageSaturatingCastToInt16>(last)) {
    *result_kind = ResultKind::kSaturatingInt16;
  } else if (std::holds_alternative<OutputStageTruncatingCastToUint8>(last)) {
    *result_kind = ResultKind::kTruncatingUint8;
  }
  if (*result_kind != ResultKind::kInt32) runtime.stages.pop_back();
  return runtime;
}

namespace {

// One Python class per stage type; the tag only tells the classes apart.
template <typename Tag>
struct Bound : PipelineStage {
  Bound(StageVariant stage, py::dict fields) : PipelineStage{std::move(stage), std::move(fields)} {}
};

VectorMap<const std::int32_t> MapOf(const py::array_t<std::int32_t>& vector) {
  return VectorMap<const std::int32_t>(vector.data(), static_cast<int>(vector.size()));
}

// A stage constructor's conversions of its arguments, whose errors name `Class.field`.
struct Field {
  const char* owner;
  std::int32_t operator()(std::int64_t value, const char* field) const {
    return CheckedInt32(value, std::string(owner) + "." + field);
  }
  ChannelAxis Axis(const std::string& name) const {
    return AxisFromName(name, std::string(owner) + ".axis");
  }
  py::array_t<std::int32_t> Vector(py::handle object, const char* field) const {
    return Int32Vector(object, std::string(owner) + "." + field);
  }
};

template <typename Tag>
py::class_<Bound<Tag>, PipelineStage> StageClass(py::module_& module, const char* name,
                                                 const char* doc) {
  return py::class_<Bound<Tag>, PipelineStage>(module, name, doc);
}

struct QuantizedAddTag {};

}  // namespace

void DefineStages(py::module_& module) {
  py::class_<PipelineStage>(module, "Stage",
                            "An output stage (doc/output-pipeline.md); its constructor's "
                            "arguments are its attributes.")
      .def("__getattr__",
           [](const PipelineStage& stage, const std::string& name) -> py::object {
             if (!stage.fields.contains(name)) throw py::attribute_error(name);
             return stage.fields[name.c_str()];
           })
      .def("__repr__", [](py::handle self) {
        const auto& stage = py::cast<const PipelineStage&>(self);
        std::string text = TypeName(self);
        text += "(";
        bool first = true;
        for (const auto& [key, value] : stage.fields) {
          text += std::string(first ? "" : ", ") + std::string(py::str(key)) + "=" +
                  std::string(py::repr(value));
          first = false;
        }
        return text + ")";
      });

  using Vector = py::array_t<std::int32_t>;

  StageClass<OutputStageBiasAddition>(module, "BiasAddition", "acc + bias[channel]")
      .def(py::init([](py::handle bias, const std::string& axis) {
             const Field field{"BiasAddition"};
             Vector vector = field.Vector(bias, "bias");
             return Bound<OutputStageBiasAddition>(
                 OutputStageBiasAddition{MapOf(vector), field.Axis(axis)},
                 py::dict(py::arg("bias") = vector, py::arg("axis") = axis));
           }),
           py::arg("bias"), py::arg("axis"));

  StageClass<OutputStageQuantizeDownInt32ByFixedPoint>(
      module, "QuantizeDownInt32ByFixedPoint",
      "RDBPOT(SRDHM(acc, result_fixedpoint_multiplier), result_shift) + result_offset_after_shift")
      .def(py::init([](std::int64_t multiplier, std::int64_t shift, std::int64_t offset) {
             const Field field{"QuantizeDownInt32ByFixedPoint"};
             return Bound<OutputStageQuantizeDownInt32ByFixedPoint>(
                 OutputStageQuantizeDownInt32ByFixedPoint{
                     field(multiplier, "result_fixedpoint_multiplier"),
                     field(shift, "result_shift"), field(offset, "result_offset_after_shift")},
                 py::dict(py::arg("result_fixedpoint_multiplier") = multiplier,
                          py::arg("result_shift") = shift,
                          py::arg("result_offset_after_shift") = offset));
           }),
           py::arg("result_fixedpoint_multiplier"), py::arg("result_shift"),
           py::arg("result_offset_after_shift") = 0);

  StageClass<OutputStageQuantizeDownInt32ByFixedPointPerChannel>(
      module, "QuantizeDownInt32ByFixedPointPerChannel",
      "QuantizeDownInt32ByFixedPoint with one multiplier and shift per channel")
      .def(py::init([](py::handle multipliers, py::handle shifts, std::int64_t offset,
                       const std::string& axis) {
             const Field field{"QuantizeDownInt32ByFixedPointPerChannel"};
             Vector multiplier_vector = field.Vector(multipliers, "result_fixedpoint_multiplier");
             Vector shift_vector = field.Vector(shifts, "result_shift");
             return Bound<OutputStageQuantizeDownInt32ByFixedPointPerChannel>(
                 OutputStageQuantizeDownInt32ByFixedPointPerChannel{
                     MapOf(multiplier_vector), MapOf(shift_vector),
                     field(offset, "result_offset_after_shift"), field.Axis(axis)},
                 py::dict(py::arg("result_fixedpoint_multiplier") = multiplier_vector,
                          py::arg("result_shift") = shift_vector,
                          py::arg("result_offset_after_shift") = offset, py::arg("axis") = axis));
           }),
           py::arg("result_fixedpoint_multiplier"), py::arg("result_shift"),
           py::arg("result_offset_after_shift"), py::arg("axis"));

  StageClass<OutputStageScaleInt32ByFixedPointAndExponent>(
      module, "ScaleInt32ByFixedPointAndExponent",
      "RDBPOT(SRDHM(acc << max(e, 0), M), max(-e, 0)) + offset: TFLite's "
      "MultiplyByQuantizedMultiplier")
      .def(py::init([](std::int64_t multiplier, std::int64_t exponent, std::int64_t offset) {
             const Field field{"ScaleInt32ByFixedPointAndExponent"};
             return Bound<OutputStageScaleInt32ByFixedPointAndExponent>(
                 OutputStageScaleInt32ByFixedPointAndExponent{
                     field(multiplier, "result_fixedpoint_multiplier"),
                     field(exponent, "result_exponent"),
                     field(offset, "result_offset_after_exponent")},
                 py::dict(py::arg("result_fixedpoint_multiplier") = multiplier,
                          py::arg("result_exponent") = exponent,
                          py::arg("result_offset_after_exponent") = offset));
           }),
           py::arg("result_fixedpoint_multiplier"), py::arg("result_exponent"),
           py::arg("result_offset_after_exponent") = 0);

  StageClass<OutputStageScaleInt32ByFixedPointAndExponentPerChannel>(
      module, "ScaleInt32ByFixedPointAndExponentPerChannel",
      "ScaleInt32ByFixedPointAndExponent with one multiplier and exponent per channel")
      .def(
          py::init([](py::handle multipliers, py::handle exponents, std::int64_t offset,
                      const std::string& axis) {
            const Field field{"ScaleInt32ByFixedPointAndExponentPerChannel"};
            Vector multiplier_vector = field.Vector(multipliers, "result_fixedpoint_multiplier");
            Vector exponent_vector = field.Vector(exponents, "result_exponent");
            return Bound<OutputStageScaleInt32ByFixedPointAndExponentPerChannel>(
                OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
                    MapOf(multiplier_vector), MapOf(exponent_vector),
                    field(offset, "result_offset_after_exponent"), field.Axis(axis)},
                py::dict(py::arg("result_fixedpoint_multiplier") = multiplier_vector,
                         py::arg("result_exponent") = exponent_vector,
                         py::arg("result_offset_after_exponent") = offset, py::arg("axis") = axis));
          }),
          py::arg("result_fixedpoint_multiplier"), py::arg("result_exponent"),
          py::arg("result_offset_after_exponent"), py::arg("axis"));

  StageClass<OutputStageQuantizeDownInt32ToUint8Scale>(
      module, "QuantizeDownInt32ToUint8Scale",
      "RDBPOT((acc + result_offset) * result_mult_int, result_shift), wrapping: gemmlowp's "
      "legacy stage")
      .def(
          py::init([](std::int64_t offset, std::int64_t multiplier, std::int64_t shift) {
            const Field field{"QuantizeDownInt32ToUint8Scale"};
            return Bound<OutputStageQuantizeDownInt32ToUint8Scale>(
                OutputStageQuantizeDownInt32ToUint8Scale{field(offset, "result_offset"),
                                                         field(multiplier, "result_mult_int"),
                                                         field(shift, "result_shift")},
                py::dict(py::arg("result_offset") = offset, py::arg("result_mult_int") = multiplier,
                         py::arg("result_shift") = shift));
          }),
          py::arg("result_offset"), py::arg("result_mult_int"), py::arg("result_shift"));

  StageClass<OutputStageQuantizeDownInt32ToUint8ScalePerChannel>(
      module, "QuantizeDownInt32ToUint8ScalePerChannel",
      "QuantizeDownInt32ToUint8Scale with one offset and multiplier per channel")
      .def(py::init([](py::handle offsets, py::handle multipliers, std::int64_t shift,
                       const std::string& axis) {
             const Field field{"QuantizeDownInt32ToUint8ScalePerChannel"};
             Vector offset_vector = field.Vector(offsets, "result_offset");
             Vector multiplier_vector = field.Vector(multipliers, "result_mult_int");
             return Bound<OutputStageQuantizeDownInt32ToUint8ScalePerChannel>(
                 OutputStageQuantizeDownInt32ToUint8ScalePerChannel{
                     MapOf(offset_vector), MapOf(multiplier_vector), field(shift, "result_shift"),
                     field.Axis(axis)},
                 py::dict(py::arg("result_offset") = offset_vector,
                          py::arg("result_mult_int") = multiplier_vector,
                          py::arg("result_shift") = shift, py::arg("axis") = axis));
           }),
           py::arg("result_offset"), py::arg("result_mult_int"), py::arg("result_shift"),
           py::arg("axis"));

  StageClass<OutputStageShiftByPOT>(
      module, "ShiftByPOT",
      "acc * 2^exponent: saturating for exponent > 0, rounded to nearest ('nearest') or "
      "stochastically from (seed, row, col) ('stochastic') for exponent < 0")
      .def(py::init([](std::int64_t exponent, const std::string& rounding, std::int64_t seed) {
             const Field field{"ShiftByPOT"};
             if (rounding != "nearest" && rounding != "stochastic") {
               throw Error("ShiftByPOT.rounding",
                           "must be 'nearest' or 'stochastic', got '" + rounding + "'");
             }
             checks::CheckInRange("ShiftByPOT.seed", seed, 0,
                                  std::numeric_limits<std::uint32_t>::max());
             return Bound<OutputStageShiftByPOT>(
                 OutputStageShiftByPOT{
                     field(exponent, "exponent"),
                     rounding == "nearest" ? Rounding::kNearest : Rounding::kStochastic,
                     static_cast<std::uint32_t>(seed)},
                 py::dict(py::arg("exponent") = exponent, py::arg("rounding") = rounding,
                          py::arg("seed") = seed));
           }),
           py::arg("exponent"), py::arg("rounding") = "nearest", py::arg("seed") = 0);

  StageClass<OutputStageClamp>(module, "Clamp", "min(max(acc, min), max)")
      .def(py::init([](std::int64_t min, std::int64_t max) {
             const Field field{"Clamp"};
             return Bound<OutputStageClamp>(OutputStageClamp{field(min, "min"), field(max, "max")},
                                            py::dict(py::arg("min") = min, py::arg("max") = max));
           }),
           py::arg("min"), py::arg("max"));

  StageClass<OutputStageSaturatingCastToUint8>(
      module, "SaturatingCastToUint8", "Saturates to uint8; last in a pipeline, a uint8 result")
      .def(py::init([] {
        return Bound<OutputStageSaturatingCastToUint8>(OutputStageSaturatingCastToUint8{},
                                                       py::dict());
      }));
  StageClass<OutputStageSaturatingCastToInt8>(
      module, "SaturatingCastToInt8", "Saturates to int8; last in a pipeline, an int8 result")
      .def(py::init([] {
        return Bound<OutputStageSaturatingCastToInt8>(OutputStageSaturatingCastToInt8{},
                                                      py::dict());
      }));
  StageClass<OutputStageSaturatingCastToInt16>(
      module, "SaturatingCastToInt16", "Saturates to int16; last in a pipeline, an int16 result")
      .def(py::init([] {
        return Bound<OutputStageSaturatingCastToInt16>(OutputStageSaturatingCastToInt16{},
                                                       py::dict());
      }));
  StageClass<OutputStageTruncatingCastToUint8>(
      module, "TruncatingCastToUint8", "Keeps the low 8 bits; last in a pipeline, a uint8 result")
      .def(py::init([] {
        return Bound<OutputStageTruncatingCastToUint8>(OutputStageTruncatingCastToUint8{},
                                                       py::dict());
      }));

  StageClass<OutputStageTanh>(
      module, "Tanh",
      "zero + amplitude * tanh((acc - zero) / amplitude), gemmlowp's bits ('gemmlowp') or "
      "lowbit's rounded value ('accurate')")
      .def(py::init([](std::int64_t zero, std::int64_t amplitude, const std::string& arithmetic) {
             const Field field{"Tanh"};
             if (arithmetic != "gemmlowp" && arithmetic != "accurate") {
               throw Error("Tanh.arithmetic",
                           "must be 'gemmlowp' or 'accurate', got '" + arithmetic + "'");
             }
             return Bound<OutputStageTanh>(
                 OutputStageTanh{field(zero, "real_zero_as_int32"),
                                 field(amplitude, "real_amplitude_as_int32"),
                                 arithmetic == "gemmlowp" ? TanhArithmetic::kGemmlowp
                                                          : TanhArithmetic::kAccurate},
                 py::dict(py::arg("real_zero_as_int32") = zero,
                          py::arg("real_amplitude_as_int32") = amplitude,
                          py::arg("arithmetic") = arithmetic));
           }),
           py::arg("real_zero_as_int32"), py::arg("real_amplitude_as_int32"),
           py::arg("arithmetic") = "gemmlowp");

  StageClass<OutputStageLogistic>(module, "Logistic",
                                  "zero + amplitude * logistic((acc - zero) / amplitude), rounded")
      .def(py::init([](std::int64_t zero, std::int64_t amplitude) {
             const Field field{"Logistic"};
             return Bound<OutputStageLogistic>(
                 OutputStageLogistic{field(zero, "real_zero_as_int32"),
                                     field(amplitude, "real_amplitude_as_int32")},
                 py::dict(py::arg("real_zero_as_int32") = zero,
                          py::arg("real_amplitude_as_int32") = amplitude));
           }),
           py::arg("real_zero_as_int32"), py::arg("real_amplitude_as_int32"));

  StageClass<QuantizedAddTag>(
      module, "QuantizedAdd",
      "Adds `residual` (quantized as the plan's rhs) to the value reaching it (quantized as the "
      "plan's lhs), leaving the sum quantized as the plan's output (doc/quantization.md)")
      .def(py::init([](const QuantizedAddPlan& plan, py::handle residual_object) {
             const py::array residual = RequireArray(residual_object, "QuantizedAdd.residual");
             const py::dict fields(py::arg("plan") = plan, py::arg("residual") = residual);
             if (IsSignedByteArray(residual, "QuantizedAdd.residual")) {
               return Bound<QuantizedAddTag>(
                   MakeOutputStageQuantizedAdd(
                       plan, MatrixOf<std::int8_t>(residual, "QuantizedAdd.residual")),
                   fields);
             }
             return Bound<QuantizedAddTag>(
                 MakeOutputStageQuantizedAdd(
                     plan, MatrixOf<std::uint8_t>(residual, "QuantizedAdd.residual")),
                 fields);
           }),
           py::arg("plan"), py::arg("residual"));
}

}  // namespace python
}  // namespace lowbit
