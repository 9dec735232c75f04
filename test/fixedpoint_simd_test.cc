// Each SIMD fixedpoint back end against the scalar one, bit for bit: every primitive and a few
// composite functions, over edge values paired with each other, a large random sample, and every
// exponent. x86 back ends run where cpuinfo finds their ISA; NEON in the aarch64 build.
#include <cpuinfo.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test/fixedpoint_lanes.h"

namespace lowbit {
namespace fixedpoint {
namespace lanes {
namespace {

constexpr int kMaxLanes = 16;

struct BackEnd {
  std::string name;
  LaneFunction apply;
};

std::vector<BackEnd> AvailableBackEnds() {
  std::vector<BackEnd> back_ends;
#if defined(__x86_64__)
  if (cpuinfo_initialize() && cpuinfo_has_x86_sse4_1()) back_ends.push_back({"sse41", ApplySse41});
  if (cpuinfo_initialize() && cpuinfo_has_x86_avx2()) back_ends.push_back({"avx2", ApplyAvx2});
  if (cpuinfo_initialize() && cpuinfo_has_x86_avx512f()) {
    back_ends.push_back({"avx512", ApplyAvx512});
  }
#endif
#if defined(__aarch64__)
  back_ends.push_back({"neon", ApplyNeon});
#endif
  return back_ends;
}

// 0, +-1, every +-2^k with its neighbours and halfway points, and the extremes.
std::vector<std::int32_t> EdgeValues() {
  std::vector<std::int32_t> values = {0,
                                      1,
                                      -1,
                                      std::numeric_limits<std::int32_t>::min(),
                                      std::numeric_limits<std::int32_t>::min() + 1,
                                      std::numeric_limits<std::int32_t>::max(),
                                      std::numeric_limits<std::int32_t>::max() - 1};
  for (int bit = 1; bit < 31; ++bit) {
    const std::int64_t power = std::int64_t{1} << bit;
    for (std::int64_t value : {power - 1, power, power + 1, power + power / 2}) {
      values.push_back(static_cast<std::int32_t>(value));
      values.push_back(static_cast<std::int32_t>(-value));
    }
  }
  return values;
}

// Every pair of edge values, then random pairs, padded to whole registers.
struct Operands {
  std::vector<std::int32_t> a;
  std::vector<std::int32_t> b;
};

Operands MakeOperands() {
  const std::vector<std::int32_t> edges = EdgeValues();
  Operands operands;
  for (std::int32_t x : edges) {
    for (std::int32_t y : edges) {
      operands.a.push_back(x);
      operands.b.push_back(y);
    }
  }
  std::mt19937 random(17);
  std::uniform_int_distribution<std::int32_t> any(std::numeric_limits<std::int32_t>::min(),
                                                  std::numeric_limits<std::int32_t>::max());
  while (operands.a.size() < (1u << 17) || operands.a.size() % kMaxLanes != 0) {
    operands.a.push_back(any(random));
    operands.b.push_back(any(random));
  }
  return operands;
}

void ExpectSameAsScalar(const BackEnd& back_end, const OperationInfo& info,
                        const Operands& operands, int exponent) {
  const int count = static_cast<int>(operands.a.size());
  std::vector<std::int32_t> b = operands.b;
  if (info.operand == Operand::kLaneExponents) {
    for (std::int32_t& value : b) value &= 31;
  }
  std::vector<std::int32_t> expected(count), actual(count);
  ApplyToLanes<std::int32_t>(info.operation, operands.a.data(), b.data(), exponent, expected.data(),
                             count);
  back_end.apply(info.operation, operands.a.data(), b.data(), exponent, actual.data(), count);
  if (actual == expected) return;
  for (int i = 0; i < count; ++i) {
    ASSERT_EQ(actual[i], expected[i]) << back_end.name << " " << info.name << "(" << operands.a[i]
                                      << ", " << b[i] << ") with exponent " << exponent;
  }
}

TEST(FixedPointSimdTest, EveryOperationMatchesScalar) {
  const std::vector<BackEnd> back_ends = AvailableBackEnds();
  if (back_ends.empty()) GTEST_SKIP() << "this CPU has none of the SIMD back ends";
  const Operands operands = MakeOperands();
  for (const BackEnd& back_end : back_ends) {
    for (const OperationInfo& info : kOperations) {
      const int last_exponent = info.operand == Operand::kExponent ? 31 : 0;
      for (int exponent = 0; exponent <= last_exponent; ++exponent) {
        ExpectSameAsScalar(back_end, info, operands, exponent);
        if (HasFatalFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace lanes
}  // namespace fixedpoint
}  // namespace lowbit
