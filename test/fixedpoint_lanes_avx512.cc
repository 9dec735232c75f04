// The fixedpoint lane operations over the AVX-512 back end, for test/fixedpoint_simd_test.cc.
// Compiled with -mavx512f only.
#include "lowbit/fixedpoint/fixedpoint_avx512.h"
#include "test/fixedpoint_lanes.h"

namespace lowbit {
namespace fixedpoint {
namespace lanes {

void ApplyAvx512(Operation operation, const std::int32_t* a, const std::int32_t* b, int exponent,
                 std::int32_t* result, int count) {
  ApplyToLanes<Avx512Int32x16>(operation, a, b, exponent, result, count);
}

}  // namespace lanes
}  // namespace fixedpoint
}  // namespace lowbit
