// Argument checks shared by the entry points and the output stages, so that every rejected call
// reads the same way: "lowbit: <argument>: <rule>, got <value>".
#ifndef LOWBIT_PUBLIC_CHECKS_H_
#define LOWBIT_PUBLIC_CHECKS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "lowbit/public/error.h"
#include "lowbit/public/map.h"

namespace lowbit {
namespace checks {

inline void CheckInRange(const std::string& argument, std::int64_t value, std::int64_t min,
                         std::int64_t max) {
  if (value < min || value > max) {
    throw Error(argument, "must be in [" + std::to_string(min) + ", " + std::to_string(max) +
                              "], got " + std::to_string(value));
  }
}

/// The same for the field `field` of `owner` ("pipeline[1]", "result_shift"): the argument's name
/// is only put together when the check fails, so valid calls allocate nothing, whether `owner`
/// is a string or a literal.
inline void CheckInRange(std::string_view owner, const char* field, std::int64_t value,
                         std::int64_t min, std::int64_t max) {
  if (value < min || value > max) {
    CheckInRange(std::string(owner) + "." + field, value, min, max);
  }
}

inline const char* AxisName(ChannelAxis axis) {
  return axis == ChannelAxis::kRow ? "ChannelAxis::kRow" : "ChannelAxis::kCol";
}

/// A per-channel vector needs one entry per result row (kRow) or column (kCol).
template <typename Scalar>
void CheckChannelVector(const std::string& owner, const char* field,
                        const VectorMap<Scalar>& vector, ChannelAxis axis, int rows, int cols) {
  if (axis != ChannelAxis::kRow && axis != ChannelAxis::kCol) {
    throw Error(owner + ".axis",
                "must be ChannelAxis::kRow or kCol, got " + std::to_string(static_cast<int>(axis)));
  }
  const int expected = axis == ChannelAxis::kRow ? rows : cols;
  if (vector.size() != expected) {
    throw Error(owner + "." + field, std::string("with ") + AxisName(axis) +
                                         " must have one entry per result " +
                                         (axis == ChannelAxis::kRow ? "row" : "column") + " (" +
                                         std::to_string(expected) + "), got " +
                                         std::to_string(vector.size()) + " entries");
  }
  if (vector.size() > 0 && vector.data() == nullptr) {
    throw Error(owner + "." + field, "data must not be null for a non-empty vector");
  }
}

/// Checks every entry of a per-channel parameter vector against [min, max].
template <typename Scalar>
void CheckEachInRange(const std::string& owner, const char* field, const VectorMap<Scalar>& vector,
                      std::int64_t min, std::int64_t max) {
  for (int i = 0; i < vector.size(); ++i) {
    if (vector(i) < min || vector(i) > max) {
      CheckInRange(owner + "." + field + "[" + std::to_string(i) + "]", vector(i), min, max);
    }
  }
}

}  // namespace checks
}  // namespace lowbit

#endif  // LOWBIT_PUBLIC_CHECKS_H_
