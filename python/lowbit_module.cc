// The Python module `lowbit` (doc/python.md): the GEMM on numpy arrays, contexts, bit depths,
// lowbit::Error as lowbit.Error, and the accuracy sweep; stages and quantization have their files.
#include <pybind11/stl.h>

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "python/bindings.h"
#include "tools/accuracy.h"

namespace lowbit {
namespace python {
namespace {

constexpr std::array<std::pair<const char*, Kernel>, 7> kKernels = {{
    {"auto", Kernel::kAuto},
    {"reference", Kernel::kReference},
    {"sse41", Kernel::kSse41},
    {"avx2", Kernel::kAvx2},
    {"avx512vnni", Kernel::kAvx512Vnni},
    {"amx", Kernel::kAmx},
    {"neon", Kernel::kNeon},
}};

constexpr std::array<std::pair<const char*, BitDepthRounding>, 4> kRoundings = {{
    {"nearest", BitDepthRounding::kNearest},
    {"xorshift", BitDepthRounding::kXorshift},
    {"addmod", BitDepthRounding::kAddMod97},
    {"auto", BitDepthRounding::kAuto},
}};

constexpr std::array<std::pair<const char*, BitDepthMode>, 2> kModes = {{
    {"requantize", BitDepthMode::kRequantize},
    {"declared_range", BitDepthMode::kDeclaredRange},
}};

constexpr std::array<std::pair<const char*, accuracy::Data>, 2> kData = {{
    {"uniform", accuracy::Data::kUniform},
    {"clumped", accuracy::Data::kClumped},
}};

// The enumerator called `name` in `table`, or lowbit::Error naming `argument` with the choices.
template <typename Value, std::size_t Size>
Value FromName(const std::array<std::pair<const char*, Value>, Size>& table,
               const std::string& name, const std::string& argument) {
  std::string choices;
  for (const auto& [entry_name, value] : table) {
    if (name == entry_name) return value;
    choices += std::string(choices.empty() ? "" : ", ") + "'" + entry_name + "'";
  }
  throw Error(argument, "must be one of " + choices + ", got '" + name + "'");
}

template <typename Value, std::size_t Size>
const char* NameOf(const std::array<std::pair<const char*, Value>, Size>& table, Value value) {
  for (const auto& [name, entry] : table) {
    if (entry == value) return name;
  }
  return "unknown";
}

std::unique_ptr<Context> MakeContext(int threads, const std::string& kernel) {
  auto context = std::make_unique<Context>();
  context->set_max_num_threads(threads);
  context->set_kernel(FromName(kKernels, kernel, "kernel"));
  return context;
}

// The offsets of one operand: an integer, or a 1-D array of integers (kept in `storage`, which
// the returned Offsets points into).
Offsets OffsetsOf(py::handle object, const std::string& argument,
                  py::array_t<std::int32_t>* storage) {
  const py::array array = py::module_::import("numpy").attr("asarray")(object);
  if (array.ndim() == 0) {
    const char kind = array.dtype().kind();
    if (kind != 'i' && kind != 'u') {
      throw py::type_error(argument + " must be an int or a 1-D array of integers, got " +
                           TypeName(object));
    }
    const py::object value = array.attr("item")();
    constexpr std::int32_t kMin = std::numeric_limits<std::int32_t>::min();
    constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
    if (value < py::int_(kMin) || value > py::int_(kMax)) {
      throw Error(argument, "must be in [" + std::to_string(kMin) + ", " + std::to_string(kMax) +
                                "], got " + std::string(py::str(value)));
    }
    return py::cast<std::int32_t>(value);
  }
  *storage = Int32Vector(array, argument);
  return VectorMap<const std::int32_t>(storage->data(), static_cast<int>(storage->size()));
}

// A GEMM call's arguments, checked and converted.
struct GemmArguments {
  Context* context;
  py::array lhs, rhs;
  Offsets lhs_offset, rhs_offset;
  RuntimePipeline stages;
  const BitDepthParams* bit_depth;
  py::handle out;  // None for a new C-ordered result
};

// `out` checked as the result of a GEMM of this shape and Result type, or a new result.
template <typename Result>
py::array ResultArray(const GemmArguments& call) {
  const std::vector<py::ssize_t> shape = {call.lhs.shape(0), call.rhs.shape(1)};
  if (call.out.is_none()) return py::array_t<Result>(shape);
  const py::array out = RequireArray(call.out, "out");
  const py::dtype expected = py::dtype::of<Result>();
  if (!out.dtype().equal(expected)) {
    throw Error("out", "must have dtype " + std::string(py::str(py::handle(expected))) +
                           ", the pipeline's result type, got " +
                           std::string(py::str(out.dtype())));
  }
  if (out.ndim() != 2 || out.shape(0) != shape[0] || out.shape(1) != shape[1]) {
    throw Error("out", "must have shape (" + std::to_string(shape[0]) + ", " +
                           std::to_string(shape[1]) + "), lhs's rows by rhs's columns, got " +
                           std::string(py::str(out.attr("shape"))));
  }
  if (!out.writeable()) throw Error("out", "must be writable");
  return out;
}

template <typename Lhs, typename Rhs, typename Result, typename Pipeline>
py::array RunGemm(const GemmArguments& call, const Pipeline& pipeline) {
  py::array result = ResultArray<Result>(call);
  const Layout layout = LayoutOf(result, "out");
  MatrixMap<Result> result_map(static_cast<Result*>(result.mutable_data()), layout.rows,
                               layout.cols, layout.order, layout.stride);
  const MatrixMap<const Lhs> lhs = MatrixOf<Lhs>(call.lhs, "lhs");
  const MatrixMap<const Rhs> rhs = MatrixOf<Rhs>(call.rhs, "rhs");
  const py::gil_scoped_release release;
  if (call.bit_depth != nullptr) {
    GemmWithOutputPipeline(call.context, lhs, rhs, &result_map, call.lhs_offset, call.rhs_offset,
                           pipeline, *call.bit_depth);
  } else {
    GemmWithOutputPipeline(call.context, lhs, rhs, &result_map, call.lhs_offset, call.rhs_offset,
                           pipeline);
  }
  return result;
}

// The result's type, and the typed cast that ends the C++ pipeline, from the Python pipeline's
// last stage.
template <typename Lhs, typename Rhs>
py::array RunWithResultKind(const GemmArguments& call, ResultKind kind) {
  switch (kind) {
    case ResultKind::kSaturatingUint8:
      return RunGemm<Lhs, Rhs, std::uint8_t>(
          call, std::make_tuple(call.stages, OutputStageSaturatingCastToUint8{}));
    case ResultKind::kSaturatingInt8:
      return RunGemm<Lhs, Rhs, std::int8_t>(
          call, std::make_tuple(call.stages, OutputStageSaturatingCastToInt8{}));
    case ResultKind::kSaturatingInt16:
      return RunGemm<Lhs, Rhs, std::int16_t>(
          call, std::make_tuple(call.stages, OutputStageSaturatingCastToInt16{}));
    case ResultKind::kTruncatingUint8:
      return RunGemm<Lhs, Rhs, std::uint8_t>(
          call, std::make_tuple(call.stages, OutputStageTruncatingCastToUint8{}));
    case ResultKind::kInt32:
      break;
  }
  return RunGemm<Lhs, Rhs, std::int32_t>(call, std::make_tuple(call.stages));
}

py::array GemmOnArrays(py::handle lhs_object, py::handle rhs_object, py::handle lhs_offset_object,
                       py::handle rhs_offset_object, py::handle pipeline_object,
                       py::handle bit_depth_object, py::handle threads, py::handle kernel,
                       py::handle context_object, py::handle out) {
  const OperandArrays operands(lhs_object, rhs_object);
  const py::array& lhs = operands.lhs;
  const py::array& rhs = operands.rhs;
  const bool lhs_signed = operands.lhs_signed;
  const bool rhs_signed = operands.rhs_signed;
  py::array_t<std::int32_t> lhs_offset_storage, rhs_offset_storage;
  const Offsets lhs_offset = OffsetsOf(lhs_offset_object, "lhs_offset", &lhs_offset_storage);
  const Offsets rhs_offset = OffsetsOf(rhs_offset_object, "rhs_offset", &rhs_offset_storage);
  ResultKind kind;
  py::tuple stage_objects;
  RuntimePipeline stages = PipelineFromSequence(pipeline_object, &kind, &stage_objects);
  const BitDepthParams* bit_depth = nullptr;
  if (!bit_depth_object.is_none()) {
    if (!py::isinstance<BitDepthParams>(bit_depth_object)) {
      throw py::type_error("bit_depth must be a lowbit.BitDepthParams or None, got " +
                           TypeName(bit_depth_object));
    }
    bit_depth = &py::cast<const BitDepthParams&>(bit_depth_object);
  }
  const CallContext context(context_object, threads, kernel);
  const GemmArguments call{context.get(),     lhs,       rhs, lhs_offset, rhs_offset,
                           std::move(stages), bit_depth, out};
  if (lhs_signed) {
    return rhs_signed ? RunWithResultKind<std::int8_t, std::int8_t>(call, kind)
                      : RunWithResultKind<std::int8_t, std::uint8_t>(call, kind);
  }
  return rhs_signed ? RunWithResultKind<std::uint8_t, std::int8_t>(call, kind)
                    : RunWithResultKind<std::uint8_t, std::uint8_t>(call, kind);
}

py::array StringArray(const std::vector<std::string>& values) {
  return py::module_::import("numpy").attr("array")(py::cast(values), "str");
}

py::dict AccuracySweep(const std::vector<py::tuple>& settings, const std::vector<int>& depths,
                       const std::vector<std::string>& data, int trials, int rows, int cols,
                       std::uint32_t seed, py::handle context_object) {
  accuracy::SweepOptions options;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    const std::string name = "settings[" + std::to_string(i) + "]";
    if (settings[i].size() != 3) {
      throw Error(name, "must be (lhs_bits, rhs_bits, rounding), got " +
                            std::to_string(settings[i].size()) + " items");
    }
    const int lhs_bits = py::cast<int>(settings[i][0]);
    const int rhs_bits = py::cast<int>(settings[i][1]);
    checks::CheckInRange(name + ".lhs_bits", lhs_bits, 1, 8);
    checks::CheckInRange(name + ".rhs_bits", rhs_bits, 1, 8);
    options.settings.push_back(
        {lhs_bits, rhs_bits,
         FromName(kRoundings, py::cast<std::string>(settings[i][2]), name + ".rounding")});
  }
  for (std::size_t i = 0; i < depths.size(); ++i) {
    checks::CheckInRange("depths[" + std::to_string(i) + "]", depths[i], 1,
                         std::numeric_limits<int>::max());
  }
  for (std::size_t i = 0; i < data.size(); ++i) {
    options.data.push_back(FromName(kData, data[i], "data[" + std::to_string(i) + "]"));
  }
  options.depths = depths;
  checks::CheckInRange("trials", trials, 1, std::numeric_limits<int>::max());
  checks::CheckInRange("rows", rows, 1, std::numeric_limits<int>::max());
  checks::CheckInRange("cols", cols, 1, std::numeric_limits<int>::max());
  options.trials = trials;
  options.rows = rows;
  options.cols = cols;
  options.seed = seed;
  const CallContext context(context_object, py::none(), py::none());
  std::vector<accuracy::Point> points;
  {
    const py::gil_scoped_release release;
    points = accuracy::Sweep(context.get(), options);
  }
  std::vector<int> lhs_bits, rhs_bits, depth;
  std::vector<std::string> rounding, data_names;
  std::vector<double> bias, bias_standard_error, rms, max;
  std::vector<std::int64_t> exact_range;
  for (const accuracy::Point& point : points) {
    lhs_bits.push_back(point.setting.lhs_bits);
    rhs_bits.push_back(point.setting.rhs_bits);
    rounding.push_back(NameOf(kRoundings, point.setting.rounding));
    data_names.push_back(accuracy::DataName(point.data));
    depth.push_back(point.depth);
    bias.push_back(point.bias);
    bias_standard_error.push_back(point.bias_standard_error);
    rms.push_back(point.rms);
    max.push_back(point.max);
    exact_range.push_back(point.exact_range);
  }
  py::dict result;
  result["data"] = StringArray(data_names);
  result["depth"] = ArrayOf(depth);
  result["lhs_bits"] = ArrayOf(lhs_bits);
  result["rhs_bits"] = ArrayOf(rhs_bits);
  result["rounding"] = StringArray(rounding);
  result["bias"] = ArrayOf(bias);
  result["bias_standard_error"] = ArrayOf(bias_standard_error);
  result["rms"] = ArrayOf(rms);
  result["max"] = ArrayOf(max);
  result["exact_range"] = ArrayOf(exact_range);
  return result;
}

void DefineErrors(py::module_& module) {
  static py::exception<Error> error_type(module, "Error", PyExc_ValueError);
  error_type.doc() =
      "lowbit's one error: the message is 'lowbit: <argument>: <rule>', and `argument` names the "
      "offending argument.";
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const Error& error) {
      py::object instance = py::handle(error_type.ptr())(error.what());
      instance.attr("argument") = error.argument();
      PyErr_SetObject(error_type.ptr(), instance.ptr());
    }
  });
}

void DefineContext(py::module_& module) {
  py::class_<Context>(module, "Context",
                      "Threads, kernel, scratch memory and thread pool, reused by the calls given "
                      "it (context=...). Python threads sharing one take turns.")
      .def(py::init(&MakeContext), py::arg("threads") = 1, py::arg("kernel") = "auto")
      .def_property(
          "threads", &Context::max_num_threads,
          [](Context& context, int threads) {
            const py::gil_scoped_release release;  // waits for a GEMM running on the context
            context.set_max_num_threads(threads);
          })
      .def_property(
          "kernel", [](const Context& context) { return NameOf(kKernels, context.kernel()); },
          [](Context& context, const std::string& name) {
            const Kernel kernel = FromName(kKernels, name, "kernel");
            const py::gil_scoped_release release;
            context.set_kernel(kernel);
          })
      .def_property_readonly("resolved_kernel", [](const Context& context) {
        return NameOf(kKernels, context.ResolvedKernel());
      });
}

void DefineBitDepth(py::module_& module) {
  py::class_<BitDepthParams>(module, "BitDepthParams",
                             "Operands narrower than 8 bits (doc/less-than-8-bit.md).")
      .def(py::init([](int lhs_bits, int rhs_bits, const std::string& rounding, std::uint32_t seed,
                       const std::string& mode) {
             return BitDepthParams{lhs_bits, rhs_bits,
                                   FromName(kRoundings, rounding, "BitDepthParams.rounding"), seed,
                                   FromName(kModes, mode, "BitDepthParams.mode")};
           }),
           py::arg("lhs_bits") = 8, py::arg("rhs_bits") = 8, py::arg("rounding") = "auto",
           py::arg("seed") = 0, py::arg("mode") = "requantize")
      .def_readonly("lhs_bits", &BitDepthParams::lhs_bits)
      .def_readonly("rhs_bits", &BitDepthParams::rhs_bits)
      .def_readonly("seed", &BitDepthParams::seed)
      .def_property_readonly(
          "rounding",
          [](const BitDepthParams& params) { return NameOf(kRoundings, params.rounding); })
      .def_property_readonly(
          "mode", [](const BitDepthParams& params) { return NameOf(kModes, params.mode); })
      .def("__repr__", [](const BitDepthParams& params) {
        return "BitDepthParams(lhs_bits=" + std::to_string(params.lhs_bits) +
               ", rhs_bits=" + std::to_string(params.rhs_bits) + ", rounding='" +
               NameOf(kRoundings, params.rounding) + "', seed=" + std::to_string(params.seed) +
               ", mode='" + NameOf(kModes, params.mode) + "')";
      });
}

}  // namespace

CallContext::CallContext(py::handle context, py::handle threads, py::handle kernel) {
  if (context.is_none()) {
    owned_ = MakeContext(threads.is_none() ? 1 : py::cast<int>(threads),
                         kernel.is_none() ? "auto" : py::cast<std::string>(kernel));
    context_ = owned_.get();
    return;
  }
  if (!py::isinstance<Context>(context)) {
    throw py::type_error("context must be a lowbit.Context or None, got " + TypeName(context));
  }
  if (!threads.is_none())
    throw Error("threads", "must be None when a context is given: set context.threads");
  if (!kernel.is_none())
    throw Error("kernel", "must be None when a context is given: set context.kernel");
  context_ = &py::cast<Context&>(context);
}

}  // namespace python
}  // namespace lowbit

PYBIND11_MODULE(lowbit, module) {
  using namespace lowbit::python;
  namespace lb = lowbit;
  module.doc() = "lowbit: low-precision GEMM on numpy arrays (doc/python.md)";
  DefineErrors(module);
  DefineContext(module);
  DefineBitDepth(module);
  // Quantization first: the QuantizedAdd stage's signature names its plan class.
  DefineQuantization(module);
  DefineStages(module);

  module.def(
      "version", [] { return std::string(lb::Version()); },
      "The linked library's version, 'major.minor.patch'.");
  module.def(
      "available_kernels",
      [] {
        std::vector<std::string> names;
        for (lb::Kernel kernel : lb::AvailableKernels()) names.push_back(NameOf(kKernels, kernel));
        return names;
      },
      "The kernels this CPU can run, fastest last.");
  module.def("gemm", &GemmOnArrays, py::arg("lhs"), py::arg("rhs"), py::kw_only(),
             py::arg("lhs_offset") = 0, py::arg("rhs_offset") = 0,
             py::arg("pipeline") = py::tuple(), py::arg("bit_depth") = py::none(),
             py::arg("threads") = py::none(), py::arg("kernel") = py::none(),
             py::arg("context") = py::none(), py::arg("out") = py::none(),
             "pipeline((lhs + lhs_offset) @ (rhs + rhs_offset)) for uint8 or int8 2-D arrays, "
             "lhs rows x depth and rhs depth x cols; a new array (or `out`, filled) whose dtype "
             "is the pipeline's last cast's (int32 without one).");
  module.def("accuracy_sweep", &AccuracySweep, py::arg("settings"), py::kw_only(),
             py::arg("depths"), py::arg("data") = std::vector<std::string>{"uniform", "clumped"},
             py::arg("trials") = 64, py::arg("rows") = 4, py::arg("cols") = 4, py::arg("seed") = 1,
             py::arg("context") = py::none(),
             "Requantized GEMMs against the exact 8-bit result (doc/less-than-8-bit.md): a dict of "
             "arrays, one entry per data, depth and setting in that nesting order.");
}
