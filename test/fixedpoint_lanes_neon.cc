// The fixedpoint lane operations over the NEON back end, for test/fixedpoint_simd_test.cc.
// Compiled for aarch64 only, where NEON needs no flag.
#include "lowbit/fixedpoint/fixedpoint_neon.h"
#include "test/fixedpoint_lanes.h"

namespace lowbit {
namespace fixedpoint {
namespace lanes {

void ApplyNeon(Operation operation, const std::int32_t* a, const std::int32_t* b, int exponent,
               std::int32_t* result, int count) {
  ApplyToLanes<int32x4_t>(operation, a, b, exponent, result, count);
}

}  // namespace lanes
}  // namespace fixedpoint
}  // namespace lowbit
