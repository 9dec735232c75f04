// The quantization helpers on numpy arrays (doc/quantization.md): params, multipliers, quantize
// and dequantize, the quantized add, the quantized GEMM and the fully-connected layer.
#include <pybind11/stl.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python/bindings.h"

namespace lowbit {
namespace python {
namespace {

QuantizationMode ModeFromName(const std::string& name) {
  if (name == "asymmetric") return QuantizationMode::kAsymmetric;
  if (name == "symmetric") return QuantizationMode::kSymmetric;
  throw Error("mode", "must be 'asymmetric' or 'symmetric', got '" + name + "'");
}

FusedActivation ActivationFromName(const std::string& name) {
  if (name == "none") return FusedActivation::kNone;
  if (name == "relu") return FusedActivation::kRelu;
  if (name == "relu6") return FusedActivation::kRelu6;
  throw Error("activation", "must be 'none', 'relu' or 'relu6', got '" + name + "'");
}

// The is-signed flag of a uint8 or int8 dtype given as anything numpy.dtype takes.
bool IsSignedByteDtype(py::handle dtype_object, const std::string& argument) {
  const py::dtype dtype = py::dtype::from_args(py::reinterpret_borrow<py::object>(dtype_object));
  if (dtype.kind() == 'u' && dtype.itemsize() == 1) return false;
  if (dtype.kind() == 'i' && dtype.itemsize() == 1) return true;
  throw Error(argument, "must be uint8 or int8, got " + std::string(py::str(py::handle(dtype))));
}

std::string ParamsRepr(const QuantizationParams& params) {
  return "QuantizationParams(scale=" + std::string(py::repr(py::float_(params.scale))) +
         ", zero_point=" + std::to_string(params.zero_point) + ")";
}

std::string TypeRepr(const QuantizedType& type) {
  return std::string("QuantizedType(is_signed=") + (type.is_signed ? "True" : "False") +
         ", bits=" + std::to_string(type.bits) + ")";
}

// A C-contiguous view or copy of an array, for the helpers that walk buffers element by element.
py::array Contiguous(const py::array& array) {
  return py::module_::import("numpy").attr("ascontiguousarray")(array);
}

template <typename Scalar>
const Scalar* DataOf(const py::array& array) {
  return static_cast<const Scalar*>(array.data());
}

py::array Quantize(py::handle values_object, const QuantizationParams& params,
                   const QuantizedType& type) {
  const py::module_ numpy = py::module_::import("numpy");
  const py::array values = numpy.attr("asarray")(values_object);
  const char kind = values.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u') {
    throw Error("values", "must be an array of real numbers, got dtype " +
                              std::string(py::str(values.dtype())));
  }
  const py::array_t<float, py::array::c_style | py::array::forcecast> floats(values);
  const std::vector<py::ssize_t> shape(floats.shape(), floats.shape() + floats.ndim());
  const auto count = static_cast<std::size_t>(floats.size());
  if (type.is_signed) {
    py::array_t<std::int8_t> quantized(shape);
    lowbit::Quantize(floats.data(), count, params, quantized.mutable_data(), type);
    return std::move(quantized);
  }
  py::array_t<std::uint8_t> quantized(shape);
  lowbit::Quantize(floats.data(), count, params, quantized.mutable_data(), type);
  return std::move(quantized);
}

py::array Dequantize(py::handle quantized_object, const QuantizationParams& params) {
  const py::array quantized = Contiguous(RequireArray(quantized_object, "quantized"));
  const bool is_signed = IsSignedByteArray(quantized, "quantized");
  py::array_t<float> values(
      std::vector<py::ssize_t>(quantized.shape(), quantized.shape() + quantized.ndim()));
  const auto count = static_cast<std::size_t>(quantized.size());
  if (is_signed) {
    lowbit::Dequantize(DataOf<std::int8_t>(quantized), count, params, values.mutable_data());
  } else {
    lowbit::Dequantize(DataOf<std::uint8_t>(quantized), count, params, values.mutable_data());
  }
  return std::move(values);
}

template <typename Lhs, typename Rhs, typename Output>
void RunQuantizedAdd(const QuantizedAddPlan& plan, const py::array& lhs, const py::array& rhs,
                     py::array* output) {
  const auto* lhs_data = DataOf<Lhs>(lhs);
  const auto* rhs_data = DataOf<Rhs>(rhs);
  auto* output_data = static_cast<Output*>(output->mutable_data());
  if (lhs.ndim() == 2) {
    lowbit::QuantizedAdd(plan, lhs_data, rhs_data, static_cast<int>(lhs.shape(0)),
                         static_cast<int>(lhs.shape(1)), output_data);
  } else {
    lowbit::QuantizedAdd(plan, lhs_data, rhs_data, static_cast<std::size_t>(lhs.size()),
                         output_data);
  }
}

template <typename Lhs, typename Rhs>
py::array QuantizedAddTyped(const QuantizedAddPlan& plan, const py::array& lhs,
                            const py::array& rhs) {
  const std::vector<py::ssize_t> shape(lhs.shape(), lhs.shape() + lhs.ndim());
  if (plan.output_type.is_signed) {
    py::array output = py::array_t<std::int8_t>(shape);
    RunQuantizedAdd<Lhs, Rhs, std::int8_t>(plan, lhs, rhs, &output);
    return output;
  }
  py::array output = py::array_t<std::uint8_t>(shape);
  RunQuantizedAdd<Lhs, Rhs, std::uint8_t>(plan, lhs, rhs, &output);
  return output;
}

// lhs + rhs elementwise: 2-D arrays as rows x cols matrices (per-axis plans), any other shape
// as a flat buffer (per-tensor plans).
py::array QuantizedAddOnArrays(const QuantizedAddPlan& plan, py::handle lhs_object,
                               py::handle rhs_object) {
  const py::array lhs = Contiguous(RequireArray(lhs_object, "lhs"));
  const py::array rhs = Contiguous(RequireArray(rhs_object, "rhs"));
  const bool lhs_signed = IsSignedByteArray(lhs, "lhs");
  const bool rhs_signed = IsSignedByteArray(rhs, "rhs");
  if (!lhs.attr("shape").equal(rhs.attr("shape"))) {
    throw Error("rhs", "must have lhs's shape " + std::string(py::str(lhs.attr("shape"))) +
                           ", got " + std::string(py::str(rhs.attr("shape"))));
  }
  if (lhs.ndim() == 2 && (lhs.shape(0) > std::numeric_limits<int>::max() ||
                          lhs.shape(1) > std::numeric_limits<int>::max())) {
    throw Error("lhs", "must have at most " + std::to_string(std::numeric_limits<int>::max()) +
                           " rows and columns");
  }
  if (lhs_signed) {
    return rhs_signed ? QuantizedAddTyped<std::int8_t, std::int8_t>(plan, lhs, rhs)
                      : QuantizedAddTyped<std::int8_t, std::uint8_t>(plan, lhs, rhs);
  }
  return rhs_signed ? QuantizedAddTyped<std::uint8_t, std::int8_t>(plan, lhs, rhs)
                    : QuantizedAddTyped<std::uint8_t, std::uint8_t>(plan, lhs, rhs);
}

template <typename Lhs, typename Rhs, typename Result>
py::array RunQuantizedGemm(Context* context, const py::array& lhs,
                           const QuantizationParams& lhs_params, const py::array& rhs,
                           const QuantizationParams& rhs_params,
                           const QuantizationParams& result_params, FusedActivation activation) {
  const QuantizedMatrix<const Lhs> lhs_matrix{MatrixOf<Lhs>(lhs, "lhs"), lhs_params};
  const QuantizedMatrix<const Rhs> rhs_matrix{MatrixOf<Rhs>(rhs, "rhs"), rhs_params};
  py::array_t<Result> result({lhs.shape(0), rhs.shape(1)});
  QuantizedMatrix<Result> result_matrix{
      MatrixMap<Result>(result.mutable_data(), static_cast<int>(result.shape(0)),
                        static_cast<int>(result.shape(1)), Order::kRowMajor),
      result_params};
  const py::gil_scoped_release release;
  lowbit::QuantizedGemm(context, lhs_matrix, rhs_matrix, &result_matrix, activation);
  return std::move(result);
}

template <typename Lhs, typename Rhs>
py::array QuantizedGemmWithResult(bool result_signed, Context* context, const py::array& lhs,
                                  const QuantizationParams& lhs_params, const py::array& rhs,
                                  const QuantizationParams& rhs_params,
                                  const QuantizationParams& result_params,
                                  FusedActivation activation) {
  return result_signed ? RunQuantizedGemm<Lhs, Rhs, std::int8_t>(
                             context, lhs, lhs_params, rhs, rhs_params, result_params, activation)
                       : RunQuantizedGemm<Lhs, Rhs, std::uint8_t>(
                             context, lhs, lhs_params, rhs, rhs_params, result_params, activation);
}

py::array QuantizedGemmOnArrays(py::handle lhs_object, py::handle rhs_object,
                                const QuantizationParams& lhs_params,
                                const QuantizationParams& rhs_params,
                                const QuantizationParams& result_params, py::handle result_dtype,
                                const std::string& activation_name, py::handle threads,
                                py::handle kernel, py::handle context_object) {
  const OperandArrays operands(lhs_object, rhs_object);
  const py::array& lhs = operands.lhs;
  const py::array& rhs = operands.rhs;
  const bool lhs_signed = operands.lhs_signed;
  const bool rhs_signed = operands.rhs_signed;
  const bool result_signed = IsSignedByteDtype(result_dtype, "result_dtype");
  const FusedActivation activation = ActivationFromName(activation_name);
  const CallContext context(context_object, threads, kernel);
  if (lhs_signed) {
    return rhs_signed ? QuantizedGemmWithResult<std::int8_t, std::int8_t>(
                            result_signed, context.get(), lhs, lhs_params, rhs, rhs_params,
                            result_params, activation)
                      : QuantizedGemmWithResult<std::int8_t, std::uint8_t>(
                            result_signed, context.get(), lhs, lhs_params, rhs, rhs_params,
                            result_params, activation);
  }
  return rhs_signed
             ? QuantizedGemmWithResult<std::uint8_t, std::int8_t>(result_signed, context.get(), lhs,
                                                                  lhs_params, rhs, rhs_params,
                                                                  result_params, activation)
             : QuantizedGemmWithResult<std::uint8_t, std::uint8_t>(result_signed, context.get(),
                                                                   lhs, lhs_params, rhs, rhs_params,
                                                                   result_params, activation);
}

// A fully-connected layer and the context it runs on by default: the one its weights were
// packed on, whose kernel Run needs.
struct FullyConnected {
  std::unique_ptr<QuantizedFullyConnected> layer;
  py::object context;
};

// The Context object a layer keeps: the one given, or a new one.
py::object LayerContext(py::handle context) {
  if (context.is_none()) return py::module_::import("lowbit").attr("Context")();
  if (!py::isinstance<Context>(context)) {
    throw py::type_error("context must be a lowbit.Context or None, got " + TypeName(context));
  }
  return py::reinterpret_borrow<py::object>(context);
}

template <typename Input, typename Output>
py::array RunLayer(const QuantizedFullyConnected& layer, Context* context, const py::array& input) {
  const MatrixMap<const Input> input_map = MatrixOf<Input>(input, "input");
  py::array_t<Output> output({input.shape(0), static_cast<py::ssize_t>(layer.outputs())});
  MatrixMap<Output> output_map(output.mutable_data(), static_cast<int>(output.shape(0)),
                               static_cast<int>(output.shape(1)), Order::kRowMajor);
  const py::gil_scoped_release release;
  layer.Run(context, input_map, &output_map);
  return std::move(output);
}

py::array RunFullyConnected(const FullyConnected& self, py::handle input_object,
                            py::handle output_dtype, py::handle context_object) {
  const py::array input = RequireArray(input_object, "input");
  const bool input_signed = IsSignedByteArray(input, "input");
  LayoutOf(input, "input");
  const bool output_signed = IsSignedByteDtype(output_dtype, "output_dtype");
  const py::object context_owner =
      context_object.is_none() ? self.context : LayerContext(context_object);
  Context* context = &py::cast<Context&>(context_owner);
  if (input_signed) {
    return output_signed ? RunLayer<std::int8_t, std::int8_t>(*self.layer, context, input)
                         : RunLayer<std::int8_t, std::uint8_t>(*self.layer, context, input);
  }
  return output_signed ? RunLayer<std::uint8_t, std::int8_t>(*self.layer, context, input)
                       : RunLayer<std::uint8_t, std::uint8_t>(*self.layer, context, input);
}

// A C-contiguous float32 copy of a 2-D array of reals (weights) or 1-D (bias).
py::array_t<float> FloatArray(py::handle object, int ndim, const std::string& argument) {
  const py::array array = py::module_::import("numpy").attr("asarray")(object);
  const char kind = array.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u') {
    throw Error(argument, "must be an array of real numbers, got dtype " +
                              std::string(py::str(array.dtype())));
  }
  if (array.ndim() != ndim) {
    throw Error(argument, "must be a " + std::to_string(ndim) + "-D array, got " +
                              std::to_string(array.ndim()) + " dimensions");
  }
  return py::array_t<float, py::array::c_style | py::array::forcecast>(array);
}

void CheckEntries(const py::array& array, py::ssize_t expected, const char* argument,
                  const char* rule) {
  if (array.size() != expected) {
    throw Error(argument, std::string(rule) + " (" + std::to_string(expected) + "), got " +
                              std::to_string(array.size()) + " entries");
  }
}

FullyConnected FullyConnectedFromFloat(py::handle weights_object, py::handle bias_object,
                                       const QuantizationParams& input,
                                       const QuantizedType& input_type,
                                       const QuantizationParams& output,
                                       const QuantizedType& output_type,
                                       const std::string& activation, py::handle context_object) {
  const py::array_t<float> weights = FloatArray(weights_object, 2, "weights");
  py::array_t<float> bias;
  if (!bias_object.is_none()) {
    bias = FloatArray(bias_object, 1, "bias");
    CheckEntries(bias, weights.shape(0), "bias", "must have one entry per output");
  }
  FullyConnected self{nullptr, LayerContext(context_object)};
  self.layer = std::make_unique<QuantizedFullyConnected>(
      &py::cast<Context&>(self.context), weights.data(),
      bias_object.is_none() ? nullptr : bias.data(), static_cast<int>(weights.shape(1)),
      static_cast<int>(weights.shape(0)), input, input_type, output, output_type,
      ActivationFromName(activation));
  return self;
}

FullyConnected FullyConnectedFromInt8(py::handle weights_object, py::handle scales_object,
                                      py::handle bias_object, const QuantizationParams& input,
                                      const QuantizedType& input_type,
                                      const QuantizationParams& output,
                                      const QuantizedType& output_type,
                                      const std::string& activation, py::handle context_object) {
  const py::array weights = Contiguous(RequireArray(weights_object, "weights"));
  if (!IsSignedByteArray(weights, "weights")) {
    throw Error("weights", "must have dtype int8, got uint8");
  }
  if (weights.ndim() != 2) {
    throw Error("weights", "must be a 2-D array (outputs x inputs), got " +
                               std::to_string(weights.ndim()) + " dimensions");
  }
  const std::vector<double> scales = py::cast<std::vector<double>>(scales_object);
  py::array_t<std::int32_t> bias;
  if (!bias_object.is_none()) {
    bias = Int32Vector(bias_object, "bias");
    CheckEntries(bias, weights.shape(0), "bias", "must have one entry per output");
  }
  FullyConnected self{nullptr, LayerContext(context_object)};
  self.layer = std::make_unique<QuantizedFullyConnected>(
      &py::cast<Context&>(self.context), DataOf<std::int8_t>(weights), scales,
      bias_object.is_none() ? nullptr : bias.data(), static_cast<int>(weights.shape(1)), input,
      input_type, output, output_type, ActivationFromName(activation));
  return self;
}

void DefineTypes(py::module_& module) {
  py::class_<QuantizationParams>(module, "QuantizationParams", "real = scale * (q - zero_point)")
      .def(py::init([](double scale, std::int64_t zero_point) {
             return QuantizationParams{scale,
                                       CheckedInt32(zero_point, "QuantizationParams.zero_point")};
           }),
           py::arg("scale"), py::arg("zero_point"))
      .def_readonly("scale", &QuantizationParams::scale)
      .def_readonly("zero_point", &QuantizationParams::zero_point)
      .def("__repr__", &ParamsRepr);

  py::class_<QuantizedType>(
      module, "QuantizedType",
      "The integers a quantized value may take: bits in [2, 8], signed or not")
      .def(py::init([](bool is_signed, int bits) {
             return QuantizedType{is_signed, bits};
           }),
           py::arg("is_signed"), py::arg("bits"))
      .def_static("uint8", &QuantizedType::Uint8)
      .def_static("int8", &QuantizedType::Int8)
      .def_static("unsigned", &QuantizedType::Unsigned, py::arg("bits"))
      .def_static("signed", &QuantizedType::Signed, py::arg("bits"))
      .def_readonly("is_signed", &QuantizedType::is_signed)
      .def_readonly("bits", &QuantizedType::bits)
      .def_property_readonly("min", &QuantizedType::min)
      .def_property_readonly("max", &QuantizedType::max)
      .def("__repr__", &TypeRepr);

  py::class_<FixedPointMultiplier>(module, "FixedPointMultiplier", "multiplier * 2^(exponent - 31)")
      .def_readonly("multiplier", &FixedPointMultiplier::multiplier)
      .def_readonly("exponent", &FixedPointMultiplier::exponent)
      .def("__repr__", [](const FixedPointMultiplier& value) {
        return "FixedPointMultiplier(multiplier=" + std::to_string(value.multiplier) +
               ", exponent=" + std::to_string(value.exponent) + ")";
      });
  py::class_<FixedPointMultiplierAndShift>(module, "FixedPointMultiplierAndShift",
                                           "multiplier * 2^(-31 - right_shift)")
      .def_readonly("multiplier", &FixedPointMultiplierAndShift::multiplier)
      .def_readonly("right_shift", &FixedPointMultiplierAndShift::right_shift)
      .def("__repr__", [](const FixedPointMultiplierAndShift& value) {
        return "FixedPointMultiplierAndShift(multiplier=" + std::to_string(value.multiplier) +
               ", right_shift=" + std::to_string(value.right_shift) + ")";
      });
}

void DefineQuantizedAdd(py::module_& module) {
  py::class_<QuantizedAddInput>(module, "QuantizedAddInput",
                                "One input of the quantized add: one params (per tensor) or one "
                                "per row (axis 'row') or column ('col')")
      .def(py::init([](py::handle params, const QuantizedType& type, const std::string& axis) {
             QuantizedAddInput input;
             input.type = type;
             input.axis = AxisFromName(axis, "QuantizedAddInput.axis");
             if (py::isinstance<QuantizationParams>(params)) {
               input.params.push_back(py::cast<QuantizationParams>(params));
             } else {
               input.params = py::cast<std::vector<QuantizationParams>>(params);
             }
             return input;
           }),
           py::arg("params"), py::arg("type") = QuantizedType::Uint8(), py::arg("axis") = "row")
      .def_readonly("params", &QuantizedAddInput::params)
      .def_readonly("type", &QuantizedAddInput::type)
      .def_property_readonly("axis",
                             [](const QuantizedAddInput& input) { return AxisName(input.axis); });

  py::class_<QuantizedAddPlan>(module, "QuantizedAddPlan",
                               "The quantized add's integers, made by make_quantized_add_plan")
      .def_readonly("lhs_type", &QuantizedAddPlan::lhs_type)
      .def_readonly("rhs_type", &QuantizedAddPlan::rhs_type)
      .def_readonly("output_type", &QuantizedAddPlan::output_type)
      .def_readonly("fractional_bits", &QuantizedAddPlan::fractional_bits)
      .def_readonly("low_bits", &QuantizedAddPlan::low_bits)
      .def_readonly("output_multiplier", &QuantizedAddPlan::output_multiplier)
      .def_readonly("output_exponent", &QuantizedAddPlan::output_exponent)
      .def_readonly("output_zero_point", &QuantizedAddPlan::output_zero_point)
      .def_readonly("output_min", &QuantizedAddPlan::output_min)
      .def_readonly("output_max", &QuantizedAddPlan::output_max);

  module.def(
      "make_quantized_add_plan",
      [](const QuantizedAddInput& lhs, const QuantizedAddInput& rhs,
         const QuantizationParams& output, const QuantizedType& output_type,
         std::optional<std::int64_t> output_min, std::optional<std::int64_t> output_max) {
        return MakeQuantizedAddPlan(
            lhs, rhs, output, output_type,
            CheckedInt32(output_min.value_or(output_type.min()), "output_min"),
            CheckedInt32(output_max.value_or(output_type.max()), "output_max"));
      },
      py::arg("lhs"), py::arg("rhs"), py::arg("output"),
      py::arg("output_type") = QuantizedType::Uint8(), py::kw_only(),
      py::arg("output_min") = py::none(), py::arg("output_max") = py::none(),
      "The plan for out = lhs + rhs (real values) quantized with `output`, clamped to "
      "[output_min, output_max] (the type's range by default).");
  module.def("quantized_add", &QuantizedAddOnArrays, py::arg("plan"), py::arg("lhs"),
             py::arg("rhs"),
             "lhs + rhs elementwise with the plan's integer arithmetic: a new array of the "
             "plan's output type.");
}

void DefineQuantizedGemm(py::module_& module) {
  py::class_<QuantizedGemmPipeline>(module, "QuantizedGemmPipeline",
                                    "The offsets and stages of a GEMM of quantized matrices")
      .def_readonly("lhs", &QuantizedGemmPipeline::lhs)
      .def_readonly("rhs", &QuantizedGemmPipeline::rhs)
      .def_readonly("result", &QuantizedGemmPipeline::result)
      .def_readonly("lhs_offset", &QuantizedGemmPipeline::lhs_offset)
      .def_readonly("rhs_offset", &QuantizedGemmPipeline::rhs_offset)
      .def(
          "stages",
          [](const QuantizedGemmPipeline& pipeline, py::handle result_dtype) {
            const py::module_ lowbit = py::module_::import("lowbit");
            const auto& requantize = pipeline.requantize;
            return py::make_tuple(
                lowbit.attr("ScaleInt32ByFixedPointAndExponent")(
                    requantize.result_fixedpoint_multiplier, requantize.result_exponent,
                    requantize.result_offset_after_exponent),
                lowbit.attr("Clamp")(pipeline.clamp.min, pipeline.clamp.max),
                IsSignedByteDtype(result_dtype, "result_dtype")
                    ? lowbit.attr("SaturatingCastToInt8")()
                    : lowbit.attr("SaturatingCastToUint8")());
          },
          py::arg("result_dtype") = "uint8",
          "The requantization, the clamp and the cast, for lowbit.gemm's pipeline.");

  module.def(
      "make_quantized_gemm_pipeline",
      [](const QuantizationParams& lhs, const QuantizationParams& rhs,
         const QuantizationParams& result, const QuantizedType& result_type,
         const std::string& activation) {
        return MakeQuantizedGemmPipeline(lhs, rhs, result, result_type,
                                         ActivationFromName(activation));
      },
      py::arg("lhs"), py::arg("rhs"), py::arg("result"),
      py::arg("result_type") = QuantizedType::Uint8(), py::arg("activation") = "none");

  module.def("quantized_gemm", &QuantizedGemmOnArrays, py::arg("lhs"), py::arg("rhs"),
             py::kw_only(), py::arg("lhs_params"), py::arg("rhs_params"), py::arg("result_params"),
             py::arg("result_dtype") = "uint8", py::arg("activation") = "none",
             py::arg("threads") = py::none(), py::arg("kernel") = py::none(),
             py::arg("context") = py::none(),
             "lhs @ rhs in real terms, quantized with result_params: a new uint8 or int8 array.");

  py::class_<FullyConnected>(module, "QuantizedFullyConnected",
                             "output = activation(input @ weights.T + bias), int8 per-channel "
                             "weights packed once")
      .def(py::init(&FullyConnectedFromFloat), py::arg("weights"), py::arg("bias"), py::kw_only(),
           py::arg("input_params"), py::arg("input_type") = QuantizedType::Uint8(),
           py::arg("output_params"), py::arg("output_type") = QuantizedType::Uint8(),
           py::arg("activation") = "none", py::arg("context") = py::none())
      .def_static("from_quantized", &FullyConnectedFromInt8, py::arg("weights"),
                  py::arg("weight_scales"), py::arg("bias"), py::kw_only(), py::arg("input_params"),
                  py::arg("input_type") = QuantizedType::Uint8(), py::arg("output_params"),
                  py::arg("output_type") = QuantizedType::Uint8(), py::arg("activation") = "none",
                  py::arg("context") = py::none(),
                  "From int8 weights (outputs x inputs, zero point 0), one scale per output "
                  "and an int32 bias (or None).")
      .def("run", &RunFullyConnected, py::arg("input"), py::kw_only(),
           py::arg("output_dtype") = "uint8", py::arg("context") = py::none(),
           "The layer on each row of `input` (batch x inputs): a batch x outputs array.")
      .def_property_readonly("inputs",
                             [](const FullyConnected& self) { return self.layer->inputs(); })
      .def_property_readonly("outputs",
                             [](const FullyConnected& self) { return self.layer->outputs(); })
      .def_property_readonly(
          "quantized_weights",
          [](const FullyConnected& self) {
            py::array_t<std::int8_t> weights = ArrayOf(self.layer->quantized_weights());
            return weights.reshape({self.layer->outputs(), self.layer->inputs()});
          })
      .def_property_readonly("weight_params",
                             [](const FullyConnected& self) { return self.layer->weight_params(); })
      .def_property_readonly("bias",
                             [](const FullyConnected& self) { return ArrayOf(self.layer->bias()); })
      .def_readonly("context", &FullyConnected::context);
}

}  // namespace

void DefineQuantization(py::module_& module) {
  DefineTypes(module);

  module.def(
      "choose_quantization_params",
      [](double min, double max, const QuantizedType& type, const std::string& mode) {
        return ChooseQuantizationParams(min, max, type, ModeFromName(mode));
      },
      py::arg("min"), py::arg("max"), py::arg("type") = QuantizedType::Uint8(),
      py::arg("mode") = "asymmetric",
      "The params that cover [min, max], widened to contain 0, in `type`.");
  module.def(
      "choose_quantization_params_per_channel",
      [](const std::vector<float>& min, const std::vector<float>& max, const QuantizedType& type,
         const std::string& mode) {
        return ChooseQuantizationParamsPerChannel(min, max, type, ModeFromName(mode));
      },
      py::arg("min"), py::arg("max"), py::arg("type") = QuantizedType::Int8(),
      py::arg("mode") = "symmetric", "One QuantizationParams per channel, from min[c] and max[c].");
  module.def("quantize_multiplier", &QuantizeMultiplier, py::arg("real_multiplier"),
             "A positive real multiplier as multiplier * 2^(exponent - 31): the parameters of "
             "ScaleInt32ByFixedPointAndExponent.");
  module.def("quantize_multiplier_smaller_than_one", &QuantizeMultiplierSmallerThanOne,
             py::arg("real_multiplier"),
             "A multiplier below 1 as the parameters of QuantizeDownInt32ByFixedPoint.");
  module.def(
      "quantize_multipliers",
      [](const std::vector<double>& real_multipliers) {
        const FixedPointMultipliers multipliers = QuantizeMultipliers(real_multipliers);
        return py::make_tuple(ArrayOf(multipliers.multipliers), ArrayOf(multipliers.exponents));
      },
      py::arg("real_multipliers"),
      "(multipliers, exponents) as int32 arrays: the parameters of "
      "ScaleInt32ByFixedPointAndExponentPerChannel.");
  module.def("quantize", &Quantize, py::arg("values"), py::arg("params"),
             py::arg("type") = QuantizedType::Uint8(),
             "clamp(zero_point + round(values / scale)) as float32 values are quantized: a new "
             "uint8 or int8 array (by type.is_signed) of values' shape.");
  module.def("dequantize", &Dequantize, py::arg("quantized"), py::arg("params"),
             "scale * (quantized - zero_point): a new float32 array.");

  DefineQuantizedAdd(module);
  DefineQuantizedGemm(module);
}

}  // namespace python
}  // namespace lowbit
