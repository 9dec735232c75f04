// The engine of lowbit's libFuzzer harnesses: decodes an input into one GEMM call (shape, storage
// orders and strides, operand types and values, offsets, output pipeline, bit depths, prepacked
// or not, and at most one deliberate misuse), runs it on every kernel with 1 to 3 threads, and
// checks every outcome: a well-formed call equals the 64-bit reference, a malformed one raises
// lowbit::Error naming the argument, with the result memory untouched.
#include "test/fuzz/gemm_fuzz.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "lowbit/internal/driver/bit_depth.h"  // SequencePhase: the requantize reference's rounding phases
#include "lowbit/internal/driver/context_state.h"  // tiny caches and no thread backoff, as in test/test_util.h
#include "lowbit/lowbit.h"

namespace lowbit {
namespace fuzz {
namespace {

constexpr int kMaxInt = std::numeric_limits<int>::max();
constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kInt32Min = std::numeric_limits<std::int32_t>::min();

// Upper bounds on the memory one input may ask for, so that each run stays well under a
// millisecond per GEMM and far from libFuzzer's RSS limit.
constexpr std::int64_t kMaxOperandBytes = 1 << 20;
constexpr std::int64_t kMaxResultBytes = 1 << 18;

// ---------------------------------------------------------------------------------------------
// Reporting

std::string g_description;  // the decoded case, printed with any finding

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "\nlowbit fuzz: FINDING: %s\n  case: %s\n", what.c_str(),
               g_description.c_str());
  std::fflush(stderr);
  std::abort();
}

// Bulk data (operand values beyond those the input spells out, per-channel vectors, the
// sentinel) comes from this generator seeded by the input, so that short inputs still make
// full-size problems: splitmix64.
class Generator {
 public:
  explicit Generator(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Fills `bytes` with generator output, eight bytes a step.
  void Fill(std::uint8_t* bytes, std::size_t count) {
    for (std::size_t i = 0; i < count; i += 8) {
      const std::uint64_t word = Next();
      std::memcpy(bytes + i, &word, std::min<std::size_t>(8, count - i));
    }
  }
  // Uniform in [low, high].
  std::int64_t InRange(std::int64_t low, std::int64_t high) {
    const auto span = static_cast<std::uint64_t>(high - low) + 1;
    return low + static_cast<std::int64_t>(span == 0 ? Next() : Next() % span);
  }

 private:
  std::uint64_t state_;
};

// ---------------------------------------------------------------------------------------------
// Storage

struct Layout {
  int rows = 0;
  int cols = 0;
  Order order = Order::kRowMajor;
  int stride = 0;

  bool row_major() const { return order == Order::kRowMajor; }
  int lines() const { return row_major() ? rows : cols; }
  int line_length() const { return row_major() ? cols : rows; }
  bool empty() const { return rows <= 0 || cols <= 0; }
  // Elements from the first entry to one past the last; 0 for an empty matrix.
  std::int64_t extent() const {
    return empty() ? 0 : (static_cast<std::int64_t>(lines()) - 1) * stride + line_length();
  }
  std::int64_t index(int row, int col) const {
    return row_major() ? static_cast<std::int64_t>(row) * stride + col
                       : row + static_cast<std::int64_t>(col) * stride;
  }
};

const char* OrderName(Order order) { return order == Order::kRowMajor ? "row-major" : "col-major"; }

std::string Describe(const Layout& layout) {
  return std::to_string(layout.rows) + "x" + std::to_string(layout.cols) + " " +
         OrderName(layout.order) + " stride " + std::to_string(layout.stride);
}

// An exact-size heap array: ASan reports any read past its end. Size 0 is a valid, non-null,
// zero-byte allocation.
template <typename T>
struct Array {
  std::unique_ptr<T[]> data;
  std::size_t size = 0;

  void Allocate(std::size_t count) {
    data.reset(new T[count]);
    size = count;
  }
};

// An lhs or rhs: `layout` describes the values as stored, `call` the map lowbit is given
// (the same unless a misuse changed it). The values live in `own` or, for an input that
// overlaps the result, in the result arena.
struct Operand {
  bool is_signed = false;
  Layout layout;
  Layout call;
  bool null_data = false;
  Array<std::uint8_t> own;
  std::uint8_t* data = nullptr;
  std::vector<std::uint8_t> before;  // `own` before the calls, to check they do not write it

  int Value(int row, int col) const {
    const std::uint8_t byte = data[layout.index(row, col)];
    return is_signed ? static_cast<std::int8_t>(byte) : byte;
  }
};

struct OffsetsData {
  bool per_channel = false;
  std::int32_t scalar = 0;
  Array<std::int32_t> values;
  int size = 0;  // entries passed (allocated: max(size, count))
  bool null_data = false;

  std::int32_t operator()(int index) const { return per_channel ? values.data[index] : scalar; }
  Offsets Get() const {
    if (!per_channel) return Offsets(scalar);
    return Offsets(VectorMap<const std::int32_t>(null_data ? nullptr : values.data.get(), size));
  }
};

struct StageVector {
  Array<std::int32_t> own;
  const std::int32_t* data = nullptr;
  int size = 0;

  VectorMap<const std::int32_t> Map() const { return {data, size}; }
};

// ---------------------------------------------------------------------------------------------
// Output pipelines: a fixed set of shapes (a pipeline is a compile-time tuple) with fuzzed
// parameters, covering every built-in stage, both channel axes, two custom stages, the scalar
// path (stages without a compiled form) and pipelines at and past the compiled program's
// 12-instruction limit.

// Writing your own output stage, as in examples/custom_stage.cc: a leaky ReLU.
struct LeakyRelu {
  int negative_slope_shift;

  void Validate(int, int, const std::string& name) const {
    checks::CheckInRange(name, "negative_slope_shift", negative_slope_shift, 0, 31);
  }
  std::int32_t Eval(std::int32_t x, int, int) const {
    return x >= 0 ? x : fixedpoint::RoundingDivideByPOT(x, negative_slope_shift);
  }
};

// A custom stage without Validate whose value depends on the entry's position, so that a path
// passing the wrong (row, col) to Eval (a transposed result, a block edge) shows.
struct AddPosition {
  std::int32_t Eval(std::int32_t x, int row, int col) const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) +
                                     (static_cast<std::uint32_t>(row) << 16) +
                                     static_cast<std::uint32_t>(col));
  }
};

// The parameters every pipeline shape draws from.
struct StageValues {
  std::int32_t multiplier = 0;  // fixed-point multiplier, or the legacy stage's result_mult_int
  int shift = 0;                // right shift of the QuantizeDown stages
  int exponent = 0;             // ScaleInt32ByFixedPointAndExponent's
  std::int32_t offset = 0;
  std::int32_t clamp_min = 0;
  std::int32_t clamp_max = 0;
  int pot_exponent = 0;  // ShiftByPOT's
  Rounding rounding = Rounding::kNearest;
  std::uint32_t seed = 0;
  std::int32_t zero = 0;  // Tanh's and Logistic's
  std::int32_t amplitude = 1;
  int leaky_shift = 0;
  ChannelAxis axis[2] = {ChannelAxis::kRow, ChannelAxis::kRow};
  StageVector vectors[3];
};

enum class VectorKind { kAny, kMultiplier, kShift, kExponent };
enum class Field { kMultiplier, kShift, kExponent, kPotExponent, kClamp, kAmplitude, kLeakyShift };

struct VectorSlot {
  VectorKind kind;
  int stage;  // the stage reading it: errors name pipeline[stage]
  int axis;   // which StageValues::axis it follows
};
struct FieldSlot {
  Field field;
  int stage;
};

struct PipelineInfo {
  const char* name;
  int result_bytes;
  int vector_count;
  VectorSlot vectors[3];
  int field_count;
  FieldSlot fields[2];
  int rounding_stage;  // a ShiftByPOT's position, or -1
};

constexpr int kPipelineCount = 14;
const PipelineInfo kPipelines[kPipelineCount] = {
    {"int32 accumulators (Gemm)", 4, 0, {}, 0, {}, -1},
    {"bias, quantize-down, uint8",
     1,
     1,
     {{VectorKind::kAny, 0, 0}},
     2,
     {{Field::kMultiplier, 1}, {Field::kShift, 1}},
     -1},
    {"quantize-down per channel, clamp, int8",
     1,
     2,
     {{VectorKind::kMultiplier, 0, 0}, {VectorKind::kShift, 0, 0}},
     1,
     {{Field::kClamp, 1}},
     -1},
    {"scale by exponent, int16", 2, 0, {}, 2, {{Field::kMultiplier, 0}, {Field::kExponent, 0}}, -1},
    {"bias, scale by exponent per channel, uint8",
     1,
     3,
     {{VectorKind::kAny, 0, 0}, {VectorKind::kMultiplier, 1, 1}, {VectorKind::kExponent, 1, 1}},
     0,
     {},
     -1},
    {"legacy uint8 scale, uint8 (or the classic Gemm)",
     1,
     0,
     {},
     2,
     {{Field::kMultiplier, 0}, {Field::kShift, 0}},
     -1},
    {"legacy uint8 scale per channel, truncate",
     1,
     2,
     {{VectorKind::kAny, 0, 0}, {VectorKind::kMultiplier, 0, 0}},
     1,
     {{Field::kShift, 0}},
     -1},
    {"shift by POT, clamp, int16", 2, 0, {}, 2, {{Field::kPotExponent, 0}, {Field::kClamp, 1}}, 0},
    {"tanh, int16", 2, 0, {}, 1, {{Field::kAmplitude, 0}}, -1},
    {"shift by POT, logistic, uint8",
     1,
     0,
     {},
     2,
     {{Field::kPotExponent, 0}, {Field::kAmplitude, 1}},
     0},
    {"custom leaky ReLU, shift by POT, int8",
     1,
     0,
     {},
     2,
     {{Field::kLeakyShift, 0}, {Field::kPotExponent, 1}},
     1},
    {"custom position stage, bias, int32", 4, 1, {{VectorKind::kAny, 1, 0}}, 0, {}, -1},
    {"12 compiled stages: bias, 9 clamps, shift, int16",
     2,
     1,
     {{VectorKind::kAny, 0, 0}},
     2,
     {{Field::kClamp, 1}, {Field::kPotExponent, 10}},
     10},
    {"13 stages, one past the compiled limit: bias, 10 clamps, shift, int16",
     2,
     1,
     {{VectorKind::kAny, 0, 0}},
     2,
     {{Field::kClamp, 1}, {Field::kPotExponent, 11}},
     11},
};

using ClassicPipeline =
    std::tuple<OutputStageQuantizeDownInt32ToUint8Scale, OutputStageSaturatingCastToUint8>;

// The tanh stage of `v`: the seed's top bit picks the arithmetic (so that inputs decode as
// before). gemmlowp's forms zero +- 8 * amplitude in int32, so for it a well-formed amplitude
// is brought within that reach (a zero within +-2^30 leaves amplitudes up to 2^27 - 1); a
// non-positive one stays the misuse it is.
OutputStageTanh TanhStage(const StageValues& v) {
  if (v.seed >> 31) return OutputStageTanh{v.zero, v.amplitude, TanhArithmetic::kAccurate};
  const std::int32_t zero = std::clamp(v.zero, -(1 << 30), 1 << 30);
  const std::int64_t reach =
      std::min(std::int64_t{kInt32Max} - zero, std::int64_t{zero} - kInt32Min) / 8;
  return OutputStageTanh{zero,
                         static_cast<std::int32_t>(std::min<std::int64_t>(v.amplitude, reach)),
                         TanhArithmetic::kGemmlowp};
}

// Calls visit(pipeline) with pipeline shape `index` built from `v`.
template <typename Visit>
void VisitPipeline(int index, const StageValues& v, Visit&& visit) {
  const OutputStageShiftByPOT shift{v.pot_exponent, v.rounding, v.seed};
  const OutputStageClamp clamp{v.clamp_min, v.clamp_max};
  const OutputStageBiasAddition bias{v.vectors[0].Map(), v.axis[0]};
  switch (index) {
    case 0:
      visit(std::tuple<>());
      return;
    case 1:
      visit(std::make_tuple(
          bias, OutputStageQuantizeDownInt32ByFixedPoint{v.multiplier, v.shift, v.offset},
          OutputStageSaturatingCastToUint8{}));
      return;
    case 2:
      visit(std::make_tuple(
          OutputStageQuantizeDownInt32ByFixedPointPerChannel{v.vectors[0].Map(), v.vectors[1].Map(),
                                                             v.offset, v.axis[0]},
          clamp, OutputStageSaturatingCastToInt8{}));
      return;
    case 3:
      visit(std::make_tuple(
          OutputStageScaleInt32ByFixedPointAndExponent{v.multiplier, v.exponent, v.offset},
          OutputStageSaturatingCastToInt16{}));
      return;
    case 4:
      visit(std::make_tuple(bias,
                            OutputStageScaleInt32ByFixedPointAndExponentPerChannel{
                                v.vectors[1].Map(), v.vectors[2].Map(), v.offset, v.axis[1]},
                            OutputStageSaturatingCastToUint8{}));
      return;
    case 5:
      visit(ClassicPipeline{{v.offset, v.multiplier, v.shift}, {}});
      return;
    case 6:
      visit(std::make_tuple(
          OutputStageQuantizeDownInt32ToUint8ScalePerChannel{v.vectors[0].Map(), v.vectors[1].Map(),
                                                             v.shift, v.axis[0]},
          OutputStageTruncatingCastToUint8{}));
      return;
    case 7:
      visit(std::make_tuple(shift, clamp, OutputStageSaturatingCastToInt16{}));
      return;
    case 8:
      visit(std::make_tuple(TanhStage(v), OutputStageSaturatingCastToInt16{}));
      return;
    case 9:
      visit(std::make_tuple(shift, OutputStageLogistic{v.zero, v.amplitude},
                            OutputStageSaturatingCastToUint8{}));
      return;
    case 10:
      visit(std::make_tuple(LeakyRelu{v.leaky_shift}, shift, OutputStageSaturatingCastToInt8{}));
      return;
    case 11:
      visit(std::make_tuple(AddPosition{}, OutputStageBiasAddition{v.vectors[0].Map(), v.axis[0]}));
      return;
    case 12:
      visit(std::make_tuple(bias, clamp, clamp, clamp, clamp, clamp, clamp, clamp, clamp, clamp,
                            shift, OutputStageSaturatingCastToInt16{}));
      return;
    default:
      visit(std::make_tuple(bias, clamp, clamp, clamp, clamp, clamp, clamp, clamp, clamp, clamp,
                            clamp, shift, OutputStageSaturatingCastToInt16{}));
      return;
  }
}

// The reference output stage chain: the same stage objects' Eval, left to right.
template <std::size_t Index = 0, typename Pipeline, typename Value>
auto ApplyStages(const Pipeline& pipeline, Value value, int row, int col) {
  if constexpr (Index == std::tuple_size<Pipeline>::value) {
    return value;
  } else {
    return ApplyStages<Index + 1>(pipeline, std::get<Index>(pipeline).Eval(value, row, col), row,
                                  col);
  }
}

// ---------------------------------------------------------------------------------------------
// Misuses: at most one per input.

enum class Misuse : std::uint8_t {
  kNone,
  kNegativeSize,
  kMismatchedSize,  // includes a PrepackedRhs used with an lhs of another depth
  kShortStride,
  kNullData,
  kNullContext,
  kNullResult,
  kOffsetsVector,  // a per-channel offset vector of the wrong length, or null
  kStageParameter,
  kStageVector,  // a per-channel stage vector of the wrong length, or null
  kInvalidRounding,
  kInvalidChannelAxis,
  kResultOverlapsInput,  // or, as a well-formed control, sits right next to it
  kStageVectorInResult,
  kPrepackedOtherKernel,
  kContextSettings,
  // Bit depths only.
  kBitsOutOfRange,
  kInvalidBitDepthRounding,
  kInvalidBitDepthMode,
  kOutsideDeclaredRange,
  kPrepackedParamsDiffer,
  kPrepackedWithoutParams,
  kCallWithoutParams,
  kCount,
};
constexpr int kGemmMisuses = static_cast<int>(Misuse::kContextSettings);
constexpr int kBitDepthMisuses = static_cast<int>(Misuse::kCount) - 1;

const char* MisuseName(Misuse misuse) {
  static const char* const kNames[] = {"none",
                                       "negative size",
                                       "mismatched size",
                                       "short stride",
                                       "null data",
                                       "null context",
                                       "null result",
                                       "offsets vector",
                                       "stage parameter out of range",
                                       "stage vector length or null",
                                       "invalid Rounding",
                                       "invalid ChannelAxis",
                                       "result overlaps an input",
                                       "stage vector inside the result",
                                       "prepacked for another kernel",
                                       "context settings",
                                       "bit depth out of range",
                                       "invalid BitDepthRounding",
                                       "invalid BitDepthMode",
                                       "value outside the declared range",
                                       "prepacked with other BitDepthParams",
                                       "prepacked without BitDepthParams",
                                       "GEMM without the prepacked rhs's BitDepthParams"};
  return kNames[static_cast<int>(misuse)];
}

// What a call may do: return the reference result, or raise lowbit::Error naming one of
// `arguments` with the result untouched.
struct Expectation {
  enum Kind {
    kAccept,
    kReject,
    kEither,  // legitimately either (e.g. a prepacked rhs used with another lhs_bits)
  };
  struct Argument {
    std::string name;
    bool exact;  // else also its fields: name.field, name[i]
  };
  Kind kind = kAccept;
  std::vector<Argument> arguments;  // empty: any argument

  void Reject(std::string name, bool exact = false) {
    kind = kReject;
    arguments.push_back({std::move(name), exact});
  }
  bool Names(const std::string& argument) const {
    if (arguments.empty()) return true;
    for (const Argument& allowed : arguments) {
      if (argument == allowed.name) return true;
      if (allowed.exact || argument.size() <= allowed.name.size()) continue;
      const char next = argument[allowed.name.size()];
      if (argument.compare(0, allowed.name.size(), allowed.name) == 0 &&
          (next == '.' || next == '[')) {
        return true;
      }
    }
    return false;
  }
  std::string Describe() const {
    static const char* const kKinds[] = {"accept", "reject", "either", "anything"};
    std::string text = kKinds[kind];
    for (const Argument& argument : arguments) text += " " + argument.name;
    return text;
  }
};

// ---------------------------------------------------------------------------------------------
// The decoded case

struct Case {
  Misuse misuse = Misuse::kNone;
  std::string misuse_detail;
  int pipeline = 0;
  int rows = 0, depth = 0, cols = 0;
  Operand lhs, rhs;
  // The result map is at arena + result_offset; the arena also holds an overlapping input or
  // stage vector when a misuse puts one there, and padding around the map.
  Layout result;
  Layout result_call;
  bool result_null_data = false;
  std::size_t result_offset = 0;
  Array<std::uint8_t> arena;
  std::vector<std::uint8_t> arena_before;
  OffsetsData lhs_offset, rhs_offset;
  StageValues stages;
  bool tiny_blocks = false;
  // Besides one thread on every kernel, one multi-threaded path: kernel index (modulo the
  // kernel count) and 2 or 3 threads.
  int threaded_kernel = 0;
  int threads = 2;
  bool prepacked = false;
  bool classic_entry = false;
  bool null_context = false;
  bool null_result = false;
  std::optional<BitDepthParams> bit_depth;       // the GEMM's
  std::optional<BitDepthParams> pack_bit_depth;  // the PrepackedRhs's
  Expectation expect;

  void RestoreArena() {
    if (arena.size > 0) std::memcpy(arena.data.get(), arena_before.data(), arena.size);
  }
};

const std::vector<Kernel>& Kernels() {
  static const std::vector<Kernel> kernels = AvailableKernels();
  return kernels;
}

// One Context per (kernel, thread count, blocking), kept for the whole run as a caller keeps
// one, each used by one thread. Tiny cache sizes, as test/test_util.h's PathSetting uses, make
// the small shapes here cross block edges and reach the thread threshold; those contexts also
// turn the thread backoff off so that their thread counts hold on a busy machine. The others
// are what a user gets.
Context& ContextFor(Kernel kernel, int threads, bool tiny_blocks) {
  static std::map<std::tuple<Kernel, int, bool>, std::unique_ptr<Context>> contexts;
  std::unique_ptr<Context>& context = contexts[{kernel, threads, tiny_blocks}];
  if (context == nullptr) {
    context = std::make_unique<Context>();
    context->set_kernel(kernel);
    context->set_max_num_threads(threads);
    if (tiny_blocks) {
      context->state().caches = internal::CacheSizes{256, 2048};
      context->state().DisableMeasuredChoices();
    }
  }
  return *context;
}

// ---------------------------------------------------------------------------------------------
// Decoding

// A stride for `layout` (whose rows, cols and order are set): usually the line length, or
// padded a little, a lot, to an alignment, or (for a single line) anywhere up to INT_MAX.
int DecodeStride(FuzzedDataProvider& in, const Layout& layout, int element_bytes,
                 std::int64_t max_bytes) {
  const int line = layout.line_length();
  const int lines = std::max(layout.lines(), 1);
  const std::int64_t room = line == 0 ? kMaxInt : max_bytes / element_bytes / lines - line;
  const auto padded = [&](std::int64_t padding) {
    return static_cast<int>(
        std::min<std::int64_t>(line + std::max<std::int64_t>(0, std::min(padding, room)), kMaxInt));
  };
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 4:
      return padded(in.ConsumeIntegralInRange<int>(1, 16));
    case 5:
      return padded(in.ConsumeIntegralInRange<int>(17, 4096));
    case 6:
      // One line never steps by its stride, however large.
      if (layout.lines() <= 1) return in.ConsumeIntegralInRange<int>(line, kMaxInt);
      return padded(in.ConsumeIntegralInRange<int>(0, 64));
    case 7: {
      const int alignment = 8 << in.ConsumeIntegralInRange<int>(0, 3);
      return padded((alignment - line % alignment) % alignment);
    }
    default:
      return line;
  }
}

// Offsets: mostly zero points and small values; sometimes moderate or any int32, which at most
// depths passes the int32 bound and must be refused (lhs.cols).
std::int32_t DecodeScalarOffset(FuzzedDataProvider& in, bool is_signed) {
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 4:
    case 5:
      return in.ConsumeIntegralInRange<std::int32_t>(-512, 512);
    case 6:
      return in.ConsumeIntegralInRange<std::int32_t>(-70000, 70000);
    case 7:
      return in.ConsumeIntegral<std::int32_t>();
    default:  // -zero_point
      return is_signed ? -in.ConsumeIntegralInRange<int>(-128, 127)
                       : -in.ConsumeIntegralInRange<int>(0, 255);
  }
}

// Per-channel offsets in one of the scalar modes (0 zero points, 1 small, 2 moderate, 3 any), or
// mixed (4), where one entry in 16 is any int32.
void FillOffsetValues(Generator& gen, int mode, bool is_signed, std::int32_t* values, int count) {
  for (int i = 0; i < count; ++i) {
    int entry_mode = mode;
    if (mode == 4) entry_mode = gen.InRange(0, 15) == 0 ? 3 : static_cast<int>(gen.InRange(0, 1));
    switch (entry_mode) {
      case 0:
        values[i] =
            static_cast<std::int32_t>(is_signed ? -gen.InRange(-128, 127) : -gen.InRange(0, 255));
        break;
      case 1:
        values[i] = static_cast<std::int32_t>(gen.InRange(-512, 512));
        break;
      case 2:
        values[i] = static_cast<std::int32_t>(gen.InRange(-70000, 70000));
        break;
      default:
        values[i] = static_cast<std::int32_t>(gen.InRange(kInt32Min, kInt32Max));
        break;
    }
  }
}

void DecodeOffsets(FuzzedDataProvider& in, Generator& gen, bool is_signed, int count,
                   bool allow_per_channel, OffsetsData* offsets) {
  offsets->per_channel = allow_per_channel && in.ConsumeBool();
  if (!offsets->per_channel) {
    offsets->scalar = DecodeScalarOffset(in, is_signed);
    return;
  }
  offsets->size = count;
  offsets->values.Allocate(static_cast<std::size_t>(count));
  static const int kModes[8] = {0, 0, 0, 1, 1, 4, 2, 3};
  FillOffsetValues(gen, kModes[in.ConsumeIntegralInRange<int>(0, 7)], is_signed,
                   offsets->values.data.get(), count);
}

// The largest |value + offset| over the operand type's values and every offset: the library's
// depth bound (doc/design.md, "The int32 overflow bound"), derived here independently.
std::int64_t MaxAbsShifted(bool is_signed, const OffsetsData& offsets, int count) {
  const std::int64_t low = is_signed ? -128 : 0, high = is_signed ? 127 : 255;
  std::int64_t largest = 0;
  const int entries = offsets.per_channel ? count : 1;
  for (int i = 0; i < entries; ++i) {
    largest = std::max({largest, std::abs(low + offsets(i)), std::abs(high + offsets(i))});
  }
  return largest;
}

bool DepthIsSafe(const Case& c) {
  if (c.rows <= 0 || c.cols <= 0) return true;  // an empty result is never computed
  const std::int64_t product = MaxAbsShifted(c.lhs.is_signed, c.lhs_offset, c.rows) *
                               MaxAbsShifted(c.rhs.is_signed, c.rhs_offset, c.cols);
  return static_cast<__int128>(c.depth) * product <= kInt32Max;
}

// Scalar offsets that put the depth right at the int32 bound, or one past it.
void OffsetsAtTheDepthBound(FuzzedDataProvider& in, Case* c) {
  if (c->depth <= 0) return;
  c->lhs_offset = OffsetsData();
  c->rhs_offset = OffsetsData();
  c->lhs_offset.scalar = in.ConsumeIntegralInRange<std::int32_t>(-70000, 70000);
  const std::int64_t max_lhs = MaxAbsShifted(c->lhs.is_signed, c->lhs_offset, 1);
  const std::int64_t rhs_high = c->rhs.is_signed ? 127 : 255;
  std::int64_t max_rhs = kInt32Max / c->depth / max_lhs + in.ConsumeIntegralInRange<int>(-1, 1);
  // With rhs_offset = max_rhs - high, the largest |rhs + rhs_offset| is max_rhs as long as it
  // is at least half the type's range.
  max_rhs = std::max<std::int64_t>(max_rhs, 128);
  c->rhs_offset.scalar =
      static_cast<std::int32_t>(std::min<std::int64_t>(max_rhs - rhs_high, kInt32Max));
}

// The declared range of `bits` for an operand: uint8 [0, 2^bits - 1], int8 [-2^(bits-1),
// 2^(bits-1) - 1]; [0, 255] or [-128, 127] for 8 bits.
std::pair<int, int> DeclaredRange(bool is_signed, int bits) {
  if (is_signed) return {-(1 << (bits - 1)), (1 << (bits - 1)) - 1};
  return {0, (1 << bits) - 1};
}

// Fills every stored byte (padding included, with values outside any declared range too),
// then the entries: uniform, the type's (or declared range's) extremes, one constant, or the
// input's own bytes. `bits` < 8 keeps entries inside the declared range.
void FillOperand(FuzzedDataProvider& in, Generator& gen, int bits, Operand* op) {
  gen.Fill(op->data, static_cast<std::size_t>(op->layout.extent()));
  const std::pair<int, int> range = DeclaredRange(op->is_signed, bits);
  const int low = range.first, high = range.second;
  const auto fit = [low, high](int value) {
    // Keep the low `bits` bits, sign-extended for int8.
    const int span = high - low + 1;
    return low + ((value - low) % span + span) % span;
  };
  const int mode = in.ConsumeIntegralInRange<int>(0, 3);
  const int constant = fit(in.ConsumeIntegral<std::uint8_t>() - (op->is_signed ? 128 : 0));
  std::vector<std::uint8_t> bytes;
  if (mode == 3 && !op->layout.empty()) {
    bytes = in.ConsumeBytes<std::uint8_t>(
        std::min<std::int64_t>(static_cast<std::int64_t>(op->layout.rows) * op->layout.cols, 4096));
  }
  std::size_t next_byte = 0;
  // An empty matrix may have 2^31 rows or columns of nothing.
  if (op->layout.empty()) return;
  for (int r = 0; r < op->layout.rows; ++r) {
    for (int k = 0; k < op->layout.cols; ++k) {
      int value;
      if (mode == 1) {
        value = (gen.Next() & 1) != 0 ? high : low;
      } else if (mode == 2) {
        value = constant;
      } else if (mode == 3 && !bytes.empty()) {
        value = fit(bytes[next_byte++ % bytes.size()] - (op->is_signed ? 128 : 0));
      } else {
        value = static_cast<int>(gen.InRange(low, high));
      }
      op->data[op->layout.index(r, k)] = static_cast<std::uint8_t>(value);
    }
  }
}

// Fills a stage vector of `count` entries whose values obey `kind`'s rule.
void FillStageVector(Generator& gen, VectorKind kind, int count, StageVector* vector) {
  vector->own.Allocate(static_cast<std::size_t>(count));
  vector->data = vector->own.data.get();
  vector->size = count;
  const bool small = (gen.Next() & 3) != 0;
  for (int i = 0; i < count; ++i) {
    std::int64_t value;
    switch (kind) {
      case VectorKind::kMultiplier:
        value = small ? gen.InRange(1 << 29, kInt32Max) : gen.InRange(0, kInt32Max);
        break;
      case VectorKind::kShift:
        value = gen.InRange(0, 31);
        break;
      case VectorKind::kExponent:
        value = small ? gen.InRange(-20, 4) : gen.InRange(-31, 30);
        break;
      default:
        value = small ? gen.InRange(-100000, 100000) : gen.InRange(kInt32Min, kInt32Max);
        break;
    }
    vector->own.data[i] = static_cast<std::int32_t>(value);
  }
}

void DecodeStageValues(FuzzedDataProvider& in, StageValues* v) {
  // Mostly the ranges real models use, so that results are not all saturated.
  v->multiplier = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::int32_t>(1 << 29, kInt32Max)
                                   : in.ConsumeIntegralInRange<std::int32_t>(0, kInt32Max);
  v->shift = in.ConsumeIntegralInRange<int>(0, 31);
  v->exponent = in.ConsumeIntegralInRange<int>(-31, 30);
  v->offset =
      in.ConsumeBool() ? in.ConsumeIntegral<std::int8_t>() : in.ConsumeIntegral<std::int32_t>();
  const std::int32_t a =
      in.ConsumeBool() ? in.ConsumeIntegral<std::int16_t>() : in.ConsumeIntegral<std::int32_t>();
  const std::int32_t b =
      in.ConsumeBool() ? in.ConsumeIntegral<std::int16_t>() : in.ConsumeIntegral<std::int32_t>();
  v->clamp_min = std::min(a, b);
  v->clamp_max = std::max(a, b);
  v->pot_exponent = in.ConsumeIntegralInRange<int>(-31, 31);
  v->rounding = in.ConsumeBool() ? Rounding::kStochastic : Rounding::kNearest;
  v->seed = in.ConsumeIntegral<std::uint32_t>();
  v->zero =
      in.ConsumeBool() ? in.ConsumeIntegral<std::int16_t>() : in.ConsumeIntegral<std::int32_t>();
  v->amplitude = in.ConsumeBool() ? in.ConsumeIntegralInRange<std::int32_t>(1, 1 << 16)
                                  : in.ConsumeIntegralInRange<std::int32_t>(1, kInt32Max);
  v->leaky_shift = in.ConsumeIntegralInRange<int>(0, 31);
  v->axis[0] = in.ConsumeBool() ? ChannelAxis::kCol : ChannelAxis::kRow;
  v->axis[1] = in.ConsumeBool() ? ChannelAxis::kCol : ChannelAxis::kRow;
}

// An int outside [low, high].
int OutsideRange(FuzzedDataProvider& in, int low, int high) {
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return low - 1;
    case 1:
      return high + 1;
    case 2:
      return in.ConsumeIntegralInRange<int>(std::numeric_limits<int>::min(), low - 1);
    default:
      return in.ConsumeIntegralInRange<int>(high + 1, kMaxInt);
  }
}

// ---------------------------------------------------------------------------------------------
// Applying a misuse. Each returns false when it does not apply to the decoded case (which then
// runs well-formed) and otherwise sets the expectation.

Operand& OperandNamed(Case& c, int which) { return which == 0 ? c.lhs : c.rhs; }
const char* const kMatrixNames[] = {"lhs", "rhs", "result"};

Layout& CallLayout(Case& c, int which) {
  return which == 0 ? c.lhs.call : which == 1 ? c.rhs.call : c.result_call;
}

bool ApplyStageMisuse(FuzzedDataProvider& in, Generator& gen, Case& c) {
  const PipelineInfo& info = kPipelines[c.pipeline];
  StageValues& v = c.stages;
  const auto stage_name = [](int index) { return "pipeline[" + std::to_string(index) + "]"; };
  switch (c.misuse) {
    case Misuse::kStageParameter: {
      // Out-of-range fields and out-of-range per-channel entries alike.
      const int vector_candidates = info.vector_count;
      const int candidates = info.field_count + vector_candidates;
      if (candidates == 0) return false;
      const int pick = in.ConsumeIntegralInRange<int>(0, candidates - 1);
      if (pick < info.field_count) {
        const FieldSlot slot = info.fields[pick];
        switch (slot.field) {
          case Field::kMultiplier:
            v.multiplier = in.ConsumeIntegralInRange<std::int32_t>(kInt32Min, -1);
            break;
          case Field::kShift:
            v.shift = OutsideRange(in, 0, 31);
            break;
          case Field::kExponent:
            v.exponent = OutsideRange(in, -31, 30);
            break;
          case Field::kPotExponent:
            v.pot_exponent = OutsideRange(in, -31, 31);
            break;
          case Field::kClamp:
            // min > max.
            if (v.clamp_min < v.clamp_max) {
              std::swap(v.clamp_min, v.clamp_max);
            } else if (v.clamp_max > kInt32Min) {
              --v.clamp_max;
            } else {
              ++v.clamp_min;
            }
            break;
          case Field::kAmplitude:
            v.amplitude = in.ConsumeIntegralInRange<std::int32_t>(kInt32Min, 0);
            break;
          case Field::kLeakyShift:
            v.leaky_shift = OutsideRange(in, 0, 31);
            break;
        }
        c.misuse_detail = "field " + std::to_string(static_cast<int>(slot.field));
        c.expect.Reject(stage_name(slot.stage));
        return true;
      }
      const int index = pick - info.field_count;
      const VectorSlot slot = info.vectors[index];
      StageVector& vector = v.vectors[index];
      if (vector.size == 0 || slot.kind == VectorKind::kAny) return false;
      const int entry = in.ConsumeIntegralInRange<int>(0, vector.size - 1);
      std::int32_t bad;
      if (slot.kind == VectorKind::kMultiplier) {
        bad = in.ConsumeIntegralInRange<std::int32_t>(kInt32Min, -1);
      } else if (slot.kind == VectorKind::kShift) {
        bad = OutsideRange(in, 0, 31);
      } else {
        bad = OutsideRange(in, -31, 30);
      }
      vector.own.data[entry] = bad;
      c.misuse_detail = "vector " + std::to_string(index) + " entry " + std::to_string(entry) +
                        " = " + std::to_string(bad);
      c.expect.Reject(stage_name(slot.stage));
      return true;
    }
    case Misuse::kStageVector: {
      if (info.vector_count == 0) return false;
      const int index = in.ConsumeIntegralInRange<int>(0, info.vector_count - 1);
      StageVector& vector = v.vectors[index];
      if (vector.size > 0 && in.ConsumeBool()) {
        vector.data = nullptr;
        c.misuse_detail = "vector " + std::to_string(index) + " null";
      } else {
        int size = vector.size + in.ConsumeIntegralInRange<int>(-5, 5);
        if (size == vector.size || size < 0) size = vector.size + 1;
        FillStageVector(gen, info.vectors[index].kind, size, &vector);
        c.misuse_detail = "vector " + std::to_string(index) + " of " + std::to_string(size);
      }
      c.expect.Reject(stage_name(info.vectors[index].stage));
      return true;
    }
    case Misuse::kInvalidRounding: {
      if (info.rounding_stage < 0 || c.rows == 0 || c.cols == 0) return false;
      const int value = in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<int>(2, 255);
      v.rounding = static_cast<Rounding>(value);
      c.misuse_detail = "Rounding " + std::to_string(value);
      c.expect.Reject(stage_name(info.rounding_stage));
      return true;
    }
    case Misuse::kInvalidChannelAxis: {
      if (info.vector_count == 0 || c.rows == 0 || c.cols == 0) return false;
      const VectorSlot slot =
          info.vectors[in.ConsumeIntegralInRange<int>(0, info.vector_count - 1)];
      const int value = in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<int>(2, 255);
      v.axis[slot.axis] = static_cast<ChannelAxis>(value);
      c.misuse_detail = "ChannelAxis " + std::to_string(value);
      c.expect.Reject(stage_name(slot.stage));
      return true;
    }
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding the case

// Decodes the first choices, the shape, the storage layouts and the stage parameters.
void DecodeCase(FuzzedDataProvider& in, Harness harness, Case* cp) {
  Case& c = *cp;
  // The first choices (the seeds set them; see "Seeds").
  const std::uint8_t misuse_byte = in.ConsumeIntegral<std::uint8_t>();
  const int misuses = harness == Harness::kGemm ? kGemmMisuses : kBitDepthMisuses;
  c.misuse =
      misuse_byte < 128 ? Misuse::kNone : static_cast<Misuse>(1 + (misuse_byte - 128) % misuses);
  c.pipeline = in.ConsumeIntegral<std::uint8_t>() % kPipelineCount;
  if (harness == Harness::kBitDepth) {
    BitDepthParams params;
    params.mode = in.ConsumeIntegral<std::uint8_t>() % 2 == 0 ? BitDepthMode::kRequantize
                                                              : BitDepthMode::kDeclaredRange;
    params.rounding = static_cast<BitDepthRounding>(in.ConsumeIntegral<std::uint8_t>() % 4);
    params.lhs_bits = 1 + in.ConsumeIntegral<std::uint8_t>() % 8;
    params.rhs_bits = 1 + in.ConsumeIntegral<std::uint8_t>() % 8;
    params.seed = in.ConsumeIntegral<std::uint32_t>();
    c.bit_depth = params;
    c.pack_bit_depth = params;
  }
  c.lhs.is_signed = in.ConsumeBool();
  c.rhs.is_signed = in.ConsumeBool();

  // Shapes: mostly up to 48 on every side; some deep, matrix-vector, wide or tiny ones; and
  // sizes up to INT_MAX where another side is 0, so that nothing needs that much memory.
  bool huge = false;
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 10:
    case 11:
      c.rows = in.ConsumeIntegralInRange<int>(1, 16);
      c.depth = in.ConsumeIntegralInRange<int>(49, 400);
      c.cols = in.ConsumeIntegralInRange<int>(1, 16);
      break;
    case 12:
      c.rows = in.ConsumeIntegralInRange<int>(0, 3);
      c.depth = in.ConsumeIntegralInRange<int>(0, 3);
      c.cols = in.ConsumeIntegralInRange<int>(0, 3);
      break;
    case 13:
      c.rows = in.ConsumeIntegralInRange<int>(1, 48);
      c.depth = in.ConsumeIntegralInRange<int>(1, 400);
      c.cols = in.ConsumeIntegralInRange<int>(1, 2);
      if (in.ConsumeBool()) std::swap(c.rows, c.cols);
      break;
    case 14:
      c.rows = in.ConsumeIntegralInRange<int>(1, 4);
      c.depth = in.ConsumeIntegralInRange<int>(1, 64);
      c.cols = in.ConsumeIntegralInRange<int>(49, 200);
      break;
    case 15: {
      huge = true;
      const int large = in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(kMaxInt - 64, kMaxInt)
                                         : in.ConsumeIntegralInRange<int>(1, kMaxInt);
      const int side = in.ConsumeIntegralInRange<int>(0, 2);
      c.rows = side == 0 ? large : 0;
      c.depth = side == 1 ? large : 0;
      c.cols = side == 2 ? large : 0;
      break;
    }
    default:
      c.rows = in.ConsumeIntegralInRange<int>(1, 48);
      c.depth = in.ConsumeIntegralInRange<int>(1, 48);
      c.cols = in.ConsumeIntegralInRange<int>(1, 48);
      break;
  }
  // Per-channel vectors have one entry per row or column: none for a side of 2^31.
  if (huge && kPipelines[c.pipeline].vector_count > 0) c.pipeline = 0;

  const auto order = [&] { return in.ConsumeBool() ? Order::kColMajor : Order::kRowMajor; };
  c.lhs.layout = {c.rows, c.depth, order(), 0};
  c.lhs.layout.stride = DecodeStride(in, c.lhs.layout, 1, kMaxOperandBytes);
  c.rhs.layout = {c.depth, c.cols, order(), 0};
  c.rhs.layout.stride = DecodeStride(in, c.rhs.layout, 1, kMaxOperandBytes);
  const int result_bytes = kPipelines[c.pipeline].result_bytes;
  c.result = {c.rows, c.cols, order(), 0};
  c.result.stride = DecodeStride(in, c.result, result_bytes, kMaxResultBytes);
  c.lhs.call = c.lhs.layout;
  c.rhs.call = c.rhs.layout;
  c.result_call = c.result;
  // Padding before the result map (writes there are errors too), aligned for its type.
  if (in.ConsumeIntegralInRange<int>(0, 3) == 3) {
    c.result_offset = static_cast<std::size_t>(in.ConsumeIntegralInRange<int>(1, 16) * 4);
  }
  c.tiny_blocks = in.ConsumeBool();
  c.threaded_kernel = in.ConsumeIntegralInRange<int>(0, 7);
  c.threads = in.ConsumeIntegralInRange<int>(2, 3);
  c.prepacked = in.ConsumeBool();
  // Packing keeps per-column data: no prepacking of 2^31 columns.
  if (c.cols > 100000) c.prepacked = false;
  c.classic_entry = in.ConsumeBool();
  DecodeStageValues(in, &c.stages);
}

std::string DescribeOffsets(const OffsetsData& offsets) {
  if (!offsets.per_channel) return std::to_string(offsets.scalar);
  std::string text = "per-channel[" + std::to_string(offsets.size) + "]";
  if (offsets.null_data) return text + " null";
  for (int i = 0; i < std::min(offsets.size, 4); ++i) text += " " + std::to_string(offsets(i));
  return text + (offsets.size > 4 ? " ..." : "");
}

std::string DescribeParams(const BitDepthParams& p) {
  return "L" + std::to_string(p.lhs_bits) + "R" + std::to_string(p.rhs_bits) + " " +
         (p.mode == BitDepthMode::kRequantize      ? "requantize"
          : p.mode == BitDepthMode::kDeclaredRange ? "declared"
                                                   : "mode?") +
         " rounding " + std::to_string(static_cast<int>(p.rounding)) + " seed " +
         std::to_string(p.seed);
}

std::string DescribeCase(const Case& c) {
  std::string text =
      std::string(c.lhs.is_signed ? "int8" : "uint8") + " lhs " + Describe(c.lhs.call) +
      (c.lhs.null_data ? " null" : "") + ", " + (c.rhs.is_signed ? "int8" : "uint8") + " rhs " +
      Describe(c.rhs.call) + (c.rhs.null_data ? " null" : "") + ", result " +
      Describe(c.result_call) + (c.result_null_data ? " null" : "") + " at +" +
      std::to_string(c.result_offset) + "; offsets " + DescribeOffsets(c.lhs_offset) + " / " +
      DescribeOffsets(c.rhs_offset) + "; pipeline " + std::to_string(c.pipeline) + " (" +
      kPipelines[c.pipeline].name + ")";
  if (c.bit_depth) text += "; bit depth " + DescribeParams(*c.bit_depth);
  if (c.prepacked) {
    text += "; prepacked";
    if (c.pack_bit_depth) text += " with " + DescribeParams(*c.pack_bit_depth);
  }
  if (c.classic_entry && c.pipeline == 5) text += "; classic Gemm";
  if (c.tiny_blocks) text += "; tiny blocks";
  text += std::string("; misuse: ") + MisuseName(c.misuse);
  if (!c.misuse_detail.empty()) text += " (" + c.misuse_detail + ")";
  text += "; expect " + c.expect.Describe();
  return text;
}

// ---------------------------------------------------------------------------------------------
// References

// Both references return nothing for an empty result, whose other side may be 2^31.
std::vector<std::int64_t> ExactAccumulators(const Case& c) {
  if (c.rows == 0 || c.cols == 0) return {};
  std::vector<std::int64_t> acc(static_cast<std::size_t>(c.rows) * c.cols);
  for (int r = 0; r < c.rows; ++r) {
    for (int col = 0; col < c.cols; ++col) {
      std::int64_t sum = 0;
      for (int k = 0; k < c.depth; ++k) {
        sum += (static_cast<std::int64_t>(c.lhs.Value(r, k)) + c.lhs_offset(r)) *
               (static_cast<std::int64_t>(c.rhs.Value(k, col)) + c.rhs_offset(col));
      }
      acc[static_cast<std::size_t>(r) * c.cols + col] = sum;
    }
  }
  return acc;
}

// The requantize-mode result as doc/less-than-8-bit.md defines it (as test/bit_depth_test.cc
// evaluates it): each value requantized with its rounding offset, then round((255^2 sum a'b' +
// 255 PR ob sum a' + 255 PL oa sum b' + K oa ob PL PR) / (PL PR)), saturated to int32. The
// sequences are stepped here; only the phases' hash is the library's.
std::uint8_t XorshiftStep(std::uint8_t x) {
  x = static_cast<std::uint8_t>(x ^ (x << 7));
  x = static_cast<std::uint8_t>(x ^ (x >> 5));
  return static_cast<std::uint8_t>(x ^ (x << 3));
}

int RoundingOffset(BitDepthRounding rounding, std::uint32_t seed, internal::Operand operand,
                   int line, int k) {
  static const std::vector<int> add_mod = [] {
    std::vector<int> values;
    for (int j = 0, x = 0; j < 255; ++j, x = (x + 97) % 255) values.push_back(x);
    return values;
  }();
  static const std::vector<int> xorshift = [] {
    std::vector<int> values;
    std::uint8_t state = 1;
    for (int j = 0; j < 255; ++j, state = XorshiftStep(state)) values.push_back(state - 1);
    return values;
  }();
  if (rounding == BitDepthRounding::kNearest) return 127;
  const int position = (internal::SequencePhase(seed, operand, line, k / 255) + k % 255) % 255;
  return rounding == BitDepthRounding::kAddMod97 ? add_mod[position] : xorshift[position];
}

std::vector<std::int64_t> RequantizedAccumulators(const Case& c, const BitDepthParams& params) {
  if (c.rows == 0 || c.cols == 0) return {};
  const BitDepthRounding rounding = ResolveRounding(params.rounding, c.depth);
  const int lhs_shift = c.lhs.is_signed ? 128 : 0, rhs_shift = c.rhs.is_signed ? 128 : 0;
  const std::int64_t pl = (1 << params.lhs_bits) - 1, pr = (1 << params.rhs_bits) - 1;
  std::vector<std::int64_t> a(static_cast<std::size_t>(c.rows) * c.depth);
  std::vector<std::int64_t> b(static_cast<std::size_t>(c.cols) * c.depth);
  std::vector<std::int64_t> sum_a(c.rows), sum_b(c.cols);
  for (int r = 0; r < c.rows; ++r) {
    for (int k = 0; k < c.depth; ++k) {
      const std::int64_t value =
          ((c.lhs.Value(r, k) + lhs_shift) * pl +
           RoundingOffset(rounding, params.seed, internal::Operand::kLhs, r, k)) /
          255;
      a[static_cast<std::size_t>(r) * c.depth + k] = value;
      sum_a[r] += value;
    }
  }
  for (int col = 0; col < c.cols; ++col) {
    for (int k = 0; k < c.depth; ++k) {
      const std::int64_t value =
          ((c.rhs.Value(k, col) + rhs_shift) * pr +
           RoundingOffset(rounding, params.seed, internal::Operand::kRhs, col, k)) /
          255;
      b[static_cast<std::size_t>(col) * c.depth + k] = value;
      sum_b[col] += value;
    }
  }
  std::vector<std::int64_t> acc(static_cast<std::size_t>(c.rows) * c.cols);
  const __int128 divisor = pl * pr;
  for (int r = 0; r < c.rows; ++r) {
    const __int128 oa = static_cast<std::int64_t>(c.lhs_offset(r)) - lhs_shift;
    for (int col = 0; col < c.cols; ++col) {
      const __int128 ob = static_cast<std::int64_t>(c.rhs_offset(col)) - rhs_shift;
      __int128 products = 0;
      for (int k = 0; k < c.depth; ++k) {
        products += a[static_cast<std::size_t>(r) * c.depth + k] *
                    b[static_cast<std::size_t>(col) * c.depth + k];
      }
      const __int128 n = 255 * 255 * products + 255 * pr * ob * sum_a[r] +
                         255 * pl * oa * sum_b[col] + c.depth * oa * ob * pl * pr;
      // round(n / divisor), divisor odd so there are no ties: floor((n + (d - 1) / 2) / d).
      const __int128 m = n + (divisor - 1) / 2;
      const __int128 rounded = m >= 0 ? m / divisor : -((-m + divisor - 1) / divisor);
      acc[static_cast<std::size_t>(r) * c.cols + col] = static_cast<std::int64_t>(
          std::min<__int128>(std::max<__int128>(rounded, kInt32Min), kInt32Max));
    }
  }
  return acc;
}

template <typename Result, typename Pipeline>
std::vector<Result> ReferenceResult(const Case& c, const Pipeline& pipeline) {
  const bool requantize = c.bit_depth && c.bit_depth->mode == BitDepthMode::kRequantize;
  const std::vector<std::int64_t> acc =
      requantize ? RequantizedAccumulators(c, *c.bit_depth) : ExactAccumulators(c);
  std::vector<Result> expected(acc.size());
  if (acc.empty()) return expected;
  for (int r = 0; r < c.rows; ++r) {
    for (int col = 0; col < c.cols; ++col) {
      const std::int64_t value = acc[static_cast<std::size_t>(r) * c.cols + col];
      if (value < kInt32Min || value > kInt32Max) {
        Fail("the reference accumulator " + std::to_string(value) + " at (" + std::to_string(r) +
             ", " + std::to_string(col) + ") does not fit int32 under the depth bound (harness)");
      }
      expected[static_cast<std::size_t>(r) * c.cols + col] =
          ApplyStages(pipeline, static_cast<std::int32_t>(value), r, col);
    }
  }
  return expected;
}

// ---------------------------------------------------------------------------------------------
// Running and checking

void CheckInputsUnchanged(const Case& c, const std::string& path) {
  for (const Operand* op : {&c.lhs, &c.rhs}) {
    if (op->own.size > 0 && std::memcmp(op->own.data.get(), op->before.data(), op->own.size) != 0) {
      Fail(std::string(op == &c.lhs ? "lhs" : "rhs") + " storage was written, on " + path);
    }
  }
}

void CheckRejection(const Case& c, const Error& error, const std::string& path) {
  if (c.expect.kind == Expectation::kAccept) {
    Fail(std::string("a well-formed call was rejected on ") + path + ": " + error.what());
  }
  if (!c.expect.Names(error.argument())) {
    Fail("lowbit::Error names '" + error.argument() + "', expected " + c.expect.Describe() +
         ", on " + path + ": " + error.what());
  }
  if (c.arena.size > 0 &&
      std::memcmp(c.arena.data.get(), c.arena_before.data(), c.arena.size) != 0) {
    std::size_t i = 0;
    while (c.arena.data[i] == c.arena_before[i]) ++i;
    Fail("a rejected call wrote result memory (byte " + std::to_string(i) + " of " +
         std::to_string(c.arena.size) + ") on " + path + ": " + error.what());
  }
  CheckInputsUnchanged(c, path);
}

template <typename Result>
void CheckResult(const Case& c, const std::vector<Result>& expected, const std::string& path) {
  if (c.expect.kind == Expectation::kReject) {
    Fail("accepted on " + path + ", expected lowbit::Error (" + c.expect.Describe() + ")");
  }
  CheckInputsUnchanged(c, path);
  const std::uint8_t* arena = c.arena.data.get();
  const std::uint8_t* base = arena + c.result_offset;
  const Layout& layout = c.result;
  for (int r = 0; r < (layout.empty() ? 0 : c.rows); ++r) {
    for (int col = 0; col < c.cols; ++col) {
      Result got;
      std::memcpy(&got, base + layout.index(r, col) * sizeof(Result), sizeof(Result));
      const Result want = expected[static_cast<std::size_t>(r) * c.cols + col];
      if (got != want) {
        Fail("result (" + std::to_string(r) + ", " + std::to_string(col) + ") is " +
             std::to_string(got) + ", the reference " + std::to_string(want) + ", on " + path);
      }
    }
  }
  // Every other byte of the arena: padding before, between and after the map's lines, and any
  // input stored there.
  const auto check_unchanged = [&](std::size_t begin, std::size_t end) {
    if (end > begin &&
        std::memcmp(arena + begin, c.arena_before.data() + begin, end - begin) != 0) {
      std::size_t i = begin;
      while (arena[i] == c.arena_before[i]) ++i;
      Fail("byte " + std::to_string(i) + " of the result memory, outside the result entries (at +" +
           std::to_string(c.result_offset) + "), was written on " + path);
    }
  };
  if (layout.empty()) {
    check_unchanged(0, c.arena.size);
    return;
  }
  std::size_t position = 0;
  for (int line = 0; line < layout.lines(); ++line) {
    const std::size_t start =
        c.result_offset + static_cast<std::size_t>(line) * layout.stride * sizeof(Result);
    check_unchanged(position, start);
    position = start + static_cast<std::size_t>(layout.line_length()) * sizeof(Result);
  }
  check_unchanged(position, c.arena.size);
}

template <typename Lhs, typename RhsArgument, typename Result, typename Pipeline>
void Call(const Case& c, Context* context, const MatrixMap<const Lhs>& lhs, const RhsArgument& rhs,
          MatrixMap<Result>* result, const Pipeline& pipeline) {
  const Offsets lhs_offset = c.lhs_offset.Get(), rhs_offset = c.rhs_offset.Get();
  if constexpr (std::tuple_size<Pipeline>::value == 0) {
    if (c.bit_depth) {
      Gemm(context, lhs, rhs, result, lhs_offset, rhs_offset, *c.bit_depth);
    } else {
      Gemm(context, lhs, rhs, result, lhs_offset, rhs_offset);
    }
  } else {
    if constexpr (std::is_same<Pipeline, ClassicPipeline>::value &&
                  !std::is_same<RhsArgument, PrepackedRhs>::value) {
      if (c.classic_entry && !c.bit_depth) {
        const auto& scale = std::get<0>(pipeline);
        Gemm(context, lhs, rhs, result, lhs_offset, rhs_offset, scale.result_offset,
             scale.result_mult_int, scale.result_shift);
        return;
      }
    }
    if (c.bit_depth) {
      GemmWithOutputPipeline(context, lhs, rhs, result, lhs_offset, rhs_offset, pipeline,
                             *c.bit_depth);
    } else {
      GemmWithOutputPipeline(context, lhs, rhs, result, lhs_offset, rhs_offset, pipeline);
    }
  }
}

template <typename Lhs, typename Rhs, typename Pipeline>
void RunPaths(Case& c, const Pipeline& pipeline) {
  using Result = decltype(ApplyStages(pipeline, std::int32_t{0}, 0, 0));
  const auto map = [](const Operand& op, auto tag) {
    using Scalar = decltype(tag);
    return MatrixMap<const Scalar>(
        op.null_data ? nullptr : reinterpret_cast<const Scalar*>(op.data), op.call.rows,
        op.call.cols, op.call.order, op.call.stride);
  };
  const MatrixMap<const Lhs> lhs = map(c.lhs, Lhs{});
  const MatrixMap<const Rhs> rhs = map(c.rhs, Rhs{});
  MatrixMap<Result> result(
      c.result_null_data ? nullptr
                         : reinterpret_cast<Result*>(c.arena.data.get() + c.result_offset),
      c.result_call.rows, c.result_call.cols, c.result_call.order, c.result_call.stride);
  MatrixMap<Result>* result_pointer = c.null_result ? nullptr : &result;
  std::vector<Result> expected;
  if (c.expect.kind == Expectation::kAccept || c.expect.kind == Expectation::kEither) {
    expected = ReferenceResult<Result>(c, pipeline);
  }
  const std::vector<Kernel>& kernels = Kernels();
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    const Kernel kernel = kernels[k];
    std::optional<PrepackedRhs> packed;
    if (c.prepacked) {
      const Kernel pack_kernel =
          c.misuse == Misuse::kPrepackedOtherKernel ? kernels[(k + 1) % kernels.size()] : kernel;
      const std::string path = std::string("PrepackedRhs on ") + KernelName(pack_kernel);
      c.RestoreArena();
      try {
        Context& context = ContextFor(pack_kernel, 1, c.tiny_blocks);
        if (c.pack_bit_depth) {
          packed.emplace(&context, rhs, *c.pack_bit_depth);
        } else {
          packed.emplace(&context, rhs);
        }
      } catch (const Error& error) {
        CheckRejection(c, error, path);
        continue;
      } catch (const std::exception& error) {
        Fail("an exception other than lowbit::Error from " + path + ": " + error.what());
      } catch (...) {
        Fail("a non-std::exception from " + path);
      }
    }
    // pthreadpool's workers spin for a while after each parallel call, so that on 2 cores
    // every kernel on every thread count would spend most of each run waiting for a core: one
    // thread on each kernel, and several on one of them.
    const bool threaded =
        static_cast<int>(k) == c.threaded_kernel % static_cast<int>(kernels.size());
    for (int threads : {1, threaded ? c.threads : 0}) {
      if (threads == 0) continue;
      const std::string path = std::string(KernelName(kernel)) + ", " + std::to_string(threads) +
                               " threads" + (c.prepacked ? ", prepacked" : "") +
                               (c.tiny_blocks ? ", tiny blocks" : "");
      Context* context = c.null_context ? nullptr : &ContextFor(kernel, threads, c.tiny_blocks);
      c.RestoreArena();
      try {
        if (packed) {
          Call(c, context, lhs, *packed, result_pointer, pipeline);
        } else {
          Call(c, context, lhs, rhs, result_pointer, pipeline);
        }
      } catch (const Error& error) {
        CheckRejection(c, error, path);
        continue;
      } catch (const std::exception& error) {
        Fail("an exception other than lowbit::Error on " + path + ": " + error.what());
      } catch (...) {
        Fail("a non-std::exception on " + path);
      }
      CheckResult(c, expected, path);
    }
  }
}

template <typename Visit>
void VisitOperandTypes(bool lhs_signed, bool rhs_signed, Visit&& visit) {
  if (lhs_signed) {
    if (rhs_signed) {
      visit(std::int8_t{}, std::int8_t{});
    } else {
      visit(std::int8_t{}, std::uint8_t{});
    }
  } else if (rhs_signed) {
    visit(std::uint8_t{}, std::int8_t{});
  } else {
    visit(std::uint8_t{}, std::uint8_t{});
  }
}

// The context's own checks: thread counts outside [1, 1024] and kernels this CPU lacks (or
// values no Kernel has) are refused, and the setting is kept.
void CheckContextSettings(FuzzedDataProvider& in) {
  static Context context;
  const int threads = OutsideRange(in, 1, 1024);
  try {
    context.set_max_num_threads(threads);
    Fail("set_max_num_threads(" + std::to_string(threads) + ") was accepted");
  } catch (const Error& error) {
    if (error.argument() != "threads") Fail(std::string("set_max_num_threads: ") + error.what());
  }
  if (context.max_num_threads() != 1) Fail("a refused thread count changed the context");
  int kernel_value = in.ConsumeIntegralInRange<int>(-2, 8);
  for (Kernel kernel : Kernels()) {
    if (static_cast<int>(kernel) == kernel_value || kernel_value == 0) return;  // available
  }
  try {
    context.set_kernel(static_cast<Kernel>(kernel_value));
    Fail("set_kernel(" + std::to_string(kernel_value) + ") was accepted");
  } catch (const Error& error) {
    if (error.argument() != "kernel") Fail(std::string("set_kernel: ") + error.what());
  }
  if (context.kernel() != Kernel::kAuto) Fail("a refused kernel changed the context");
}

// Lays out the storage: each operand exactly its extent (ASan catches reads past it), the
// result arena with its padding, and whatever a misuse puts inside the arena.
void AllocateStorage(FuzzedDataProvider& in, Generator& gen, Case& c, int input_in_arena,
                     bool input_overlaps, int vector_in_arena) {
  const int result_bytes = kPipelines[c.pipeline].result_bytes;
  // Maps a misuse enlarged stay inside the storage where that is cheap: a call wrongly accepted
  // then shows as such, not as an overflow of the harness's own buffers.
  const auto storage_extent = [](const Layout& a, const Layout& b, int element_bytes) {
    std::int64_t extent = a.extent();
    if (b.order == a.order && b.stride == a.stride && !b.empty() &&
        b.extent() * element_bytes <= kMaxOperandBytes) {
      extent = std::max(extent, b.extent());
    }
    return extent;
  };
  const std::int64_t result_extent_bytes =
      storage_extent(c.result, c.result_call, result_bytes) * result_bytes;
  const std::size_t trailing =
      in.ConsumeIntegralInRange<int>(0, 3) == 3 ? in.ConsumeIntegralInRange<int>(1, 64) : 0;
  std::size_t arena_bytes = c.result_offset + result_extent_bytes + trailing;
  std::size_t input_offset = 0;
  for (int which = 0; which < 2; ++which) {
    Operand& op = OperandNamed(c, which);
    const std::int64_t extent = storage_extent(op.layout, op.call, 1);
    if (which == input_in_arena) {
      const std::size_t result_end = c.result_offset + result_extent_bytes;
      if (input_overlaps && extent > 0 && result_extent_bytes > 0) {
        if (in.ConsumeBool()) {
          // The input starts inside the result.
          input_offset =
              c.result_offset + in.ConsumeIntegralInRange<std::size_t>(0, result_extent_bytes - 1);
        } else {
          // The result starts inside the input.
          input_offset = 0;
          c.result_offset =
              in.ConsumeIntegralInRange<std::size_t>(0, static_cast<std::size_t>(extent) - 1) / 4 *
              4;
          arena_bytes = c.result_offset + result_extent_bytes + trailing;
        }
      } else {
        // Right after the result: adjacent, and well-formed.
        input_offset = result_end;
      }
      arena_bytes = std::max<std::size_t>(arena_bytes, input_offset + extent);
    } else {
      op.own.Allocate(static_cast<std::size_t>(extent));
      op.data = op.own.data.get();
      gen.Fill(op.data, op.own.size);
    }
  }
  if (vector_in_arena >= 0) {
    StageVector& vector = c.stages.vectors[vector_in_arena];
    const std::size_t span = std::max<std::int64_t>(result_extent_bytes, 4);
    const std::size_t offset =
        c.result_offset + in.ConsumeIntegralInRange<std::size_t>(0, span - 1) / 4 * 4;
    arena_bytes = std::max(arena_bytes, offset + vector.size * sizeof(std::int32_t));
    c.arena.Allocate(arena_bytes);
    vector.data = reinterpret_cast<const std::int32_t*>(c.arena.data.get() + offset);
  } else {
    c.arena.Allocate(arena_bytes);
  }
  gen.Fill(c.arena.data.get(), c.arena.size);
  if (input_in_arena >= 0) OperandNamed(c, input_in_arena).data = c.arena.data.get() + input_offset;
}

void RunCase(FuzzedDataProvider& in, Harness harness) {
  Case c;
  DecodeCase(in, harness, &c);
  Generator gen(in.ConsumeIntegral<std::uint64_t>());
  if (c.misuse == Misuse::kContextSettings) {
    CheckContextSettings(in);
    return;
  }
  // Misuses the case cannot have run well-formed instead.
  if (c.misuse == Misuse::kPrepackedOtherKernel && Kernels().size() < 2) c.misuse = Misuse::kNone;
  if (c.misuse == Misuse::kPrepackedOtherKernel || c.misuse == Misuse::kPrepackedWithoutParams ||
      c.misuse == Misuse::kPrepackedParamsDiffer || c.misuse == Misuse::kCallWithoutParams) {
    const bool may_prepack = c.cols <= 100000;
    if (may_prepack) {
      c.prepacked = true;
    } else {
      c.misuse = Misuse::kNone;
    }
  }
  const bool huge = std::max({c.rows, c.depth, c.cols}) > 100000;

  // Offsets (per-channel only where a vector of that length is cheap).
  // (An exhausted input reads 0s: 0 is the plain choice wherever there is one.)
  const bool boundary = !huge && in.ConsumeIntegralInRange<int>(0, 7) == 7;
  DecodeOffsets(in, gen, c.lhs.is_signed, c.rows, !huge, &c.lhs_offset);
  DecodeOffsets(in, gen, c.rhs.is_signed, c.cols, !huge, &c.rhs_offset);
  if (boundary) OffsetsAtTheDepthBound(in, &c);

  // Stage vectors, full length for their axis.
  const PipelineInfo& info = kPipelines[c.pipeline];
  for (int i = 0; i < info.vector_count; ++i) {
    const int count = c.stages.axis[info.vectors[i].axis] == ChannelAxis::kRow ? c.rows : c.cols;
    FillStageVector(gen, info.vectors[i].kind, count, &c.stages.vectors[i]);
  }

  // The misuse, on the call's view of things; the storage follows.
  int input_in_arena = -1, vector_in_arena = -1;
  bool input_overlaps = false;
  const bool base_depth_safe = DepthIsSafe(c);
  bool applied = true;
  switch (c.misuse) {
    case Misuse::kNone:
    case Misuse::kContextSettings:
      break;
    case Misuse::kNegativeSize: {
      const int which = in.ConsumeIntegralInRange<int>(0, 2);
      const bool rows = in.ConsumeBool();
      const int value = in.ConsumeIntegralInRange<int>(std::numeric_limits<int>::min(), -1);
      (rows ? CallLayout(c, which).rows : CallLayout(c, which).cols) = value;
      c.misuse_detail = std::string(kMatrixNames[which]) + (rows ? ".rows" : ".cols");
      c.expect.Reject(c.misuse_detail);
      break;
    }
    case Misuse::kMismatchedSize: {
      // rhs.rows against the depth (with a prepacked rhs: one packed for another depth),
      // result.rows against lhs.rows, result.cols against rhs.cols.
      const int which = in.ConsumeIntegralInRange<int>(0, 2);
      Layout layout = which == 0 ? c.rhs.call : c.result_call;
      int& size = which == 2 ? layout.cols : layout.rows;
      const int old_size = size;
      if (old_size > 100000) {
        size = old_size - 1;  // near INT_MAX, where adding would overflow
      } else {
        size = old_size > 0 && in.ConsumeBool() ? in.ConsumeIntegralInRange<int>(0, old_size - 1)
                                                : old_size + in.ConsumeIntegralInRange<int>(1, 3);
      }
      if (which == 0) {
        if (layout.order == Order::kColMajor) layout.stride = std::max(layout.stride, layout.rows);
        // PrepackedRhs reads all of a deeper rhs: its storage must hold it (AllocateStorage).
        if (layout.extent() > kMaxOperandBytes) {
          applied = false;
          break;
        }
        c.rhs.layout.stride = layout.stride;
        c.rhs.call = layout;
      } else {
        c.result_call = layout;
      }
      const char* names[] = {"rhs.rows", "result.rows", "result.cols"};
      c.misuse_detail = std::string(names[which]) + " " + std::to_string(size);
      c.expect.Reject(names[which]);
      if (which != 0 && layout.stride < layout.line_length()) c.expect.Reject("result.stride");
      // A deeper prepacked rhs in declared-range mode holds bytes past the real depth.
      if (which == 0 && c.bit_depth && c.bit_depth->mode == BitDepthMode::kDeclaredRange) {
        c.expect.Reject("rhs", true);
      }
      break;
    }
    case Misuse::kShortStride: {
      const int which = in.ConsumeIntegralInRange<int>(0, 2);
      Layout& layout = CallLayout(c, which);
      layout.stride = layout.line_length() - in.ConsumeIntegralInRange<int>(1, 5);
      c.misuse_detail = std::string(kMatrixNames[which]) + ".stride";
      c.expect.Reject(c.misuse_detail);
      break;
    }
    case Misuse::kNullData: {
      const int which = in.ConsumeIntegralInRange<int>(0, 2);
      if (CallLayout(c, which).empty()) {
        applied = false;
        break;
      }
      (which == 0 ? c.lhs.null_data : which == 1 ? c.rhs.null_data : c.result_null_data) = true;
      c.misuse_detail = std::string(kMatrixNames[which]) + ".data";
      c.expect.Reject(c.misuse_detail);
      break;
    }
    case Misuse::kNullContext:
      c.null_context = true;
      c.expect.Reject("context", true);
      break;
    case Misuse::kNullResult:
      c.null_result = true;
      c.expect.Reject("result", true);
      break;
    case Misuse::kOffsetsVector: {
      const bool lhs = in.ConsumeBool();
      OffsetsData& offsets = lhs ? c.lhs_offset : c.rhs_offset;
      const int count = lhs ? c.rows : c.cols;
      if (huge) {
        applied = false;
        break;
      }
      if (count > 0 && in.ConsumeBool()) {
        offsets.per_channel = true;
        offsets.size = count;
        offsets.null_data = true;
      } else {
        int size = count + in.ConsumeIntegralInRange<int>(-5, 5);
        if (size == count || size < 0) size = count + 1;
        offsets.per_channel = true;
        offsets.size = size;
        offsets.values.Allocate(static_cast<std::size_t>(size));
        FillOffsetValues(gen, 1, lhs ? c.lhs.is_signed : c.rhs.is_signed, offsets.values.data.get(),
                         size);
      }
      c.misuse_detail = lhs ? "lhs_offset" : "rhs_offset";
      c.expect.Reject(c.misuse_detail, true);
      break;
    }
    case Misuse::kStageParameter:
    case Misuse::kStageVector:
    case Misuse::kInvalidRounding:
    case Misuse::kInvalidChannelAxis:
      applied = ApplyStageMisuse(in, gen, c);
      break;
    case Misuse::kResultOverlapsInput: {
      input_in_arena = in.ConsumeIntegralInRange<int>(0, 1);
      input_overlaps = in.ConsumeIntegralInRange<int>(0, 3) != 0;
      const Operand& op = OperandNamed(c, input_in_arena);
      const bool overlap = input_overlaps && !op.layout.empty() && !c.result.empty();
      c.misuse_detail =
          std::string(kMatrixNames[input_in_arena]) + (overlap ? " overlapping" : " adjacent");
      // A prepacked rhs is a copy: where its source was does not matter.
      if (overlap && !(input_in_arena == 1 && c.prepacked)) c.expect.Reject("result", true);
      break;
    }
    case Misuse::kStageVectorInResult: {
      if (info.vector_count == 0 || c.result.empty()) {
        applied = false;
        break;
      }
      vector_in_arena = in.ConsumeIntegralInRange<int>(0, info.vector_count - 1);
      if (c.stages.vectors[vector_in_arena].size == 0) {
        applied = false;
        vector_in_arena = -1;
        break;
      }
      c.misuse_detail = "vector " + std::to_string(vector_in_arena);
      c.expect.Reject("pipeline[" + std::to_string(info.vectors[vector_in_arena].stage) + "]");
      break;
    }
    case Misuse::kPrepackedOtherKernel:
      c.expect.Reject("rhs", true);
      break;
    case Misuse::kBitsOutOfRange: {
      const bool lhs = in.ConsumeBool();
      const int bits = OutsideRange(in, 1, 8);
      (lhs ? c.bit_depth->lhs_bits : c.bit_depth->rhs_bits) = bits;
      c.pack_bit_depth = c.bit_depth;
      c.misuse_detail = std::string(lhs ? "lhs_bits " : "rhs_bits ") + std::to_string(bits);
      c.expect.Reject(lhs ? "bit_depth.lhs_bits" : "bit_depth.rhs_bits", true);
      break;
    }
    case Misuse::kInvalidBitDepthRounding: {
      const int value = in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<int>(4, 255);
      c.bit_depth->rounding = static_cast<BitDepthRounding>(value);
      c.pack_bit_depth = c.bit_depth;
      c.misuse_detail = std::to_string(value);
      c.expect.Reject("bit_depth.rounding", true);
      break;
    }
    case Misuse::kInvalidBitDepthMode: {
      const int value = in.ConsumeBool() ? -1 : in.ConsumeIntegralInRange<int>(2, 255);
      c.bit_depth->mode = static_cast<BitDepthMode>(value);
      c.pack_bit_depth = c.bit_depth;
      c.misuse_detail = std::to_string(value);
      c.expect.Reject("bit_depth.mode", true);
      break;
    }
    case Misuse::kOutsideDeclaredRange:
      // Applied to the values below.
      c.bit_depth->mode = BitDepthMode::kDeclaredRange;
      c.pack_bit_depth = c.bit_depth;
      break;
    case Misuse::kPrepackedParamsDiffer: {
      BitDepthParams& packed = *c.pack_bit_depth;
      const int field = in.ConsumeIntegralInRange<int>(0, 4);
      if (field == 0) {
        packed.mode = packed.mode == BitDepthMode::kRequantize ? BitDepthMode::kDeclaredRange
                                                               : BitDepthMode::kRequantize;
        c.expect.Reject("bit_depth.mode", true);
      } else if (field == 1) {
        packed.rhs_bits = 1 + (packed.rhs_bits + in.ConsumeIntegralInRange<int>(0, 6)) % 8;
        c.expect.Reject("bit_depth.rhs_bits", true);
      } else if (field == 2) {
        packed.rounding = static_cast<BitDepthRounding>(
            (static_cast<int>(packed.rounding) + in.ConsumeIntegralInRange<int>(1, 3)) % 4);
        if (packed.mode == BitDepthMode::kRequantize) c.expect.Reject("bit_depth.rounding", true);
      } else if (field == 3) {
        packed.seed ^= in.ConsumeIntegralInRange<std::uint32_t>(1, 0xffffffffU);
        if (packed.mode == BitDepthMode::kRequantize) c.expect.Reject("bit_depth.seed", true);
      } else {
        // Allowed where the kernel the call's lhs_bits select reads the same packed layout.
        packed.lhs_bits = 1 + (packed.lhs_bits + in.ConsumeIntegralInRange<int>(0, 6)) % 8;
        c.expect.kind = Expectation::kEither;
        c.expect.arguments.push_back({"bit_depth.lhs_bits", true});
      }
      c.misuse_detail = "field " + std::to_string(field);
      break;
    }
    case Misuse::kPrepackedWithoutParams:
      c.pack_bit_depth.reset();
      c.expect.Reject("rhs", true);
      break;
    case Misuse::kCallWithoutParams:
      c.bit_depth.reset();
      c.expect.Reject("rhs", true);
      break;
    case Misuse::kCount:
      break;
  }
  if (!applied) {
    c.misuse = Misuse::kNone;
    c.misuse_detail.clear();
    c.expect = Expectation();
  }
  // A depth past the int32 bound is refused whatever else is wrong or right.
  if (!base_depth_safe) {
    if (c.expect.kind != Expectation::kReject) c.expect.arguments.clear();
    c.expect.kind = Expectation::kReject;
    c.expect.arguments.push_back({"lhs.cols", true});
  }
  // So is a side above internal::kLargestDimension, which packing could not round up in int.
  if (std::max({c.rows, c.depth, c.cols}) > internal::kLargestDimension) {
    if (c.expect.kind != Expectation::kReject) c.expect.arguments.clear();
    c.expect.kind = Expectation::kReject;
    for (const char* size :
         {"lhs.rows", "lhs.cols", "rhs.rows", "rhs.cols", "result.rows", "result.cols"}) {
      c.expect.arguments.push_back({size, true});
    }
  }

  // Values: declared-range data fits both the call's and the packing's bit depths.
  AllocateStorage(in, gen, c, input_in_arena, input_overlaps, vector_in_arena);
  for (int which = 0; which < 2; ++which) {
    Operand& op = OperandNamed(c, which);
    int bits = 8;
    for (const auto* params : {&c.bit_depth, &c.pack_bit_depth}) {
      if (*params && (*params)->mode == BitDepthMode::kDeclaredRange) {
        const int declared = which == 0 ? (*params)->lhs_bits : (*params)->rhs_bits;
        if (declared >= 1 && declared <= 8) bits = std::min(bits, declared);
      }
    }
    FillOperand(in, gen, bits, &op);
  }
  if (c.misuse == Misuse::kOutsideDeclaredRange) {
    const int which = in.ConsumeIntegralInRange<int>(0, 1);
    Operand& op = OperandNamed(c, which);
    const int bits = which == 0 ? c.bit_depth->lhs_bits : c.bit_depth->rhs_bits;
    if (bits < 8 && !op.layout.empty()) {
      const std::pair<int, int> range = DeclaredRange(op.is_signed, bits);
      const int low = range.first, high = range.second;
      const int type_low = op.is_signed ? -128 : 0, type_high = op.is_signed ? 127 : 255;
      const int value = low > type_low && in.ConsumeBool()
                            ? in.ConsumeIntegralInRange<int>(type_low, low - 1)
                            : in.ConsumeIntegralInRange<int>(high + 1, type_high);
      const int r = in.ConsumeIntegralInRange<int>(0, op.layout.rows - 1);
      const int k = in.ConsumeIntegralInRange<int>(0, op.layout.cols - 1);
      op.data[op.layout.index(r, k)] = static_cast<std::uint8_t>(value);
      c.misuse_detail = std::string(kMatrixNames[which]) + " (" + std::to_string(r) + ", " +
                        std::to_string(k) + ") = " + std::to_string(value);
      if (c.expect.kind != Expectation::kReject) c.expect.arguments.clear();
      c.expect.kind = Expectation::kReject;
      c.expect.arguments.push_back({kMatrixNames[which], true});
    } else {
      c.misuse = Misuse::kNone;
    }
  }
  c.arena_before.assign(c.arena.data.get(), c.arena.data.get() + c.arena.size);
  for (Operand* op : {&c.lhs, &c.rhs}) {
    op->before.assign(op->own.data.get(), op->own.data.get() + op->own.size);
  }
  g_description = DescribeCase(c);
  if (std::getenv("LOWBIT_FUZZ_VERBOSE") != nullptr) {
    std::fprintf(stderr, "lowbit fuzz: %s\n", g_description.c_str());
  }
  VisitOperandTypes(c.lhs.is_signed, c.rhs.is_signed, [&](auto lhs_tag, auto rhs_tag) {
    VisitPipeline(c.pipeline, c.stages, [&](const auto& pipeline) {
      RunPaths<decltype(lhs_tag), decltype(rhs_tag)>(c, pipeline);
    });
  });
}

}  // namespace

void RunInput(const std::uint8_t* data, std::size_t size, Harness harness) {
  FuzzedDataProvider in(data, size);
  RunCase(in, harness);
}

// ---------------------------------------------------------------------------------------------
// Seeds
//
// FuzzedDataProvider takes integers from the end of the input, so the last bytes of an input
// are its first choices: the misuse byte, then the pipeline byte, then (bit depths) the mode,
// rounding and bit-depth bytes. A seed is a fixed pseudo-random body followed by those bytes,
// in reverse: one seed per pipeline shape (well-formed), one per misuse, and (bit depths) one
// per mode and rounding. scripts/fuzz --seeds writes them to test/fuzz/corpus/<harness>/.

void WriteSeeds(Harness harness, const char* directory) {
  constexpr int kSeedBodyBytes = 160;
  struct Seed {
    int misuse;  // 0 for none
    int pipeline;
    int mode, rounding, lhs_bits, rhs_bits;  // bit depths only
  };
  std::vector<Seed> seeds;
  if (harness == Harness::kGemm) {
    for (int p = 0; p < kPipelineCount; ++p) seeds.push_back({0, p, 0, 0, 8, 8});
    // Each misuse with a pipeline it applies to.
    for (int m = 1; m <= kGemmMisuses; ++m) {
      const int pipeline = m == static_cast<int>(Misuse::kInvalidRounding) ? 7 : 4;
      seeds.push_back({m, pipeline, 0, 0, 8, 8});
    }
  } else {
    for (int mode = 0; mode < 2; ++mode) {
      for (int rounding = 0; rounding < 4; ++rounding) {
        seeds.push_back({0, (mode * 4 + rounding) % kPipelineCount, mode, rounding,
                         1 + (3 * rounding + mode) % 8, 1 + (5 * rounding + 2) % 8});
      }
    }
    for (int m = 1; m <= kBitDepthMisuses; ++m) {
      if (m == static_cast<int>(Misuse::kContextSettings)) continue;
      const int mode = m == static_cast<int>(Misuse::kOutsideDeclaredRange) ? 1 : 0;
      seeds.push_back({m, m % kPipelineCount, mode, m % 4, 1 + m % 8, 1 + (m + 3) % 8});
    }
  }
  Generator gen(harness == Harness::kGemm ? 1 : 2);
  int index = 0;
  for (const Seed& seed : seeds) {
    std::vector<std::uint8_t> bytes(kSeedBodyBytes);
    for (auto& byte : bytes) byte = static_cast<std::uint8_t>(gen.Next());
    // The choices, last first: FuzzedDataProvider reads integers from the end.
    std::vector<std::uint8_t> choices = {
        static_cast<std::uint8_t>(seed.misuse == 0 ? 0 : 128 + seed.misuse - 1),
        static_cast<std::uint8_t>(seed.pipeline)};
    if (harness == Harness::kBitDepth) {
      choices.push_back(static_cast<std::uint8_t>(seed.mode));
      choices.push_back(static_cast<std::uint8_t>(seed.rounding));
      choices.push_back(static_cast<std::uint8_t>(seed.lhs_bits - 1));
      choices.push_back(static_cast<std::uint8_t>(seed.rhs_bits - 1));
    }
    bytes.insert(bytes.end(), choices.rbegin(), choices.rend());
    char name[64];
    std::snprintf(name, sizeof(name), "%s/seed-%02d-misuse-%02d-pipeline-%02d", directory, index++,
                  seed.misuse, seed.pipeline);
    FILE* file = std::fopen(name, "wb");
    if (file == nullptr || std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size() ||
        std::fclose(file) != 0) {
      std::fprintf(stderr, "lowbit fuzz: cannot write %s\n", name);
      std::exit(1);
    }
  }
  std::fprintf(stderr, "lowbit fuzz: wrote %zu seeds to %s\n", seeds.size(), directory);
}

}  // namespace fuzz
}  // namespace lowbit
