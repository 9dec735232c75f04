// The AVX-512 VNNI kernel (compiled with -mavx512f -mavx512bw -mavx512vnni): an 8-row register
// tile, 8 rows by 32 columns, where one vpdpbusd multiplies 4 depth values of unsigned rhs bytes by
// a signed lhs group and adds them to an int32 lane; the tile can write a block's 8-bit results
// between its steps (LinesBetweenSteps, kernel.h). Its direct product of a short lhs with an rhs
// read unpacked is direct_rhs_avx512vnni.cc.
#include <cpuinfo.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

// <immintrin.h> through this header first: without GCC 12's false -Wuninitialized reports.
#include "lowbit/fixedpoint/fixedpoint_avx512.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/output/byte_scale_avx512.h"
#include "lowbit/internal/pack/pack_x86.h"

namespace lowbit {
namespace internal {
namespace {

// vpdpbusd adds the 4 products of a lane's unsigned and signed bytes to its int32 sum in one
// instruction, without the int16 saturation of vpmaddubsw: every 8-bit value is exact once
// packing centres the lhs as int8 and the rhs as uint8 (kernel.h's PackedType), which the driver
// adds back through the offsets. That is 64 products an instruction where the AVX2 tile's
// vpmaddwd does 16 and needs a vpaddd besides, at the same issue rate on the CPUs that have it.
// The signed operand is the broadcast one, the one vpdpbusd can take from memory as an embedded
// broadcast.
struct ByteDotProducts {
  using Vector = __m512i;
  static constexpr int kDepth = 4;
  static constexpr PackedType kLhsType = PackedType::kInt8;
  static constexpr PackedType kRhsType = PackedType::kUint8;
  static Vector Add(Vector sums, Vector group, Vector rhs) {
    return _mm512_dpbusd_epi32(sums, rhs, group);
  }
};

// Whether the host stores the tile's accumulators a 256-bit half at a time: AMD family 19h (Zen 4,
// the family's CPUs with AVX-512) carries out 512-bit operations as two 256-bit halves, and there
// the 16 512-bit stores of a tile's sums cost more than their 32 halves (the high ones stored by
// vextracti64x4): the tile alone on 64^3's packed operands ran at 404 GOPS against 447, on
// 256^3's at 451 against 463 (ceiling/vnni_tile_in_blocks, 463 the vpdpbusd ceiling).
bool StoresHalves() {
  static const bool halves = [] {
    if (!cpuinfo_initialize() || cpuinfo_get_cores_count() == 0) return false;
    const cpuinfo_core& core = *cpuinfo_get_core(0);
    // The family in the signature of cpuid's leaf 1: base plus extended.
    const std::uint32_t family = ((core.cpuid >> 8) & 0xf) + ((core.cpuid >> 20) & 0xff);
    return core.vendor == cpuinfo_vendor_amd && family == 0x19;
  }();
  return halves;
}

// Stores 16 sums, whole or in halves (StoresHalves).
template <bool kHalves>
__attribute__((always_inline)) inline void StoreSums(std::int32_t* to, __m512i sums) {
  if constexpr (kHalves) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), _mm512_castsi512_si256(sums));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + 8), _mm512_extracti64x4_epi64(sums, 1));
  } else {
    _mm512_storeu_si512(to, sums);
  }
}

// How the tile reads a step of its rhs panel: 4 depth values of 32 columns, two vectors of 64
// bytes, stored as they are.
struct ByteRhsSteps {
  static constexpr int kStepBytes = 128;
  // How far ahead the tile's loop for more than 4 rows prefetches the rhs stream (0: not at all).
  // 1 KiB ahead made no measurable difference to 8 x 4096 x 4096 prepacked 8-bit weights.
  static constexpr int kPrefetchBytes = 0;
  // The sums are the products' own (see Uint4PairSteps for sums that are not): any depth.
  static constexpr int kMaxDepth = std::numeric_limits<int>::max();
  static void Load(const std::uint8_t* rhs, __m512i& low, __m512i& high) {
    low = _mm512_loadu_si512(rhs);
    high = _mm512_loadu_si512(rhs + 64);
  }
  static void Finish(__m512i&, __m512i&) {}
};

// The kind of a run of LinesBetweenSteps, each kind its own instance of the code that writes it:
// whether they have entry addends, whether their last batches have fewer entries than a whole
// batch, whether they have a rescale, whether they run across the result's memory, and whether
// their scale is per entry. NoLines: none written.
template <bool kWithEntryAddends, bool kWithLastInPart, bool kWithRescale, bool kWithAcross,
          bool kWithScaleByEntry>
struct LinesKind {
  static constexpr bool kWriting = true;
  static constexpr bool kEntryAddends = kWithEntryAddends;
  static constexpr bool kLastInPart = kWithLastInPart;
  static constexpr bool kRescaled = kWithRescale;
  static constexpr bool kAcross = kWithAcross;
  static constexpr bool kScaleByEntry = kWithScaleByEntry;
};
struct NoLines {
  static constexpr bool kWriting = false;
};

// 16 values from `values` on: all of them, or where kPart those under `lanes` (the rest as zeros,
// nothing past them read).
template <bool kPart>
__attribute__((always_inline)) inline __m512i LoadLanes(const std::int32_t* values,
                                                        __mmask16 lanes) {
  return kPart ? _mm512_maskz_loadu_epi32(lanes, values) : _mm512_loadu_si512(values);
}
template <bool kPart>
__attribute__((always_inline)) inline __m512 LoadLanes(const float* values, __mmask16 lanes) {
  return kPart ? _mm512_maskz_loadu_ps(lanes, values) : _mm512_loadu_ps(values);
}

// The float form's value (byte_scale_avx512.h, the writer's) of 16 sums of a line with their
// terms added: the line's `term`, the entries' addends where the kind has them, and with a
// rescale the line's factor times the varying term along it plus its addend.
template <typename Kind>
__attribute__((always_inline)) inline __m512 FormValue(__m512i sums, __m512i term,
                                                       __m512i entry_addends, __m512 along,
                                                       __m512 multiplier, __m512 addend,
                                                       __m512 line_factor) {
  __m512i x = _mm512_add_epi32(term, sums);
  if (Kind::kEntryAddends) x = _mm512_add_epi32(x, entry_addends);
  if constexpr (Kind::kRescaled) {
    return byte_scale_avx512::Value(x, multiplier,
                                    byte_scale_avx512::RescaleTerms(line_factor, along, addend));
  } else {
    return byte_scale_avx512::Value(x, multiplier, addend);
  }
}

// The float form's constants for line `line`: the GEMM's (the block's with a rescale, whose addend
// is each line's own), or the line's own where the scale is by line.
struct FormConstants {
  __m512 multiplier, addend, magic;
  __m512i window;
};
template <typename Kind>
__attribute__((always_inline)) inline FormConstants FormConstantsOf(const LinesBetweenSteps* lines,
                                                                    int line) {
  const bool by_line = lines->scale_by_line;
  return {_mm512_set1_ps(by_line ? lines->line_multiplier[line] : lines->multiplier),
          _mm512_set1_ps(Kind::kRescaled || by_line ? lines->line_addend[line] : lines->addend),
          _mm512_set1_ps(by_line ? lines->line_magic[line] : lines->magic),
          _mm512_set1_epi32(by_line ? lines->line_window[line] : lines->window)};
}

// Where the scale is per entry, `form` with the constants of the 16 entries from `entry` under
// `lanes` (where kPart; the rest load as zeros, a window of 0 included: their lanes count as
// in the window, which the callers mask).
template <typename Kind, bool kPart>
__attribute__((always_inline)) inline FormConstants EntryForm(const LinesBetweenSteps* lines,
                                                              std::ptrdiff_t entry, __mmask16 lanes,
                                                              const FormConstants& form) {
  if constexpr (!Kind::kScaleByEntry) {
    return form;
  } else {
    return {LoadLanes<kPart>(lines->entry_multiplier + entry, lanes),
            LoadLanes<kPart>(lines->entry_addend + entry, lanes),
            LoadLanes<kPart>(lines->entry_magic + entry, lanes),
            LoadLanes<kPart>(lines->entry_window + entry, lanes)};
  }
}

// The entry addends and the rescale's varying terms of the 16 entries from `entry` under `lanes`
// (where kPart; the rest load as zeros), or zeros where the kind has none.
template <typename Kind, bool kPart>
__attribute__((always_inline)) inline void EntryTerms(const LinesBetweenSteps* lines,
                                                      std::ptrdiff_t entry, __mmask16 lanes,
                                                      __m512i* entry_addends, __m512* along) {
  *entry_addends = _mm512_setzero_si512();
  *along = _mm512_setzero_ps();
  if (Kind::kEntryAddends) {
    *entry_addends = LoadLanes<kPart>(lines->entry_addends + entry, lanes);
  }
  if (Kind::kRescaled) {
    *along = LoadLanes<kPart>(lines->along_float + entry, lanes);
  }
}

// Writing LinesBetweenSteps along the result's memory: a batch is 64 sums of a line, 4 vectors,
// in the float form, narrowed to 64 bytes and stored; the vectors with a lane in the window are
// marked for WriteExactVectors. kPart: a line's last batch of fewer entries, loaded and stored
// under masks (lanes past them count as outside the window).
template <typename Kind, bool kPart>
__attribute__((always_inline)) inline void WriteBatch(LinesBetweenSteps* lines) {
  const std::ptrdiff_t entry = std::ptrdiff_t{64} * lines->batch;
  const int line = lines->line;
  const std::int32_t* const sums =
      lines->sums + static_cast<std::ptrdiff_t>(line) * lines->acc_stride + entry;
  const __m512i term = _mm512_set1_epi32(lines->line_addends[line]);
  const FormConstants form = FormConstantsOf<Kind>(lines, line);
  const __m512 line_factor = _mm512_set1_ps(Kind::kRescaled ? lines->line_factor[line] : 0.0f);
  const __mmask64 present = kPart ? lines->last_batch_entries : ~__mmask64{0};
  __m512i v[4];
  __mmask16 outside[4];
  for (int j = 0; j < 4; ++j) {
    const auto lanes = static_cast<__mmask16>(present >> (16 * j));
    __m512i entry_addends;
    __m512 along;
    EntryTerms<Kind, kPart>(lines, entry + 16 * j, lanes, &entry_addends, &along);
    const __m512i loaded = LoadLanes<kPart>(sums + 16 * j, lanes);
    const FormConstants lanes_form = EntryForm<Kind, kPart>(lines, entry + 16 * j, lanes, form);
    const __m512 t = FormValue<Kind>(loaded, term, entry_addends, along, lanes_form.multiplier,
                                     lanes_form.addend, line_factor);
    outside[j] = byte_scale_avx512::OutsideWindow(0xFFFF, t, lanes_form.magic, lanes_form.window);
    if (kPart) outside[j] = _kor_mask16(outside[j], _knot_mask16(lanes));
    v[j] = byte_scale_avx512::Floor(t);
  }
  const __m512i bytes =
      byte_scale_avx512::SaturatedBytes(v[0], v[1], v[2], v[3], lines->signed_results);
  std::uint8_t* const results =
      lines->results + static_cast<std::ptrdiff_t>(line) * lines->result_stride + entry;
  if (kPart) {
    _mm512_mask_storeu_epi8(results, present, bytes);
  } else {
    _mm512_storeu_si512(results, bytes);
  }
  const __mmask16 all =
      _kand_mask16(_kand_mask16(outside[0], outside[1]), _kand_mask16(outside[2], outside[3]));
  if (__builtin_expect(all != 0xFFFF, 0)) {
    for (int j = 0; j < 4; ++j) {
      if (outside[j] != 0xFFFF)
        lines->exact_vectors[line] |= std::uint64_t{1} << (lines->batch * 4 + j);
    }
    lines->exact_owed = true;
  }
  if (++lines->batch == lines->batches) {
    lines->batch = 0;
    ++lines->line;
  }
}

// Writing LinesBetweenSteps across the result's memory: a batch is 16 entries of each of the
// run's lines, a vector a line (a run of fewer than 8 lines repeats its first line's in the
// rest, which are neither stored nor marked), in the float form. Each 4 lines' vectors narrow to
// bytes, lane k holding entries 4k .. 4k + 3 of each line in turn, which a byte shuffle within
// the lane turns into the 4 lines' bytes of each entry, and an interleave of the two halves'
// dwords into each entry's 8 bytes: one 8-byte store an entry, at its own place in the result.
template <typename Kind, bool kPart>
__attribute__((always_inline)) inline void WriteAcrossBatch(LinesBetweenSteps* lines) {
  const std::ptrdiff_t entry = std::ptrdiff_t{16} * lines->batch;
  const auto present = static_cast<__mmask16>(kPart ? lines->last_batch_entries : 0xFFFF);
  const int line_count = lines->lines;
  __m512i entry_addends;
  __m512 along;
  EntryTerms<Kind, kPart>(lines, entry, present, &entry_addends, &along);
  // The entries' own constants, the same for every line, where the scale is per entry.
  const FormConstants entry_form = EntryForm<Kind, kPart>(lines, entry, present, FormConstants{});
  const auto quad_bytes = [&](int first_line) __attribute__((always_inline)) {
    __m512i v[4];
    for (int j = 0; j < 4; ++j) {
      const int line = first_line + j < line_count ? first_line + j : 0;
      const std::int32_t* const sums =
          lines->sums + static_cast<std::ptrdiff_t>(line) * lines->acc_stride + entry;
      const FormConstants form =
          Kind::kScaleByEntry ? entry_form : FormConstantsOf<Kind>(lines, line);
      const __m512 t = FormValue<Kind>(
          LoadLanes<kPart>(sums, present), _mm512_set1_epi32(lines->line_addends[line]),
          entry_addends, along, form.multiplier, form.addend,
          _mm512_set1_ps(Kind::kRescaled ? lines->line_factor[line] : 0.0f));
      const __mmask16 outside =
          byte_scale_avx512::OutsideWindow(present, t, form.magic, form.window);
      if (__builtin_expect(outside != present, 0) && first_line + j < line_count) {
        lines->exact_vectors[first_line + j] |= std::uint64_t{1} << lines->batch;
        lines->exact_owed = true;
      }
      v[j] = byte_scale_avx512::Floor(t);
    }
    const __m512i halves = _mm512_packs_epi32(v[0], v[1]);
    const __m512i other_halves = _mm512_packs_epi32(v[2], v[3]);
    const __m512i bytes = lines->signed_results ? _mm512_packs_epi16(halves, other_halves)
                                                : _mm512_packus_epi16(halves, other_halves);
    // Lane k: [line 0's entries 4k .. 4k + 3, line 1's, line 2's, line 3's] -> [entry 4k's 4
    // lines, entry 4k + 1's, ...].
    const __m512i by_entry = _mm512_set4_epi32(0x0f0b0703, 0x0e0a0602, 0x0d090501, 0x0c080400);
    return _mm512_shuffle_epi8(bytes, by_entry);
  };
  const __m512i low_lines = quad_bytes(0);
  const __m512i high_lines = quad_bytes(4);
  // Lane k of first: entries 4k and 4k + 1, 8 bytes each; of second: 4k + 2 and 4k + 3.
  const __m512i first = _mm512_unpacklo_epi32(low_lines, high_lines);
  const __m512i second = _mm512_unpackhi_epi32(low_lines, high_lines);
  std::uint8_t* const results = lines->results + entry * lines->result_stride;
  const std::ptrdiff_t stride = lines->result_stride;
  const auto line_bytes = static_cast<__mmask64>((1u << line_count) - 1);
  const auto store = [&](int e, __m128i pair, bool high) __attribute__((always_inline)) {
    if (kPart && ((present >> e) & 1) == 0) return;
    std::uint8_t* const out = results + e * stride;
    const __m128i bytes = high ? _mm_unpackhi_epi64(pair, pair) : pair;
    if (line_count == LinesBetweenSteps::kMaxLines) {
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out), bytes);
    } else {
      // Under the mask of the run's lines, through the 512-bit form (AVX-512 BW without VL).
      _mm512_mask_storeu_epi8(out, line_bytes, _mm512_castsi128_si512(bytes));
    }
  };
  // Lane k's four entries (vextracti32x4 takes the lane as an immediate).
  const auto store_lane = [&](auto lane) __attribute__((always_inline)) {
    constexpr int k = decltype(lane)::value;
    const __m128i first_pair = _mm512_extracti32x4_epi32(first, k);
    const __m128i second_pair = _mm512_extracti32x4_epi32(second, k);
    store(4 * k, first_pair, false);
    store(4 * k + 1, first_pair, true);
    store(4 * k + 2, second_pair, false);
    store(4 * k + 3, second_pair, true);
  };
  store_lane(std::integral_constant<int, 0>());
  store_lane(std::integral_constant<int, 1>());
  store_lane(std::integral_constant<int, 2>());
  store_lane(std::integral_constant<int, 3>());
  if (++lines->batch == lines->batches) lines->line = line_count;
}

// The run's next batch, if any.
template <typename Kind>
__attribute__((always_inline)) inline void WriteNextBatch(LinesBetweenSteps* lines) {
  if (lines->line == lines->lines) return;
  const bool part = Kind::kLastInPart && lines->batch + 1 == lines->batches;
  if constexpr (Kind::kAcross) {
    if (part) {
      WriteAcrossBatch<Kind, true>(lines);
    } else {
      WriteAcrossBatch<Kind, false>(lines);
    }
  } else if (part) {
    WriteBatch<Kind, true>(lines);
  } else {
    WriteBatch<Kind, false>(lines);
  }
}

// f(Kind{}) with the LinesKind of `lines`.
template <typename Function>
void ForLinesKind(const LinesBetweenSteps& lines, const Function& f) {
  // then(std::bool_constant<condition>{}).
  const auto choose = [](bool condition, const auto& then) {
    if (condition) {
      then(std::true_type());
    } else {
      then(std::false_type());
    }
  };
  choose(lines.entry_addends != nullptr, [&](auto entry_addends) {
    choose(~lines.last_batch_entries != 0, [&](auto last_in_part) {
      choose(lines.rescaled, [&](auto rescaled) {
        choose(lines.across_memory, [&](auto across) {
          constexpr bool kRescaled = decltype(rescaled)::value;
          // A scale per entry never comes with a rescale (WritesBetweenSteps).
          choose(lines.scale_by_entry && !kRescaled, [&](auto by_entry) {
            constexpr bool kScaleByEntry = decltype(by_entry)::value && !kRescaled;
            f(LinesKind<decltype(entry_addends)::value, decltype(last_in_part)::value, kRescaled,
                        decltype(across)::value, kScaleByEntry>());
          });
        });
      });
    });
  });
}

// The exact QuantizeDown of 16 sums from entry `entry` on (under `lanes`) by the entries' own
// multipliers and right shifts: the writer's arithmetic for a scale per channel along a line.
__m512i ScaledByEntry(const LinesBetweenSteps* lines, fixedpoint::Avx512Int32x16 x,
                      std::ptrdiff_t entry, __mmask16 lanes) {
  using fixedpoint::Avx512Int32x16;
  const Avx512Int32x16 multipliers{
      _mm512_maskz_loadu_epi32(lanes, lines->entry_scale_multiplier + entry)};
  const Avx512Int32x16 shifts{_mm512_maskz_loadu_epi32(lanes, lines->entry_right_shift + entry)};
  return fixedpoint::Add(fixedpoint::RoundingDivideByPOT(
                             fixedpoint::SaturatingRoundingDoublingHighMul(x, multipliers), shifts),
                         Avx512Int32x16{_mm512_set1_epi32(lines->scale_offset)})
      .v;
}

// The marked vectors again, by the exact arithmetic (the rescale in doubles, QuantizeDownScale:
// the writer's).
__attribute__((noinline)) void WriteExactVectors(LinesBetweenSteps* lines) {
  using fixedpoint::Avx512Int32x16;
  // The QuantizeDown of line `line`.
  const auto scale_of = [&](int line) {
    const bool by_line = lines->scale_by_line;
    return fixedpoint::QuantizeDownScale<Avx512Int32x16>(
        Avx512Int32x16{_mm512_set1_epi32(by_line ? lines->line_scale_multiplier[line]
                                                 : lines->scale_multiplier)},
        by_line ? lines->line_right_shift[line] : lines->right_shift,
        Avx512Int32x16{_mm512_set1_epi32(lines->scale_offset)});
  };
  // Along memory a batch is 4 vectors of a line, across it one vector of each line.
  const int batch_vectors = lines->across_memory ? 1 : 4;
  for (int line = 0; line < lines->lines; ++line) {
    if (lines->exact_vectors[line] == 0) continue;
    const fixedpoint::QuantizeDownScale<Avx512Int32x16> exact = scale_of(line);
    const std::int32_t* const sums =
        lines->sums + static_cast<std::ptrdiff_t>(line) * lines->acc_stride;
    for (std::uint64_t marked = lines->exact_vectors[line]; marked != 0; marked &= marked - 1) {
      const int vector = __builtin_ctzll(marked);
      const int entry = vector * 16;
      // The vector's entries: some of a last batch of fewer.
      const auto lanes =
          static_cast<__mmask16>(vector / batch_vectors + 1 == lines->batches
                                     ? lines->last_batch_entries >> (16 * (vector % batch_vectors))
                                     : 0xFFFF);
      __m512i x = _mm512_add_epi32(_mm512_set1_epi32(lines->line_addends[line]),
                                   _mm512_maskz_loadu_epi32(lanes, sums + entry));
      if (lines->entry_addends != nullptr) {
        x = _mm512_add_epi32(x, _mm512_maskz_loadu_epi32(lanes, lines->entry_addends + entry));
      }
      if (lines->rescaled) {
        x = byte_scale_avx512::RescaledSums(x, lines->line_a[line], lines->line_b[line],
                                            lines->along_a + entry, lines->along_b + entry,
                                            lines->reciprocal, lanes);
      }
      const __m512i v = lines->scale_by_entry
                            ? ScaledByEntry(lines, Avx512Int32x16{x}, entry, lanes)
                            : exact(Avx512Int32x16{x}).v;
      const __m128i bytes =
          lines->signed_results
              ? _mm512_cvtsepi32_epi8(v)
              : _mm512_cvtusepi32_epi8(_mm512_max_epi32(v, _mm512_setzero_si512()));
      if (lines->across_memory) {
        // An entry a byte, each at its own place in the result.
        alignas(16) std::uint8_t values[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(values), bytes);
        std::uint8_t* const results = lines->results + line + entry * lines->result_stride;
        for (int i = 0; i < 16; ++i) {
          if ((lanes >> i) & 1) results[i * lines->result_stride] = values[i];
        }
      } else {
        // A 16-byte store under the mask, through the 512-bit form (AVX-512 BW without VL).
        std::uint8_t* const results =
            lines->results + static_cast<std::ptrdiff_t>(line) * lines->result_stride + entry;
        _mm512_mask_storeu_epi8(results, __mmask64{lanes}, _mm512_castsi128_si512(bytes));
      }
    }
    lines->exact_vectors[line] = 0;
  }
  lines->exact_owed = false;
}

// Writes what is left of `lines` of kind Kind.
template <typename Kind>
__attribute__((always_inline)) inline void WriteRestOfLines(LinesBetweenSteps* lines) {
  while (lines->line < lines->lines) WriteNextBatch<Kind>(lines);
  if (lines->exact_owed) WriteExactVectors(lines);
}

// The same for lines of any kind.
void WriteLinesAlone(LinesBetweenSteps* lines) {
  ForLinesKind(*lines, [&](auto kind) { WriteRestOfLines<decltype(kind)>(lines); });
}

// The tile: each step, every row's 4-byte lhs group is broadcast against the two rhs vectors that
// RhsSteps reads, and Products adds each pair to the int32 sums: 16 accumulators of the 32 zmm
// registers. The 6-row tile of the 16-register ISAs (kernel_pairs_x86.h) ran 8 to 11% slower at
// 1024^3 and 2048^3, 6 to 8% at 256^3, and 30% on 8 rows of prepacked weights (two tiles, 6 rows
// and 2): with 12 accumulators, vpdpbusd's latency leaves its two ports little slack. 6 rows by 64
// columns gained less and lost on 8 rows, 8 rows by 48 columns lost at 64^3 (interleaved runs of
// gemm_bench). The lhs panel holds a row's group after another's, 4 x 8 bytes a step.
template <typename Products, typename RhsSteps>
struct EightRowTile {
  static constexpr int kRows = 8;
  static constexpr int kCols = 32;  // two vectors of 16 int32 lanes
  static constexpr int kGroupBytes = 4;
  static constexpr int kLhsStepBytes = kGroupBytes * kRows;
  // Bytes by bytes (not 4-bit weights): exact for any values.
  static constexpr bool kAnyBytes =
      std::is_same_v<Products, ByteDotProducts> && std::is_same_v<RhsSteps, ByteRhsSteps>;
  static constexpr KernelFormat kFormat = RhsPanelFromL2(
      {kRows, kCols, Products::kDepth, Products::kLhsType, Products::kRhsType, 0, kAnyBytes});

  // Adds one step of the first kUsedRows rows to sums.
  template <int kUsedRows>
  __attribute__((always_inline)) static void MultiplyStep(const std::uint8_t* lhs,
                                                          const std::uint8_t* rhs,
                                                          __m512i (&sums)[kUsedRows][2]) {
    __m512i low, high;
    RhsSteps::Load(rhs, low, high);
#pragma GCC unroll 8
    for (int i = 0; i < kUsedRows; ++i) {
      std::int32_t bits;
      std::memcpy(&bits, lhs + i * kGroupBytes, sizeof(bits));
      const __m512i group = _mm512_set1_epi32(bits);
      sums[i][0] = Products::Add(sums[i][0], group, low);
      sums[i][1] = Products::Add(sums[i][1], group, high);
    }
  }

  // Prefetches the `bytes` of rhs steps that lie RhsSteps::kPrefetchBytes after `rhs`, if any.
  __attribute__((always_inline)) static void PrefetchRhs(const std::uint8_t* rhs, int bytes) {
    if constexpr (RhsSteps::kPrefetchBytes > 0) {
      for (int line = 0; line < bytes; line += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(rhs + RhsSteps::kPrefetchBytes + line),
                     _MM_HINT_T0);
      }
    }
  }

  // The first kUsedRows rows of the tile. The accumulators are arrays indexed only in loops that
  // GCC unrolls completely, so they live in registers (checked in the disassembly). The tile does
  // not ask for its accumulator rows ahead (PrefetchAccumulatorRows): its 16 prefetches cost more
  // than they saved, 256^3 0.8% and 64^3 1.5% faster without them, 1024^3, 2048^3 and 4-bit
  // weights level (paired rounds against oneDNN, builds alternated).
  // With a Lines kind other than NoLines, `lines` of that kind are written a batch every two steps
  // (LinesBetweenSteps), the rest after the tile's stores. Each kind has its own code: beside
  // lines whose last batches have fewer entries, the loop for whole batches went to the stack 25
  // times where it goes 13.
  template <int kUsedRows, typename Lines = NoLines>
  __attribute__((noinline)) static void Rows(const std::uint8_t* lhs, const std::uint8_t* rhs,
                                             int padded_depth, std::int32_t* acc, int acc_stride,
                                             bool accumulate, LinesBetweenSteps* lines = nullptr) {
    // Before any vector is live: the first call's initialization is a call.
    const bool halves = StoresHalves();
    __m512i sums[kUsedRows][2];
    // Up to 4 rows (a short lhs: a matrix-vector product has one row) leave registers to spare:
    // odd steps go to a second set of accumulators, which halves the chains of dependent
    // additions, and two steps at a time need one prefetch of the lhs stream. On 1 row of
    // prepacked 1024 x 1024 weights, 147 GOPS without, 208 with.
    constexpr bool kSplit = kUsedRows <= 4;
    __m512i odd[kSplit ? kUsedRows : 1][2];
#pragma GCC unroll 8
    for (int i = 0; i < kUsedRows; ++i) {
      sums[i][0] = sums[i][1] = _mm512_setzero_si512();
      if (kSplit) odd[i][0] = odd[i][1] = _mm512_setzero_si512();
    }
    constexpr int kDepth = Products::kDepth;
    int d = 0;
    if constexpr (kSplit) {
      for (; d + 2 * kDepth <= padded_depth; d += 2 * kDepth) {
        _mm_prefetch(reinterpret_cast<const char*>(lhs + 8 * kLhsStepBytes), _MM_HINT_T0);
        MultiplyStep<kUsedRows>(lhs, rhs, sums);
        MultiplyStep<kUsedRows>(lhs + kLhsStepBytes, rhs + RhsSteps::kStepBytes, odd);
        lhs += 2 * kLhsStepBytes;
        rhs += 2 * RhsSteps::kStepBytes;
      }
#pragma GCC unroll 8
      for (int i = 0; i < kUsedRows; ++i) {
        sums[i][0] = _mm512_add_epi32(sums[i][0], odd[i][0]);
        sums[i][1] = _mm512_add_epi32(sums[i][1], odd[i][1]);
      }
    }
    if constexpr (Lines::kWriting) {
      for (; d + 2 * kDepth <= padded_depth; d += 2 * kDepth) {
        MultiplyStep<kUsedRows>(lhs, rhs, sums);
        MultiplyStep<kUsedRows>(lhs + kLhsStepBytes, rhs + RhsSteps::kStepBytes, sums);
        WriteNextBatch<Lines>(lines);
        lhs += 2 * kLhsStepBytes;
        rhs += 2 * RhsSteps::kStepBytes;
      }
    }
    for (; d < padded_depth; d += kDepth) {
      PrefetchRhs(rhs, RhsSteps::kStepBytes);
      MultiplyStep<kUsedRows>(lhs, rhs, sums);
      lhs += kLhsStepBytes;
      rhs += RhsSteps::kStepBytes;
    }
    // One branch for the tile, not one for each store.
    const auto store_rows = [&](auto halves_constant) {
      constexpr bool kHalves = decltype(halves_constant)::value;
#pragma GCC unroll 8
      for (int i = 0; i < kUsedRows; ++i) {
        std::int32_t* const row = acc + i * acc_stride;
        __m512i low = sums[i][0], high = sums[i][1];
        RhsSteps::Finish(low, high);
        if (accumulate) {
          low = _mm512_add_epi32(low, _mm512_loadu_si512(row));
          high = _mm512_add_epi32(high, _mm512_loadu_si512(row + 16));
        }
        StoreSums<kHalves>(row, low);
        StoreSums<kHalves>(row + 16, high);
      }
    };
    if (halves) {
      store_rows(std::true_type());
    } else {
      store_rows(std::false_type());
    }
    if constexpr (Lines::kWriting) WriteRestOfLines<Lines>(lines);
  }

  // A MicroKernelFunction: a short last panel multiplies only its real rows.
  static void MicroKernel(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                          std::int32_t* acc, int acc_stride, bool accumulate) {
    const auto* lhs = static_cast<const std::uint8_t*>(lhs_panel);
    const auto* rhs = static_cast<const std::uint8_t*>(rhs_panel);
    ForRowCount<kRows>(rows, [&](auto used_rows) {
      // Depth beyond what RhsSteps::Finish allows (none that cache blocking gives) in parts.
      int d = 0;
      do {
        const std::ptrdiff_t steps = d / Products::kDepth;
        Rows<decltype(used_rows)::value>(
            lhs + steps * kLhsStepBytes, rhs + steps * RhsSteps::kStepBytes,
            std::min(padded_depth - d, RhsSteps::kMaxDepth), acc, acc_stride, accumulate || d > 0);
        d += RhsSteps::kMaxDepth;
      } while (d < padded_depth);
    });
  }
};

using Tile = EightRowTile<ByteDotProducts, ByteRhsSteps>;

// A MicroKernelWritingFunction: whole panels write between their steps, a short last one after.
void MicroKernelWriting(const void* lhs_panel, const void* rhs_panel, int padded_depth, int rows,
                        std::int32_t* acc, int acc_stride, bool accumulate,
                        LinesBetweenSteps* lines) {
  static_assert(ByteRhsSteps::kMaxDepth == std::numeric_limits<int>::max(),
                "one call of Rows takes any depth");
  if (rows < Tile::kRows) {
    Tile::MicroKernel(lhs_panel, rhs_panel, padded_depth, rows, acc, acc_stride, accumulate);
    WriteLinesAlone(lines);
    return;
  }
  const auto* lhs = static_cast<const std::uint8_t*>(lhs_panel);
  const auto* rhs = static_cast<const std::uint8_t*>(rhs_panel);
  ForLinesKind(*lines, [&](auto kind) {
    Tile::Rows<Tile::kRows, decltype(kind)>(lhs, rhs, padded_depth, acc, acc_stride, accumulate,
                                            lines);
  });
}
constexpr KernelFormat kFormat = Tile::kFormat;

void PackLhsAvx512Vnni(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackByteGroupsAvx512(source, kFormat.lhs_type, kFormat.lhs_rows, start, count, depth_start, depth,
                       packed, sums);
}

void PackRhsAvx512Vnni(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackByteGroupsAvx512(source, kFormat.rhs_type, kFormat.rhs_cols, start, count, depth_start, depth,
                       packed, sums);
}

void PackLhsCheckingAvx512Vnni(const MatrixView& source, int start, int count, int depth_start,
                               int depth, void* packed, std::int32_t* sums, RangeBits* range) {
  PackByteGroupsCheckingAvx512(source, kFormat.lhs_type, kFormat.lhs_rows, start, count,
                               depth_start, depth, packed, sums, range);
}

void PackRhsCheckingAvx512Vnni(const MatrixView& source, int start, int count, int depth_start,
                               int depth, void* packed, std::int32_t* sums, RangeBits* range) {
  PackByteGroupsCheckingAvx512(source, kFormat.rhs_type, kFormat.rhs_cols, start, count,
                               depth_start, depth, packed, sums, range);
}

void PackLhsRequantizingAvx512Vnni(const MatrixView& source,
                                   const PackRequantization& requantization, int start, int count,
                                   int depth, void* packed, std::int32_t* sums) {
  PackByteGroupsRequantizingAvx512(source, requantization, kFormat.lhs_type, kFormat.lhs_rows,
                                   start, count, depth, packed, sums);
}

void PackRhsRequantizingAvx512Vnni(const MatrixView& source,
                                   const PackRequantization& requantization, int start, int count,
                                   int depth, void* packed, std::int32_t* sums) {
  PackByteGroupsRequantizingAvx512(source, requantization, kFormat.rhs_type, kFormat.rhs_cols,
                                   start, count, depth, packed, sums);
}

// Prepacked weights of at most 4 bits (PackedType::kUint4Pairs): a step of the tile's rhs panel,
// 4 depth values of 32 columns (two vectors of 64 bytes in kUint8's layout), is stored in 64
// bytes, byte j holding byte j of the first vector in its low nibble and byte j of the second in
// its high one. It reads half the bytes, which is what a product bound by reading its weights
// from memory gains.
struct Uint4PairSteps {
  static constexpr int kStepBytes = 64;
  // 8 x 4096 x 4096 weights, streamed from memory: 470-490 GOPS without a prefetch, 505-528 with
  // it 512 bytes or 2 KiB ahead. On 1 row (the split loop) prefetching cost 2 to 3%.
  static constexpr int kPrefetchBytes = 512;
  // The most depth whose high-nibble sums Finish recovers: 16 times such a sum, at most
  // 16 * 15 * 128 a depth value, stays within int32 (a deeper GEMM's int32 sums may wrap, which
  // the other sums survive but a right shift does not).
  static constexpr int kMaxDepth = 65536;
  // The tile multiplies the whole bytes (low nibble + 16 x high) and the high nibbles in place
  // (16 x high): one instruction a step instead of three that would separate the nibbles, on the
  // ports that the 16 vpdpbusd keep busy. Finish turns the two sums into the nibbles' own.
  // 8 x 4096 x 4096: 1.5 to 1.56 times the 8-bit prepacked GEMM's speed -> 1.7 to 1.9 (interleaved
  // gemm_bench runs of the two builds).
  static void Load(const std::uint8_t* rhs, __m512i& whole, __m512i& high_in_place) {
    whole = _mm512_loadu_si512(rhs);
    high_in_place = _mm512_and_si512(whole, _mm512_set1_epi8(static_cast<char>(0xf0)));
  }
  static void Finish(__m512i& low, __m512i& high) {
    // An empty asm that GCC must assume changes both: without it, GCC 12 allocated the tile's
    // accumulators anew every step, 30 register copies and 3 spills a step of the 8-row loop.
    asm("" : "+v"(low), "+v"(high));
    low = _mm512_sub_epi32(low, high);
    high = _mm512_srai_epi32(high, 4);
  }
  // A step's two vectors of kUint8 values.
  static void Unfold(const std::uint8_t* rhs, __m512i& low, __m512i& high) {
    const __m512i pairs = _mm512_loadu_si512(rhs);
    const __m512i nibble = _mm512_set1_epi8(0x0f);
    low = _mm512_and_si512(pairs, nibble);
    high = _mm512_and_si512(_mm512_srli_epi16(pairs, 4), nibble);
  }
};

struct Uint4PairProducts : ByteDotProducts {
  static constexpr PackedType kRhsType = PackedType::kUint4Pairs;
};

using Uint4PairTile = EightRowTile<Uint4PairProducts, Uint4PairSteps>;

// The kUint8 panels back from kUint4Pairs ones: each step's 64 bytes into two vectors.
void UnfoldUint4Pairs(const void* packed, int panels, int padded_depth, void* out) {
  const auto* in = static_cast<const std::uint8_t*>(packed);
  auto* bytes = static_cast<std::uint8_t*>(out);
  const std::int64_t steps = static_cast<std::int64_t>(panels) * padded_depth / kFormat.depth_group;
  for (std::int64_t step = 0; step < steps; ++step) {
    __m512i low, high;
    Uint4PairSteps::Unfold(in + step * Uint4PairSteps::kStepBytes, low, high);
    _mm512_storeu_si512(bytes + 2 * step * Uint4PairSteps::kStepBytes, low);
    _mm512_storeu_si512(bytes + (2 * step + 1) * Uint4PairSteps::kStepBytes, high);
  }
}

// Packs kUint8 byte groups a panel at a time, then folds each step's two vectors into one.
void PackRhsUint4Pairs(const MatrixView& source, int start, int count, int depth_start, int depth,
                       void* packed, std::int32_t* sums) {
  PackNibblePairs(&PackByteGroupsAvx512, PackedType::kUint8, kFormat.rhs_cols, kFormat.depth_group,
                  2 * Uint4PairSteps::kStepBytes, source, start, count, depth_start, depth, packed,
                  sums);
}

}  // namespace

static_assert(kFormat.rhs_type == PackedType::kUint8,
              "direct_rhs_avx512vnni.cc reads the rhs values as the tile's packing stores them");

const KernelImplementation& Avx512VnniKernel() {
  static const KernelImplementation implementation{Kernel::kAvx512Vnni,
                                                   kFormat,
                                                   &PackLhsAvx512Vnni,
                                                   &PackRhsAvx512Vnni,
                                                   &Tile::MicroKernel,
                                                   &DirectRhsAvx512Vnni,
                                                   nullptr,
                                                   nullptr,
                                                   nullptr,
                                                   &PackLhsRequantizingAvx512Vnni,
                                                   &PackRhsRequantizingAvx512Vnni,
                                                   0,
                                                   nullptr,
                                                   &MicroKernelWriting,
                                                   &WriteLinesAlone,
                                                   kMaxDirectRhsRows,
                                                   1024,
                                                   &PackLhsCheckingAvx512Vnni,
                                                   &PackRhsCheckingAvx512Vnni,
                                                   &DirectRhsRequantizingAvx512Vnni};
  return implementation;
}

const KernelImplementation& Avx512VnniUint4PairsKernel() {
  static const KernelImplementation implementation = [] {
    KernelImplementation two_to_a_byte{
        Kernel::kAvx512Vnni,
        Uint4PairTile::kFormat,
        &PackLhsAvx512Vnni,
        &PackRhsUint4Pairs,
        &Uint4PairTile::MicroKernel,
        nullptr,
        [](int, int) -> const KernelImplementation& { return Avx512VnniKernel(); },
        &UnfoldUint4Pairs};
    // Measured on 4096 x 4096 weights of 4 bits, one thread, milliseconds a call of two to a
    // byte against unfolded (gemm_repeat, alternating runs): 1.9 against 2.3 to 2.9 at 32 rows,
    // 2.8 to 2.9 against 3.2 to 3.7 at 48, 3.5 to 4.2 against 3.9 to 5.4 at 64, 6.1 to 6.5
    // against 6.3 to 7.3 at 96, 7.3 to 9.5 against 7.8 to 8.9 at 128 (doc/less-than-8-bit.md,
    // "4-bit weights").
    two_to_a_byte.unfold_above_rows = 96;
    return two_to_a_byte;
  }();
  return implementation;
}

}  // namespace internal
}  // namespace lowbit
