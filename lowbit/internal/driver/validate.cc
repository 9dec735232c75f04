// Every check a GEMM call makes before touching memory, with the message naming the argument
// and its rule. Includes the int32 accumulation bound (doc/design.md, "Largest safe depth").
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "lowbit/internal/driver/driver.h"
#include "lowbit/public/checks.h"
#include "lowbit/public/error.h"

namespace lowbit {
namespace internal {

std::size_t StoredBytes(int rows, int cols, Order order, int stride, std::size_t element_size) {
  if (rows <= 0 || cols <= 0) return 0;
  const bool row_major = order == Order::kRowMajor;
  const std::size_t lines = static_cast<std::size_t>(row_major ? rows : cols);
  const std::size_t line = static_cast<std::size_t>(row_major ? cols : rows);
  return ((lines - 1) * static_cast<std::size_t>(stride) + line) * element_size;
}

int ElementSize(ElementType type) {
  switch (type) {
    case ElementType::kUint8:
    case ElementType::kInt8:
      return 1;
    case ElementType::kInt16:
      return 2;
    case ElementType::kInt32:
      return 4;
  }
  return 1;
}

namespace {

// Each check is a few comparisons, inlined where it is made; its failure, which puts the message
// together (names are C strings until then: a valid call allocates nothing), is out of line.
// With the messages inline, each check was a call: a valid 1 x 1 x 1 GEMM took 283 ns against
// 263, 16 x 32 x 4 481 against 438.
#define LOWBIT_COLD [[noreturn]] __attribute__((noinline, cold))

LOWBIT_COLD void ThrowDimension(const char* name, int value, const char* what, int expected) {
  throw Error(name, std::string("must equal ") + what + " (" + std::to_string(expected) +
                        "), got " + std::to_string(value));
}

inline void CheckDimension(const char* name, int value, const char* what, int expected) {
  if (value != expected) ThrowDimension(name, value, what, expected);
}

LOWBIT_COLD void ThrowOffsets(const char* name, const Offsets& offsets, const char* per_what,
                              int expected) {
  if (offsets.size() != expected) {
    throw Error(name, std::string("a per-channel offset needs one entry per ") + per_what + " (" +
                          std::to_string(expected) + "), got " + std::to_string(offsets.size()));
  }
  throw Error(name, "data must not be null for a non-empty vector");
}

inline void CheckOffsets(const char* name, const Offsets& offsets, const char* per_what,
                         int expected) {
  if (!offsets.is_per_channel()) return;
  if (offsets.size() != expected || (expected > 0 && offsets.per_channel_data() == nullptr)) {
    ThrowOffsets(name, offsets, per_what, expected);
  }
}

// The largest |value + offset| over the operand's value range and every offset.
std::int64_t MaxAbsShiftedValue(ElementType type, const Offsets& offsets, int count) {
  const std::int64_t min_value = type == ElementType::kUint8 ? 0 : -128;
  const std::int64_t max_value = type == ElementType::kUint8 ? 255 : 127;
  std::int64_t min_offset = offsets(0);
  std::int64_t max_offset = min_offset;
  if (offsets.is_per_channel()) {
    for (int i = 1; i < count; ++i) {
      min_offset = std::min<std::int64_t>(min_offset, offsets(i));
      max_offset = std::max<std::int64_t>(max_offset, offsets(i));
    }
  }
  return std::max(std::abs(min_value + min_offset), std::abs(max_value + max_offset));
}

bool IsEmpty(const MatrixView& view) { return view.rows == 0 || view.cols == 0; }

// Whether the `bytes` at `data` and the memory of the non-empty `result` share an address.
bool InResult(const MatrixView& result, const void* data, std::size_t bytes) {
  const auto out = reinterpret_cast<std::uintptr_t>(result.data);
  const std::size_t out_bytes =
      StoredBytes(result.rows, result.cols, result.order, result.stride, ElementSize(result.type));
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  return out < begin + bytes && begin < out + out_bytes;
}

LOWBIT_COLD void ThrowOverlap(const char* input_name) {
  throw Error("result",
              std::string("overlaps ") + input_name + "; the result must not alias an input");
}

inline void CheckNoOverlap(const MatrixView& result, const char* input_name,
                           const MatrixView& input) {
  if (IsEmpty(result) || IsEmpty(input)) return;
  const std::size_t input_bytes =
      StoredBytes(input.rows, input.cols, input.order, input.stride, ElementSize(input.type));
  if (InResult(result, input.data, input_bytes)) ThrowOverlap(input_name);
}

// A per-channel offset vector must not lie in the result either: it is read while blocks of the
// result are written.
inline void CheckOffsetsNotInResult(const MatrixView& result, const char* name,
                                    const Offsets& offsets) {
  if (!offsets.is_per_channel()) return;
  CheckNotInResult(result, name, nullptr, offsets.per_channel_data(),
                   sizeof(std::int32_t) * static_cast<std::size_t>(offsets.size()));
}

LOWBIT_COLD void ThrowSize(const char* name, const char* field, int value) {
  if (value < 0) checks::CheckInRange(name, field, value, 0, kLargestDimension);
  throw Error(std::string(name) + "." + field,
              "must be at most " + std::to_string(kLargestDimension) +
                  " (2^30 - 1): packing rounds sizes up to whole register tiles and depth "
                  "groups in int arithmetic, got " +
                  std::to_string(value));
}

inline void CheckSize(const char* name, const char* field, int value) {
  if (value < 0 || value > kLargestDimension) ThrowSize(name, field, value);
}

LOWBIT_COLD void ThrowBadMatrix(const char* name, const MatrixView& view) {
  if (view.order != Order::kRowMajor && view.order != Order::kColMajor) {
    throw Error(std::string(name) + ".order", "must be Order::kRowMajor or kColMajor, got " +
                                                  std::to_string(static_cast<int>(view.order)));
  }
  const bool row_major = view.order == Order::kRowMajor;
  const int line = row_major ? view.cols : view.rows;
  if (view.stride < line) {
    throw Error(std::string(name) + ".stride",
                std::string("a ") + (row_major ? "row" : "column") +
                    "-major matrix needs stride >= its " +
                    (row_major ? "number of columns" : "number of rows") + " (" +
                    std::to_string(line) + "), got " + std::to_string(view.stride));
  }
  throw Error(std::string(name) + ".data", "must not be null for a non-empty matrix (" +
                                               std::to_string(view.rows) + " x " +
                                               std::to_string(view.cols) + ")");
}

LOWBIT_COLD void ThrowOtherKernel(Kernel packed, Kernel running) {
  throw Error("rhs", std::string("was packed for kernel '") + KernelName(packed) +
                         "' but this context runs '" + KernelName(running) +
                         "': pack it on a context that runs the same kernel");
}

LOWBIT_COLD void ThrowInResult(std::string_view owner, const char* field) {
  const std::string argument =
      field == nullptr ? std::string(owner) : std::string(owner) + "." + field;
  throw Error(argument,
              "lies in the result's memory, which the GEMM writes while it reads "
              "this; the result must not alias an input");
}

}  // namespace

void ValidateMatrix(const char* name, const MatrixView& view) {
  CheckSize(name, "rows", view.rows);
  CheckSize(name, "cols", view.cols);
  const bool known_order = view.order == Order::kRowMajor || view.order == Order::kColMajor;
  const int line = view.order == Order::kRowMajor ? view.cols : view.rows;
  if (!known_order || view.stride < line ||
      (view.data == nullptr && view.rows > 0 && view.cols > 0)) {
    ThrowBadMatrix(name, view);
  }
}

void CheckNotInResult(const MatrixView& result, std::string_view owner, const char* field,
                      const void* data, std::size_t bytes) {
  if (IsEmpty(result) || bytes == 0) return;
  if (InResult(result, data, bytes)) ThrowInResult(owner, field);
}

MatrixView ViewOf(const PackedOperand& packed) {
  return {packed.data.get(), packed.type,      packed.depth,
          packed.cols,       Order::kColMajor, packed.depth};
}

namespace {

// The largest |(lhs + lhs_offset) * (rhs + rhs_offset)|: below 2^63, as offsets are int32.
std::int64_t MaxProduct(const MatrixView& lhs, const MatrixView& rhs, const Offsets& lhs_offset,
                        const Offsets& rhs_offset) {
  return MaxAbsShiftedValue(lhs.type, lhs_offset, lhs.rows) *
         MaxAbsShiftedValue(rhs.type, rhs_offset, rhs.cols);
}

LOWBIT_COLD void ThrowUnsafeDepth(const MatrixView& lhs, const MatrixView& rhs,
                                  const Offsets& lhs_offset, const Offsets& rhs_offset) {
  throw Error("lhs.cols",
              "the depth " + std::to_string(lhs.cols) +
                  " can overflow int32 accumulators: with these operand types and offsets the "
                  "largest |(lhs + lhs_offset) * (rhs + rhs_offset)| allows a depth of at most " +
                  std::to_string(LargestSafeDepth(lhs, rhs, lhs_offset, rhs_offset)));
}

}  // namespace

std::int64_t LargestSafeDepth(const MatrixView& lhs, const MatrixView& rhs,
                              const Offsets& lhs_offset, const Offsets& rhs_offset) {
  const std::int64_t max_product = MaxProduct(lhs, rhs, lhs_offset, rhs_offset);
  if (max_product == 0) return std::numeric_limits<std::int64_t>::max();
  return std::numeric_limits<std::int32_t>::max() / max_product;
}

void ValidateGemmArguments(const Context& context, const MatrixView& lhs, const MatrixView& rhs,
                           const PackedOperand* packed_rhs, const MatrixView& result,
                           const Offsets& lhs_offset, const Offsets& rhs_offset) {
  ValidateMatrix("lhs", lhs);
  // A prepacked rhs was checked when it was packed, and lives in memory the caller never sees.
  if (packed_rhs == nullptr) ValidateMatrix("rhs", rhs);
  ValidateMatrix("result", result);
  if (packed_rhs != nullptr && packed_rhs->kernel != context.ResolvedKernel()) {
    ThrowOtherKernel(packed_rhs->kernel, context.ResolvedKernel());
  }
  CheckDimension("rhs.rows", rhs.rows, "lhs.cols, the depth", lhs.cols);
  CheckDimension("result.rows", result.rows, "lhs.rows", lhs.rows);
  CheckDimension("result.cols", result.cols, "rhs.cols", rhs.cols);
  CheckOffsets("lhs_offset", lhs_offset, "lhs row", lhs.rows);
  CheckOffsets("rhs_offset", rhs_offset, "rhs column", rhs.cols);
  CheckNoOverlap(result, "lhs", lhs);
  if (packed_rhs == nullptr) CheckNoOverlap(result, "rhs", rhs);
  CheckOffsetsNotInResult(result, "lhs_offset", lhs_offset);
  CheckOffsetsNotInResult(result, "rhs_offset", rhs_offset);
  if (IsEmpty(result)) return;
  // LargestSafeDepth's test without its division: a depth below 2^30 times a product within
  // int32 fits int64.
  constexpr std::int64_t kInt32Max = std::numeric_limits<std::int32_t>::max();
  const std::int64_t max_product = MaxProduct(lhs, rhs, lhs_offset, rhs_offset);
  if (lhs.cols > 0 && (max_product > kInt32Max || lhs.cols * max_product > kInt32Max)) {
    ThrowUnsafeDepth(lhs, rhs, lhs_offset, rhs_offset);
  }
}

#undef LOWBIT_COLD

}  // namespace internal
}  // namespace lowbit
