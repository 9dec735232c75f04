// The fixedpoint lane operations over the AVX2 back end, for test/fixedpoint_simd_test.cc.
// Compiled with -mavx2 only.
#include "lowbit/fixedpoint/fixedpoint_avx2.h"
#include "test/fixedpoint_lanes.h"

namespace lowbit {
namespace fixedpoint {
namespace lanes {

void ApplyAvx2(Operation operation, const std::int32_t* a, const std::int32_t* b, int exponent,
               std::int32_t* result, int count) {
  ApplyToLanes<Avx2Int32x8>(operation, a, b, exponent, result, count);
}

}  // namespace lanes
}  // namespace fixedpoint
}  // namespace lowbit
