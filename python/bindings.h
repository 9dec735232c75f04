// What the module's source files share: numpy arrays as lowbit maps and vectors, checked with
// lowbit::Error messages, and the pipeline stages as run-time values (python/stages.cc).
#ifndef LOWBIT_PYTHON_BINDINGS_H_
#define LOWBIT_PYTHON_BINDINGS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "lowbit/lowbit.h"

namespace lowbit {
namespace python {

namespace py = pybind11;

// The name of an object's type, for TypeError messages.
std::string TypeName(py::handle object);

// A 1-D numpy array holding `values`.
template <typename Value>
py::array_t<Value> ArrayOf(const std::vector<Value>& values) {
  py::array_t<Value> array(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), array.mutable_data());
  return array;
}

// Throws TypeError unless `object` is a numpy array: lists are not converted, so that a dtype is
// never guessed.
py::array RequireArray(py::handle object, const std::string& argument);

// The dtype of a uint8 or int8 array as an is-signed flag; throws lowbit::Error naming
// `argument` for any other dtype.
bool IsSignedByteArray(const py::array& array, const std::string& argument);

// How a 2-D array lies in memory, as a MatrixMap takes it.
struct Layout {
  int rows;
  int cols;
  Order order;
  int stride;
};

// The layout of a 2-D array read without a copy: C order is row-major, Fortran order
// column-major, and a slice of either keeps its parent's stride. Throws lowbit::Error naming
// `argument` for another dimension count or no axis of unit stride.
Layout LayoutOf(const py::array& array, const std::string& argument);

// A GEMM's two operands, checked in the order a caller's mistakes should be reported, before any
// other argument is converted: numpy arrays, uint8 or int8, with a layout a MatrixMap can take.
struct OperandArrays {
  OperandArrays(py::handle lhs_object, py::handle rhs_object);
  py::array lhs;
  py::array rhs;
  bool lhs_signed;
  bool rhs_signed;
};

// The array as a matrix map (Scalar its dtype), valid while `array` lives.
template <typename Scalar>
MatrixMap<const Scalar> MatrixOf(const py::array& array, const std::string& argument) {
  const Layout layout = LayoutOf(array, argument);
  return MatrixMap<const Scalar>(static_cast<const Scalar*>(array.data()), layout.rows, layout.cols,
                                 layout.order, layout.stride);
}

// A contiguous, read-only int32 copy of a 1-D array (or list) of integers whose values all fit
// int32. Throws lowbit::Error naming `argument` for another dtype kind (floats, strings),
// dimension count or an out-of-range value.
py::array_t<std::int32_t> Int32Vector(py::handle object, const std::string& argument);

// A Python int as an int32, with lowbit's range message naming `argument`.
std::int32_t CheckedInt32(std::int64_t value, const std::string& argument);

// "row" or "col" as a ChannelAxis; anything else throws lowbit::Error naming `argument`.
ChannelAxis AxisFromName(const std::string& name, const std::string& argument);
const char* AxisName(ChannelAxis axis);

// Every built-in stage, as the pipeline a Python list becomes holds it.
using StageVariant =
    std::variant<OutputStageBiasAddition, OutputStageQuantizeDownInt32ByFixedPoint,
                 OutputStageQuantizeDownInt32ByFixedPointPerChannel,
                 OutputStageScaleInt32ByFixedPointAndExponent,
                 OutputStageScaleInt32ByFixedPointAndExponentPerChannel,
                 OutputStageQuantizeDownInt32ToUint8Scale,
                 OutputStageQuantizeDownInt32ToUint8ScalePerChannel, OutputStageShiftByPOT,
                 OutputStageClamp, OutputStageSaturatingCastToUint8,
                 OutputStageSaturatingCastToInt8, OutputStageSaturatingCastToInt16,
                 OutputStageTruncatingCastToUint8, OutputStageTanh, OutputStageLogistic,
                 OutputStageQuantizedAdd<std::uint8_t>, OutputStageQuantizedAdd<std::int8_t>>;

// A Python stage object: the C++ stage, and its constructor's arguments as the object shows them
// (its attributes and repr). The per-channel arrays among them are the memory the stage's
// VectorMaps point into, kept alive by the object.
struct PipelineStage {
  StageVariant stage;
  py::dict fields;
};

// The stages of a Python pipeline but a final cast, run as one stage: each stage's Compile when
// all have one (so that the library's vectorized writers run the pipeline), each stage's Eval
// otherwise. The final cast, when there is one, follows as a typed stage and sets the result's
// dtype, as in a C++ pipeline.
struct RuntimePipeline {
  std::vector<StageVariant> stages;

  // Names each stage by its position in the Python list, as a C++ tuple's stages are named.
  void Validate(int rows, int cols, const std::string& name) const;
  bool Compile(internal::OutputProgram* program) const;
  std::int32_t Eval(std::int32_t acc, int row, int col) const;
};

// The type of the result a pipeline's last stage gives.
enum class ResultKind {
  kInt32,
  kSaturatingUint8,
  kSaturatingInt8,
  kSaturatingInt16,
  kTruncatingUint8
};

// A list or tuple of stage objects as the runtime stages and the kind of result. The stages
// point into memory their objects own: `*stage_objects` holds the objects for the call, whatever
// another thread does to the list meanwhile. Throws TypeError for an item that is not a stage.
RuntimePipeline PipelineFromSequence(py::handle pipeline, ResultKind* result_kind,
                                     py::tuple* stage_objects);

// The module's parts, each defined in its own file.
void DefineStages(py::module_& module);
void DefineQuantization(py::module_& module);

// The Context a call runs on: the one given (`threads` and `kernel` must then be None), or one
// made for the call with `threads` and `kernel`, None meaning 1 and "auto".
class CallContext {
 public:
  CallContext(py::handle context, py::handle threads, py::handle kernel);
  Context* get() const { return context_; }

 private:
  std::unique_ptr<Context> owned_;
  Context* context_;
};

}  // namespace python
}  // namespace lowbit

#endif  // LOWBIT_PYTHON_BINDINGS_H_
