// numpy arrays as lowbit's maps and vectors (python/bindings.h), checked with lowbit::Error's
// messages so that the module's own checks read like the library's.
#include <cstdint>
#include <limits>
#include <string>

#include "python/bindings.h"

namespace lowbit {
namespace python {

std::string TypeName(py::handle object) { return py::str(object.get_type().attr("__name__")); }

namespace {

std::string DtypeName(const py::array& array) { return py::str(array.dtype()); }

// The element step of `array` along `axis`, when it is a whole number of elements.
bool StepInElements(const py::array& array, int axis, std::int64_t* step) {
  const std::int64_t bytes = array.strides(axis);
  if (bytes % array.itemsize() != 0) return false;
  *step = bytes / array.itemsize();
  return true;
}

// The stride of a rows x cols array stored in lines of `length` entries along one axis, the
// lines `line_step` apart, or -1 when the array cannot be read that way. A line of one entry has
// no step to check, and a single line no stride (its length serves).
std::int64_t LineStride(std::int64_t lines, std::int64_t length, bool has_entry_step,
                        std::int64_t entry_step, bool has_line_step, std::int64_t line_step) {
  if (length > 1 && (!has_entry_step || entry_step != 1)) return -1;
  if (lines <= 1) return length;
  if (!has_line_step || line_step < length) return -1;
  return line_step;
}

}  // namespace

py::array RequireArray(py::handle object, const std::string& argument) {
  if (!py::isinstance<py::array>(object)) {
    throw py::type_error(argument + " must be a numpy.ndarray, got " + TypeName(object));
  }
  return py::reinterpret_borrow<py::array>(object);
}

bool IsSignedByteArray(const py::array& array, const std::string& argument) {
  const py::dtype dtype = array.dtype();
  if (dtype.kind() == 'u' && dtype.itemsize() == 1) return false;
  if (dtype.kind() == 'i' && dtype.itemsize() == 1) return true;
  throw Error(argument, "must have dtype uint8 or int8, got " + DtypeName(array));
}

OperandArrays::OperandArrays(py::handle lhs_object, py::handle rhs_object)
    : lhs(RequireArray(lhs_object, "lhs")),
      rhs(RequireArray(rhs_object, "rhs")),
      lhs_signed(IsSignedByteArray(lhs, "lhs")),
      rhs_signed(IsSignedByteArray(rhs, "rhs")) {
  LayoutOf(lhs, "lhs");
  LayoutOf(rhs, "rhs");
}

Layout LayoutOf(const py::array& array, const std::string& argument) {
  if (array.ndim() != 2) {
    throw Error(argument, "must be a 2-D array, got " + std::to_string(array.ndim()) +
                              " dimension" + (array.ndim() == 1 ? "" : "s"));
  }
  const std::int64_t rows = array.shape(0), cols = array.shape(1);
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  if (rows > kIntMax || cols > kIntMax) {
    throw Error(argument, "must have at most " + std::to_string(kIntMax) +
                              " rows and columns, got " + std::to_string(rows) + " x " +
                              std::to_string(cols));
  }
  std::int64_t row_step = 0, col_step = 0;
  const bool has_row_step = StepInElements(array, 0, &row_step);
  const bool has_col_step = StepInElements(array, 1, &col_step);
  const std::int64_t row_major_stride =
      LineStride(rows, cols, has_col_step, col_step, has_row_step, row_step);
  if (row_major_stride >= 0 && row_major_stride <= kIntMax) {
    return {static_cast<int>(rows), static_cast<int>(cols), Order::kRowMajor,
            static_cast<int>(row_major_stride)};
  }
  const std::int64_t col_major_stride =
      LineStride(cols, rows, has_row_step, row_step, has_col_step, col_step);
  if (col_major_stride >= 0 && col_major_stride <= kIntMax) {
    return {static_cast<int>(rows), static_cast<int>(cols), Order::kColMajor,
            static_cast<int>(col_major_stride)};
  }
  throw Error(argument,
              "must have one axis of unit stride and the other's stride at least its "
              "length (C or Fortran order, or a slice of such an array), got strides (" +
                  std::to_string(array.strides(0)) + ", " + std::to_string(array.strides(1)) +
                  ") bytes for shape (" + std::to_string(rows) + ", " + std::to_string(cols) + ")");
}

py::array_t<std::int32_t> Int32Vector(py::handle object, const std::string& argument) {
  const py::module_ numpy = py::module_::import("numpy");
  const py::array array = numpy.attr("asarray")(object);
  const char kind = array.dtype().kind();
  if (kind != 'i' && kind != 'u') {
    throw Error(argument, "must be a 1-D array of integers, got dtype " + DtypeName(array));
  }
  if (array.ndim() != 1) {
    throw Error(argument, "must be a 1-D array, got " + std::to_string(array.ndim()) +
                              " dimension" + (array.ndim() == 1 ? "" : "s"));
  }
  const py::object outside = numpy.attr("flatnonzero")(numpy.attr("logical_or")(
      numpy.attr("less")(array, std::numeric_limits<std::int32_t>::min()),
      numpy.attr("greater")(array, std::numeric_limits<std::int32_t>::max())));
  if (py::len(outside) > 0) {
    const py::object index = outside[py::int_(0)];
    throw Error(argument + "[" + std::string(py::str(index)) + "]",
                "must be in [" + std::to_string(std::numeric_limits<std::int32_t>::min()) + ", " +
                    std::to_string(std::numeric_limits<std::int32_t>::max()) + "], got " +
                    std::string(py::str(array[index])));
  }
  py::array_t<std::int32_t> copy = numpy.attr("array")(array, "int32");
  copy.attr("flags").attr("writeable") = false;
  return copy;
}

std::int32_t CheckedInt32(std::int64_t value, const std::string& argument) {
  checks::CheckInRange(argument, value, std::numeric_limits<std::int32_t>::min(),
                       std::numeric_limits<std::int32_t>::max());
  return static_cast<std::int32_t>(value);
}

ChannelAxis AxisFromName(const std::string& name, const std::string& argument) {
  if (name == "row") return ChannelAxis::kRow;
  if (name == "col") return ChannelAxis::kCol;
  throw Error(argument, "must be 'row' or 'col', got '" + name + "'");
}

const char* AxisName(ChannelAxis axis) { return axis == ChannelAxis::kRow ? "row" : "col"; }

}  // namespace python
}  // namespace lowbit
