// The fixedpoint lane operations over the SSE4.1 back end, for test/fixedpoint_simd_test.cc.
// Compiled with -msse4.1 only.
#include "lowbit/fixedpoint/fixedpoint_sse41.h"
#include "test/fixedpoint_lanes.h"

namespace lowbit {
namespace fixedpoint {
namespace lanes {

void ApplySse41(Operation operation, const std::int32_t* a, const std::int32_t* b, int exponent,
                std::int32_t* result, int count) {
  ApplyToLanes<Sse41Int32x4>(operation, a, b, exponent, result, count);
}

}  // namespace lanes
}  // namespace fixedpoint
}  // namespace lowbit
