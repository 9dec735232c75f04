// The vectorized output writer, written once over an ISA: walks a block of raw sums a register
// of lanes at a time, adds their offset terms, runs the OutputProgram on the fixedpoint back end
// of that ISA (one line's work: lowbit/internal/output/output_line.h) and stores the lanes narrowed
// to the result type. Included only by the per-ISA files
// (lowbit/internal/output/output_{sse41,avx2,avx512,neon}.cc), each compiled for its ISA, so that
// every function here is instantiated for one ISA's types only.
#ifndef LOWBIT_INTERNAL_OUTPUT_OUTPUT_WRITER_H_
#define LOWBIT_INTERNAL_OUTPUT_OUTPUT_WRITER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

#include "lowbit/fixedpoint/fixedpoint.h"
#include "lowbit/internal/output/output.h"
#include "lowbit/internal/output/output_line.h"
#include "lowbit/internal/output/transpose_bytes.h"

namespace lowbit {
namespace internal {
namespace output_writer {

// Stores `count` lanes as `size`-byte elements. The pipeline's last stage left every lane in
// the result type's range, so keeping the low bytes is exact.
template <typename Isa>
void StorePartial(typename Isa::Raw v, int size, int count, char* out) {
  if (count == Isa::kLanes) {
    Isa::Store(v, size, out);
    return;
  }
  if constexpr (PartialAccess<Isa>::value) {
    Isa::StoreFirst(v, size, count, out);
    return;
  }
  std::int32_t buffer[Isa::kLanes];
  Isa::Store(v, size, buffer);
  std::memcpy(out, buffer, static_cast<std::size_t>(size) * count);
}

template <typename Isa>
class Writer {
 public:
  using Raw = typename Isa::Raw;

  Writer(const OutputProgram& program, const AccumulatorBlock& block, const OffsetTerms& terms,
         const Rescale* rescale, const MatrixView& result)
      : Writer(program, block, terms, rescale, result.order, result.type,
               // The view is of the caller's writable result map.
               static_cast<char*>(const_cast<void*>(result.data)) +
                   (result.order == Order::kRowMajor
                        ? static_cast<std::ptrdiff_t>(block.row_start) * result.stride +
                              block.col_start
                        : block.row_start +
                              static_cast<std::ptrdiff_t>(block.col_start) * result.stride) *
                       ElementSize(result.type),
               result.stride) {}

  void Write() {
    const int lines = row_major_ ? block_.rows : block_.cols;
    const int length = row_major_ ? block_.cols : block_.rows;
    const std::ptrdiff_t line_step = row_major_ ? block_.row_stride : block_.col_stride;
    const std::ptrdiff_t entry_step = row_major_ ? block_.col_stride : block_.row_stride;
    if (entry_step == 1) {
      (this->*write_lines_)(block_.data, line_step, 0, lines, 0, length);
      return;
    }
    if (line_step == 1 && (length < kAcrossLength || size_ == 1)) {
      WriteAcross(lines, length);
      return;
    }
    int line = 0;
    if (line_step == 1) {
      // The accumulators run across the result's lines: kLanes lines at a time, loaded as
      // kLanes vectors across them and transposed in registers into a buffer of vectors along
      // them, chunk by chunk, which then runs through the lines loop like any contiguous lines.
      const int whole_length = length / Isa::kLanes * Isa::kLanes;
      alignas(64) std::int32_t buffer[Isa::kLanes][kTransposedChunk];
      for (; line + Isa::kLanes <= lines; line += Isa::kLanes) {
        for (int chunk = 0; chunk < whole_length; chunk += kTransposedChunk) {
          const int chunk_end =
              whole_length - chunk < kTransposedChunk ? whole_length : chunk + kTransposedChunk;
          for (int entry = chunk; entry < chunk_end; entry += Isa::kLanes) {
            Raw vectors[Isa::kLanes];
            for (int i = 0; i < Isa::kLanes; ++i) {
              vectors[i] = Isa::Load(block_.data + (entry + i) * entry_step + line);
            }
            Isa::Transpose(vectors);
            for (int i = 0; i < Isa::kLanes; ++i) {
              Isa::Store(vectors[i], sizeof(std::int32_t), buffer[i] + (entry - chunk));
            }
          }
          (this->*write_lines_)(buffer[0], kTransposedChunk, line, line + Isa::kLanes, chunk,
                                chunk_end);
        }
        for (int i = 0; i < Isa::kLanes && whole_length < length; ++i) {
          WriteGathered(line + i, whole_length, length, line_step, entry_step);
        }
      }
    }
    for (; line < lines; ++line) WriteGathered(line, 0, length, line_step, entry_step);
  }

 private:
  // Writes the block's results of `type` in `order`, the block's first at `out`, each next
  // result line `stride` elements further on.
  Writer(const OutputProgram& program, const AccumulatorBlock& block, const OffsetTerms& terms,
         const Rescale* rescale, Order order, ElementType type, char* out, int stride)
      : program_(program),
        block_(block),
        terms_(terms),
        rescale_(rescale),
        reciprocal_(rescale != nullptr ? 1.0 / rescale->divisor : 0.0),
        out_(out),
        stride_(stride),
        row_major_(order == Order::kRowMajor),
        type_(type),
        size_(ElementSize(type)),
        count_(program.count) {
    switch (type) {
      case ElementType::kUint8:
        write_lines_ = LinesLoopFor<ElementType::kUint8>(program);
        break;
      case ElementType::kInt8:
        write_lines_ = LinesLoopFor<ElementType::kInt8>(program);
        break;
      case ElementType::kInt16:
        write_lines_ = LinesLoopFor<ElementType::kInt16>(program);
        break;
      case ElementType::kInt32:
        write_lines_ = LinesLoopFor<ElementType::kInt32>(program);
        break;
    }
  }

  // Entries per line that the transposed path buffers at a time.
  static constexpr int kTransposedChunk = 64;
  // Result lines shorter than this, with accumulators across them, go through WriteAcross: at
  // four vectors and more, the transposed path's lines loop repays storing and reloading them.
  // 8-bit results go through WriteAcross at any length, kAcrossLength entries at a time.
  static constexpr int kAcrossLength = 4 * Isa::kLanes;
  // Result lines that WriteAcross writes through its buffer at a time.
  static constexpr int kAcrossChunk = 128;

  // Result lines across long lines of accumulators (a column-major result when the accumulator
  // rows are the result's rows, as with prepacked weights): the lines loop runs along the
  // accumulators, as if the result had the other storage order, into a buffer, which is then
  // transposed into the result. The buffer holds 8-bit results themselves, transposed as bytes
  // (transpose_bytes.h), and wider ones as int32 (the program leaves every value in the result
  // type's range). Going along the result's lines instead set up a line per kLanes entries of
  // short lines: 1.7 to 2.0 ns per entry of 8-entry lines in a microbenchmark, against 0.55 to
  // 0.9 for this. On long lines it transposed int32 sums in zmm registers, whose shuffles run on
  // one port of Intel's, where the bytes take as many shuffles of 128-bit registers, which run on
  // two, and a quarter of the loads and stores (with prepacked weights and a column-major result,
  // 64^3 +5%, 256^3 +7%, 1024^3 level).
  void WriteAcross(int lines, int length) {
    alignas(64) std::int32_t buffer[kAcrossChunk * kAcrossLength];
    const bool bytes = size_ == 1;
    const std::ptrdiff_t line_step = row_major_ ? block_.row_stride : block_.col_stride;
    const std::ptrdiff_t entry_step = row_major_ ? block_.col_stride : block_.row_stride;
    for (int first_entry = 0; first_entry < length; first_entry += kAcrossLength) {
      const int entries =
          length - first_entry < kAcrossLength ? length - first_entry : kAcrossLength;
      for (int first = 0; first < lines; first += kAcrossChunk) {
        const int count = lines - first < kAcrossChunk ? lines - first : kAcrossChunk;
        AccumulatorBlock part = block_;
        part.data += first * line_step + first_entry * entry_step;
        (row_major_ ? part.row_start : part.col_start) += first;
        (row_major_ ? part.rows : part.cols) = count;
        (row_major_ ? part.col_start : part.row_start) += first_entry;
        (row_major_ ? part.cols : part.rows) = entries;
        const OffsetTerms part_terms =
            terms_.From(row_major_ ? first : first_entry, row_major_ ? first_entry : first);
        Writer(program_, part, part_terms, rescale_,
               row_major_ ? Order::kColMajor : Order::kRowMajor,
               bytes ? type_ : ElementType::kInt32, reinterpret_cast<char*>(buffer), count)
            .Write();
        char* const out =
            out_ + (first * static_cast<std::ptrdiff_t>(stride_) + first_entry) * size_;
        if (bytes) {
          CopyTransposedBytes(reinterpret_cast<const std::uint8_t*>(buffer), entries, count, out);
        } else if (size_ == 2) {
          CopyTransposed<2>(buffer, entries, count, out);
        } else {
          CopyTransposed<4>(buffer, entries, count, out);
        }
      }
    }
  }

  // `count` result lines of `length` entries from `buffer`, which holds them across (entry e of
  // line l at buffer[e * count + l]), to `out`, the first line's first entry. Squares of kLanes
  // lines and entries are transposed in registers, the rest is copied one by one.
  template <int kSize>
  void CopyTransposed(const std::int32_t* buffer, int length, int count, char* out) const {
    const std::ptrdiff_t line_bytes = static_cast<std::ptrdiff_t>(stride_) * kSize;
    const int whole_length = length / Isa::kLanes * Isa::kLanes;
    const int whole_count = count / Isa::kLanes * Isa::kLanes;
    for (int line = 0; line < whole_count; line += Isa::kLanes) {
      for (int entry = 0; entry < whole_length; entry += Isa::kLanes) {
        Raw vectors[Isa::kLanes];
        for (int i = 0; i < Isa::kLanes; ++i) {
          vectors[i] = Isa::Load(buffer + (entry + i) * count + line);
        }
        Isa::Transpose(vectors);
        for (int i = 0; i < Isa::kLanes; ++i) {
          Isa::Store(vectors[i], kSize, out + (line + i) * line_bytes + entry * kSize);
        }
      }
    }
    using Element = std::conditional_t<kSize == 2, std::int16_t, std::int32_t>;
    for (int entry = 0; entry < length; ++entry) {
      for (int line = entry < whole_length ? whole_count : 0; line < count; ++line) {
        // In the result type's range: keeping the low bytes is exact.
        const auto value = static_cast<Element>(buffer[entry * count + line]);
        std::memcpy(out + line * line_bytes + entry * kSize, &value, kSize);
      }
    }
  }

  // The same for results already bytes in `buffer`: squares of 16 lines and entries transposed in
  // registers, then half squares of 8 entries (a batch of 8 rows' columns), a line's squares one
  // after another so that its bytes are written together, the rest one by one.
  void CopyTransposedBytes(const std::uint8_t* buffer, int length, int count, char* out) const {
    const int whole_length = length / 16 * 16 + (length % 16 >= 8 ? 8 : 0);
    const int whole_count = count / 16 * 16;
    for (int line = 0; line < whole_count; line += 16) {
      char* const out_lines = out + static_cast<std::ptrdiff_t>(line) * stride_;
      int entry = 0;
      for (; entry + 16 <= length; entry += 16) {
        TransposeBytes16<16>(buffer + entry * count + line, count, out_lines + entry, stride_);
      }
      if (entry < whole_length) {
        TransposeBytes16<8>(buffer + entry * count + line, count, out_lines + entry, stride_);
      }
    }
    for (int entry = 0; entry < length; ++entry) {
      for (int line = entry < whole_length ? whole_count : 0; line < count; ++line) {
        out[static_cast<std::ptrdiff_t>(line) * stride_ + entry] =
            static_cast<char>(buffer[entry * count + line]);
      }
    }
  }

  // Entries [first, end) of line `line`, gathered entry_step apart into a buffer a chunk at a
  // time, which the lines loop then writes like a contiguous line.
  void WriteGathered(int line, int first, int end, std::ptrdiff_t line_step,
                     std::ptrdiff_t entry_step) {
    const std::int32_t* acc = block_.data + line * line_step;
    std::int32_t gathered[kTransposedChunk];
    for (int chunk = first; chunk < end; chunk += kTransposedChunk) {
      const int chunk_end = end - chunk < kTransposedChunk ? end : chunk + kTransposedChunk;
      for (int entry = chunk; entry < chunk_end; ++entry) {
        gathered[entry - chunk] = acc[entry * entry_step];
      }
      (this->*write_lines_)(gathered, 0, line, line + 1, chunk, chunk_end);
    }
  }

  // Writes entries [first, end) of lines [first_line, end_line) from contiguous sums: line
  // first_line's entry `first` at `sums`, each next line's line_step further on. A block goes
  // through one call: what is the same for all its lines is set up once.
  using LinesLoop = void (Writer::*)(const std::int32_t* sums, std::ptrdiff_t line_step,
                                     int first_line, int end_line, int first, int end);

  template <ElementType kType>
  static constexpr int kSizeOf = kType == ElementType::kInt32   ? 4
                                 : kType == ElementType::kInt16 ? 2
                                                                : 1;
  // The range of a narrow result type.
  template <ElementType kType>
  static constexpr std::int32_t kTypeMin = kType == ElementType::kUint8  ? 0
                                           : kType == ElementType::kInt8 ? -128
                                                                         : -32768;
  template <ElementType kType>
  static constexpr std::int32_t kTypeMax = kType == ElementType::kUint8  ? 255
                                           : kType == ElementType::kInt8 ? 127
                                                                         : 32767;

  // The common pipelines have their own lines loop, with the program's stages inlined in order
  // and their parameters hoisted out of it. Through the generic loop, which dispatches each
  // instruction of each batch, a QuantizeDown and uint8 cast with offset terms took 0.74 ns per
  // entry in a microbenchmark here; through its own loop, 0.58; with lines set up in the loop and
  // the saturating store, 0.44 on long lines.
  template <ElementType kType, OutputOpcode... kOpcodes>
  struct Shape {
    // Selects this shape's loop for `program` if it has these opcodes, in this order, and, for
    // narrow results, if a last clamp is the saturating cast to their type (WriteLines leaves it
    // to the saturating store).
    static bool Select(const OutputProgram& program, LinesLoop* loop) {
      const OutputOpcode opcodes[] = {kOpcodes...};
      if (program.count != static_cast<int>(sizeof...(kOpcodes))) return false;
      for (int k = 0; k < program.count; ++k) {
        if (program.instructions[k].opcode != opcodes[k]) return false;
      }
      const OutputInstruction& last = program.instructions[program.count - 1];
      if (kType != ElementType::kInt32 && last.opcode == OutputOpcode::kClamp &&
          (last.offset != kTypeMin<kType> || last.limit != kTypeMax<kType>)) {
        return false;
      }
      *loop = &Writer::WriteShapeLines<kType, kOpcodes...>;
      return true;
    }
  };

  template <ElementType kType>
  static LinesLoop LinesLoopFor(const OutputProgram& program) {
    using Op = OutputOpcode;
    LinesLoop loop = &Writer::WriteLines<kType, false, Owed::kAny>;
    // Shapes only where pipelines have them: a narrow result's program ends in its cast (a
    // clamp), and an int32 result has no cast, so int32 results have a loop only for a bias (raw
    // accumulators the caller requantizes); an int32 result after a clamp the caller added by
    // hand runs the generic loop. Each shape is two to four loops, and the writers' loops are
    // most of the library's compile time.
    if constexpr (kType == ElementType::kInt32) {
      (void)Shape<kType, Op::kAdd>::Select(program, &loop);
    } else {
      // QuantizeDown (after a bias, before a clamp) and a cast; ShiftByPOT and a cast; the
      // training layer's stochastic ShiftByPOT (after a bias) with a clamp to its bit width and
      // a cast.
      (void)(Shape<kType, Op::kScaleByFixedPoint, Op::kClamp>::Select(program, &loop) ||
             Shape<kType, Op::kAdd, Op::kScaleByFixedPoint, Op::kClamp>::Select(program, &loop) ||
             Shape<kType, Op::kScaleByFixedPoint, Op::kClamp, Op::kClamp>::Select(program, &loop) ||
             Shape<kType, Op::kAdd, Op::kScaleByFixedPoint, Op::kClamp, Op::kClamp>::Select(
                 program, &loop) ||
             Shape<kType, Op::kRoundingShiftRight, Op::kClamp>::Select(program, &loop) ||
             Shape<kType, Op::kAdd, Op::kRoundingShiftRight, Op::kClamp>::Select(program, &loop) ||
             Shape<kType, Op::kStochasticShiftRight, Op::kClamp, Op::kClamp>::Select(program,
                                                                                     &loop) ||
             Shape<kType, Op::kAdd, Op::kStochasticShiftRight, Op::kClamp, Op::kClamp>::Select(
                 program, &loop));
    }
    // A layer's requantization (after an optional bias) followed by the quantized add's stage
    // and the cast: a residual block's output, in 8 bits only.
    if constexpr (kSizeOf<kType> == 1) {
      (void)(Shape<kType, Op::kScaleByFixedPoint, Op::kClamp, Op::kAlignedSum,
                   Op::kScaleByFixedPoint, Op::kClamp, Op::kClamp>::Select(program, &loop) ||
             Shape<kType, Op::kAdd, Op::kScaleByFixedPoint, Op::kClamp, Op::kAlignedSum,
                   Op::kScaleByFixedPoint, Op::kClamp, Op::kClamp>::Select(program, &loop));
    }
    return loop;
  }

  template <OutputOpcode...>
  struct Opcodes {};

  // Whether scaled separable terms (OffsetTerms::sum_factor), and separable terms with nothing
  // along the lines, get their own loops for a shape: 8-bit results of a QuantizeDown, after an
  // optional bias (a quantized layer's output).
  template <ElementType kType, OutputOpcode... kOpcodes>
  static constexpr bool kQuantizedOutputLoop =
      kSizeOf<kType> == 1 &&
      (std::is_same<Opcodes<kOpcodes...>,
                    Opcodes<OutputOpcode::kScaleByFixedPoint, OutputOpcode::kClamp>>::value ||
       std::is_same<Opcodes<kOpcodes...>,
                    Opcodes<OutputOpcode::kAdd, OutputOpcode::kScaleByFixedPoint,
                            OutputOpcode::kClamp>>::value);

  // Whether the rescale of requantized operands gets its own loop for a shape: the results a
  // bit-depth experiment reads, 8-bit results of a QuantizeDown and int32 results of a bias. Other
  // shapes run their loop for anything owed.
  template <ElementType kType, OutputOpcode... kOpcodes>
  static constexpr bool kRescaleLoop =
      (kSizeOf<kType> == 1 && ((kOpcodes == OutputOpcode::kScaleByFixedPoint) || ...)) ||
      (kType == ElementType::kInt32 &&
       std::is_same<Opcodes<kOpcodes...>, Opcodes<OutputOpcode::kAdd>>::value);

  // A shape's loop for lines whose scale parameters are the same all along each of them; lines
  // whose scale varies along them (per-channel across a row-major result's columns) take the
  // generic loop.
  template <ElementType kType, OutputOpcode... kOpcodes>
  void WriteShapeLines(const std::int32_t* sums, std::ptrdiff_t line_step, int first_line,
                       int end_line, int first, int end) {
    for (int k = 0; k < count_; ++k) {
      if (LineInstruction<Isa>::ScaleVariesAlong(program_.instructions[k], row_major_)) {
        return WriteLines<kType, false, Owed::kAny>(sums, line_step, first_line, end_line, first,
                                                    end);
      }
    }
    // Separable terms (uniform offsets, the common case), scaled or with the rescale of
    // requantized operands or neither: loops without the product terms and the tests for what is
    // owed, whose code and registers GCC otherwise keeps in them behind run-time tests. With the
    // rescale, 101 -> 81 instructions per 16 results of L7R5's pipeline.
    if (terms_.row_part != nullptr) {
      if (rescale_ == nullptr) {
        if (terms_.sum_factor == 1) {
          if constexpr (kQuantizedOutputLoop<kType, kOpcodes...>) {
            if (row_major_ ? terms_.col_parts_zero : terms_.row_parts_zero) {
              return WriteLines<kType, true, Owed::kLineTerms, kOpcodes...>(
                  sums, line_step, first_line, end_line, first, end);
            }
          }
          return WriteLines<kType, true, Owed::kSeparableTerms, kOpcodes...>(
              sums, line_step, first_line, end_line, first, end);
        }
        // Own loops only for a quantized layer's output: each is 5 to 10 KiB of code, and one
        // for every shape and type took 0.6 MiB. The generic loop took 4% longer for L4R4
        // requantized at 256^3.
        if constexpr (kQuantizedOutputLoop<kType, kOpcodes...>) {
          return WriteLines<kType, true, Owed::kScaledSeparableTerms, kOpcodes...>(
              sums, line_step, first_line, end_line, first, end);
        }
      } else if constexpr (kRescaleLoop<kType, kOpcodes...>) {
        return WriteLines<kType, true, Owed::kSeparableTermsAndRescale, kOpcodes...>(
            sums, line_step, first_line, end_line, first, end);
      }
    }
    WriteLines<kType, true, Owed::kAny, kOpcodes...>(sums, line_step, first_line, end_line, first,
                                                     end);
  }

  // What the lines loop knows of what the sums are owed before the program: anything the block's
  // OffsetTerms and rescale say, or separable terms: plain, with nothing along the lines
  // (kLineTerms), on scaled sums, or with a rescale. The parts along the lines are all zero where
  // the operand whose sums they hold multiplies one whose offset cancels the shift it is packed
  // with (PackedValueShift: uint8 values with offset -128 in a kernel that packs them as int8, as
  // the AMX and AVX-512 VNNI ones do), which the driver marks in the OffsetTerms (row_parts_zero,
  // col_parts_zero): scanning the parts instead took 290 ns per 1024 of them, more than leaving out
  // their 64 vector additions saves on a block of one line. Each line then adds its own term alone.
  // The AVX-512 writer alone ran 5 to 9% faster so on 8-bit QuantizeDown blocks (64 x 64 to
  // 256 x 256), the AMX GEMM 1.5 to 3% at 64^3 to 256^3.
  enum class Owed {
    kAny,
    kSeparableTerms,
    kLineTerms,
    kScaledSeparableTerms,
    kSeparableTermsAndRescale
  };

  // Whether a shape's loop takes the rescale of requantized operands and its QuantizeDown together
  // in float, where a line's constants allow (RescaledByteScaleConstants): 8-bit results of a
  // QuantizeDown, on an Isa with that form.
  template <ElementType kType, Owed kOwed, OutputOpcode... kOpcodes>
  static constexpr bool kRescaledByteScaleLoop =
      !std::is_same<typename RescaledByteScaleOf<Isa>::type, NoRescaledByteScale>::value &&
      kOwed == Owed::kSeparableTermsAndRescale && kSizeOf<kType> == 1 &&
      std::is_same<Opcodes<kOpcodes...>,
                   Opcodes<OutputOpcode::kScaleByFixedPoint, OutputOpcode::kClamp>>::value;

  // The rescale's bounds over lines [first_line, end_line) and entries [first, end).
  RescaleBounds RescaleBoundsOf(int first_line, int end_line, int first, int end) const {
    const RescaleLineTerms& line_terms = row_major_ ? rescale_->lhs : rescale_->rhs;
    const RescaleLineTerms& along_terms = row_major_ ? rescale_->rhs : rescale_->lhs;
    const int line_start = (row_major_ ? block_.row_start : block_.col_start) + first_line;
    const int along_start = (row_major_ ? block_.col_start : block_.row_start) + first;
    return output_writer::RescaleBoundsOf(line_terms.a + line_start, line_terms.b + line_start,
                                          end_line - first_line, along_terms.a_float + along_start,
                                          along_terms.b_float + along_start, end - first);
  }

  // The float form's constants for lines whose QuantizeDown is `scale`, within `bounds`.
  RescaledByteScaleConstants RescaledByteScaleFor(const LineInstruction<Isa>& scale,
                                                  const RescaleBounds& bounds) const {
    if (!scale.byte_scale.usable()) return {};
    return {scale.first.value, -scale.second.value, scale.instruction->offset,
            rescale_->divisor, bounds.line_a,       bounds.line_b,
            bounds.along_a,    bounds.along_b};
  }

  // A LinesLoop for kType results: the program's instructions are kOpcodes when kKnown, else
  // dispatched one by one; the sums are owed what kOwed says. Each line runs batches of vectors,
  // whose programs run side by side (one vector's program is a single chain of dependent
  // operations), then the rest one vector at a time. The element size is a constant and each line's
  // parameters and output pointer are locals: a store through a char pointer could alias any
  // member, so GCC would reload each one after it, and it keeps locals in registers and moves what
  // depends only on them out of the batch loop.
  template <ElementType kType, bool kKnown, Owed kOwed, OutputOpcode... kOpcodes>
  void WriteLines(const std::int32_t* sums, std::ptrdiff_t line_step, int first_line, int end_line,
                  int first, int end) {
    constexpr int kSize = kSizeOf<kType>;
    constexpr int kKnownCount = sizeof...(kOpcodes);
    constexpr OutputOpcode kOpcodeList[] = {kOpcodes..., OutputOpcode::kAdd};
    // A known last clamp of narrow results is the saturating cast to their type: the saturating
    // narrowing of two vectors at a time does it as it stores them, in fewer instructions than
    // clamping and narrowing each (Shape::Select checked the clamp's range).
    constexpr bool kSaturatingStore = kKnown && kType != ElementType::kInt32 &&
                                      kOpcodeList[kKnownCount - 1] == OutputOpcode::kClamp;
    constexpr bool kRescaledByteScale = kRescaledByteScaleLoop<kType, kOwed, kOpcodes...>;
    // Dispatching instruction by instruction costs the same for any batch: four vectors share
    // it. Inlined, two vectors at a time keep everything in registers and interleave enough.
    // Saturated to bytes, a batch holds as many as the Isa narrows in one store (ByteBatchOf),
    // but for the rescale's float form: on four vectors at once GCC kept its float values on the
    // stack, and L7R5's writer took three times the samples.
    constexpr int kBatch = !kKnown ? 4
                           : kSaturatingStore && kSize == 1 && !kRescaledByteScale
                               ? ByteBatchOf<Isa>::value
                               : 2;
    // After batches of four saturated vectors, a rest of two or three goes as a pair.
    constexpr bool kPairRest = kBatch == 4 && kSaturatingStore;
    const int count = count_;
    // A known program's instructions are locals, built here rather than copied from members
    // built before: copying and building them again took a tenth of a 16 x 32 x 64 GEMM.
    UnconstructedInstruction known[kKnownCount + 1];
    if constexpr (kKnown) {
      BuildInstructions(known, kKnownCount);
    } else if (!instructions_built_) {
      BuildInstructions(instructions_, count_);
      instructions_built_ = true;
    }
    // All of the program, or all but a last clamp left to the saturating store.
    const auto run = [&](auto& vectors, int entry, int lanes, bool but_last_clamp) {
      if constexpr (kKnown) {
        const int known_count = but_last_clamp && kSaturatingStore ? kKnownCount - 1 : kKnownCount;
        int k = 0;
        ((k < known_count ? known[k].value.template Apply<kOpcodes, true>(vectors, entry, lanes)
                          : void(),
          ++k),
         ...);
      } else {
        for (int k = 0; k < count; ++k) instructions_[k].value.Run(vectors, entry, lanes);
      }
    };
    // A pair's results from `out` on, saturated: a batch of two, or the pair that follows
    // batches of four where a line's rest holds two or three vectors, so that they do not go one
    // vector at a time.
    [[maybe_unused]] const auto store_pair = [](Raw(&vectors)[2], char* out) {
      Isa::template StoreSaturated<kType>(vectors[0], vectors[1], out);
    };
    // A batch's results from `out` on.
    const auto store_batch = [&](Raw(&vectors)[kBatch], char* out) {
      if constexpr (kSaturatingStore && kBatch == 4) {
        Isa::template StoreSaturatedBytes<kType>(vectors, out);
      } else if constexpr (kSaturatingStore) {
        store_pair(vectors, out);
      } else {
        for (int j = 0; j < kBatch; ++j) {
          Isa::Store(vectors[j], kSize, out + j * Isa::kLanes * kSize);
        }
      }
    };
    int line_first_entry = first;
    // Where several lines of at most kAcrossLinesEntries entries each have the same instructions
    // on every line: those set up once from the first line, `at`, and line_first_entry where
    // write_batches(at), which walks the whole batches down the lines, left off.
    const auto across_lines = [&](const auto& write_batches) {
      if (end_line - first_line <= 1 || end - first > kAcrossLinesEntries) {
        return;
      }
      for (int k = 0; k < kKnownCount; ++k) {
        if (known[k].value.ChangesAcrossLines(row_major_)) return;
      }
      const Line at = LineAt(first_line);
      for (int k = 0; k < kKnownCount; ++k) known[k].value.ForLine(at.row, at.col, row_major_);
      line_first_entry = write_batches(at);
    };
    if constexpr (kKnown && (kOwed == Owed::kSeparableTerms || kOwed == Owed::kLineTerms ||
                             kOwed == Owed::kScaledSeparableTerms)) {
      across_lines([&](const Line& at) {
        const int entry = WriteBatchesAcrossLines<kSize, kBatch, kOwed>(
            at, sums, line_step, first_line, end_line, first, first, end, run, store_batch);
        if constexpr (kPairRest) {
          // Lines of 32 entries (AVX-512) hold no batch of four. Line by line, each with its
          // set-up, the writer took 9.5% of a declared 2 x 2-bit GEMM's samples at 1024^3 (its
          // blocks 32 columns wide), against 4% for pairs across the lines.
          return WriteBatchesAcrossLines<kSize, 2, kOwed>(at, sums, line_step, first_line, end_line,
                                                          first, entry, end, run, store_pair);
        }
        return entry;
      });
      if (line_first_entry == end) return;
    }
    // Its constants, for all the lines unless the scale differs from line to line; it needs the
    // terms' float values.
    const bool rescale_floats = kRescaledByteScale &&
                                (row_major_ ? rescale_->rhs : rescale_->lhs).a_float != nullptr &&
                                (row_major_ ? rescale_->rhs : rescale_->lhs).b_float != nullptr;
    RescaleBounds rescale_bounds;
    RescaledByteScaleConstants rescaled_constants;
    if constexpr (kRescaledByteScale) {
      if (rescale_floats) {
        rescale_bounds = RescaleBoundsOf(first_line, end_line, first, end);
        if (!known[0].value.per_line) {
          rescaled_constants = RescaledByteScaleFor(known[0].value, rescale_bounds);
        }
      }
    }
    typename RescaledByteScaleOf<Isa>::type rescaled_byte_scale(rescaled_constants);
    if constexpr (kRescaledByteScale) {
      if (rescaled_constants.usable) {
        across_lines([&](const Line& at) {
          return WriteRescaledBatchesAcrossLines<kSize, kBatch>(
              at, known[0].value, rescaled_byte_scale, rescale_bounds, rescaled_constants, sums,
              line_step, first_line, end_line, first, end, store_batch);
        });
        if (line_first_entry == end) return;
      }
    }
    for (int line = first_line; line < end_line; ++line, sums += line_step) {
      // A local, not a member: reading back a member just stored in pieces stalls store
      // forwarding. A profile of 16-entry lines put a tenth of the time on the first such load.
      const Line at = LineAt(line);
      char* const out = at.out;
      const LineTerms<Isa>& terms = at.terms;
      const LineRescale<Isa>& rescale = at.rescale;
      // The sums with what they are owed before the program.
      const auto owed = [&](Raw sums, int entry, int lanes) {
        if constexpr (kOwed == Owed::kSeparableTerms) {
          return terms.AddSeparableTo(sums, entry, lanes);
        } else if constexpr (kOwed == Owed::kLineTerms) {
          return fixedpoint::Add(sums, terms.first);
        } else if constexpr (kOwed == Owed::kScaledSeparableTerms) {
          return terms.AddScaledSeparableTo(sums, entry, lanes);
        } else if constexpr (kOwed == Owed::kSeparableTermsAndRescale) {
          return rescale.ApplyOwed(terms.AddSeparableTo(sums, entry, lanes), entry, lanes);
        }
        return rescale.Apply(terms.AddTo(sums, entry, lanes), entry, lanes);
      };
      if constexpr (kKnown) {
        for (int k = 0; k < kKnownCount; ++k) known[k].value.ForLine(at.row, at.col, row_major_);
      } else {
        for (int k = 0; k < count; ++k) {
          instructions_[k].value.ForLine(at.row, at.col, row_major_);
        }
      }
      if constexpr (kRescaledByteScale) {
        if (rescale_floats && known[0].value.per_line) {
          rescaled_constants = RescaledByteScaleFor(known[0].value, rescale_bounds);
          rescaled_byte_scale = typename Isa::RescaledByteScale(rescaled_constants);
        }
      }
      const std::int32_t* line_sums = sums + (line_first_entry - first);
      int entry = line_first_entry;
      if constexpr (kRescaledByteScale) {
        if (rescaled_constants.usable) {
          const RescaledLine factors =
              RescaledLineOf(rescale.line_a, rescale.line_b, rescale_bounds, rescaled_constants);
          rescaled_byte_scale.ForLine(factors.line_a, factors.line_b, factors.addend);
          const float* const one_along = OneAlong(rescale, rescale_bounds);
          // The whole batches, with one varying term or two.
          const auto batches = [&](auto one_term) {
            for (; entry + kBatch * Isa::kLanes <= end;
                 entry += kBatch * Isa::kLanes, line_sums += kBatch * Isa::kLanes) {
              Raw vectors[kBatch];
              for (int j = 0; j < kBatch; ++j) {
                vectors[j] = terms.AddSeparableTo(Isa::Load(line_sums + j * Isa::kLanes),
                                                  entry + j * Isa::kLanes, Isa::kLanes);
              }
              const auto exact = [&](Raw owed_sums, int j) {
                const LineInstruction<Isa>& scale = known[0].value;
                return scale.byte_scale(
                    rescale.ApplyOwed(owed_sums, entry + j * Isa::kLanes, Isa::kLanes),
                    scale.scale);
              };
              if constexpr (decltype(one_term)::value) {
                rescaled_byte_scale(vectors, one_along + entry, exact);
              } else {
                rescaled_byte_scale(vectors, rescale.along_a_float + entry,
                                    rescale.along_b_float + entry, exact);
              }
              store_batch(vectors, out + entry * kSize);
            }
          };
          if (one_along != nullptr) {
            batches(std::true_type());
          } else {
            batches(std::false_type());
          }
        }
      }
      // Whole batches of kVectors vectors: kBatch, then, after batches of four, a pair.
      const auto whole_batches = [&](auto vector_count) {
        constexpr int kVectors = decltype(vector_count)::value;
        for (; entry + kVectors * Isa::kLanes <= end;
             entry += kVectors * Isa::kLanes, line_sums += kVectors * Isa::kLanes) {
          Raw vectors[kVectors];
          for (int j = 0; j < kVectors; ++j) {
            const int first_entry = entry + j * Isa::kLanes;
            vectors[j] = owed(Isa::Load(line_sums + j * Isa::kLanes), first_entry, Isa::kLanes);
          }
          run(vectors, entry, Isa::kLanes, true);
          if constexpr (kVectors == kBatch) {
            store_batch(vectors, out + entry * kSize);
          } else {
            store_pair(vectors, out + entry * kSize);
          }
        }
      };
      whole_batches(std::integral_constant<int, kBatch>());
      if constexpr (kPairRest) {
        whole_batches(std::integral_constant<int, 2>());
      }
      for (; entry < end; entry += Isa::kLanes, line_sums += Isa::kLanes) {
        const int lanes = end - entry < Isa::kLanes ? end - entry : Isa::kLanes;
        Raw vectors[1] = {owed(LoadPartial<Isa>(line_sums, lanes), entry, lanes)};
        run(vectors, entry, lanes, false);
        StorePartial<Isa>(vectors[0], kSize, lanes, out + entry * kSize);
      }
    }
  }

  // Lines of at most this many entries (four batches of two vectors) go through
  // WriteBatchesAcrossLines where they can. On longer ones, setting up each line is a small part
  // of its work, and walking down lines of a block that no longer fits in L1 took longer: at
  // 1024^3 the writer's time rose by a third.
  static constexpr int kAcrossLinesEntries = 8 * Isa::kLanes;

  // What block line `line` needs besides its instructions: the result row and column of its
  // first entry, where that entry goes, and what its sums are owed.
  struct Line {
    int row;
    int col;
    char* out;
    LineTerms<Isa> terms;
    LineRescale<Isa> rescale;
  };

  // Inlined into the lines loop, as are ForLine, LineTerms::For and LoadPartial: as calls, with
  // the reloads and spills around them, they cost about 135 instructions per line, against 200
  // for the 64 entries of a line of the QuantizeDown pipeline; inlined, about 95.
  __attribute__((always_inline)) Line LineAt(int line) const {
    const int row = block_.row_start + (row_major_ ? line : 0);
    const int col = block_.col_start + (row_major_ ? 0 : line);
    char* const out = out_ + static_cast<std::ptrdiff_t>(line) * stride_ * size_;
    return {row, col, out, LineTerms<Isa>::For(terms_, line, row_major_),
            LineRescale<Isa>::For(rescale_, reciprocal_, row, col, row_major_)};
  }

  // The terms output_writer::OneAlong names of a line's rescale.
  static const float* OneAlong(const LineRescale<Isa>& rescale, const RescaleBounds& bounds) {
    return output_writer::OneAlong(rescale.along_a_float, rescale.along_b_float, bounds);
  }

  // WriteBatchesAcrossLines for the rescale's float form (RescaledByteScale, its constants the
  // same on every line): each line's factors are worked out once for a chunk of lines, and each
  // batch goes down the chunk's lines with its terms along them in registers. Line by line, the
  // lines' set-up (their terms, factors in double, the instructions' ForLine) took two fifths of
  // the writer's samples of an L7R5 GEMM at 256^3: the writer took 0.32 of the tile's samples
  // (0.25 this way, 0.16 for the 8-bit GEMM's), and the GEMM ran 3 to 6% slower on the AVX-512
  // VNNI and AMX kernels than it does here.
  template <int kSize, int kBatch, typename Scale, typename StoreBatch>
  __attribute__((always_inline)) int WriteRescaledBatchesAcrossLines(
      const Line& at, const LineInstruction<Isa>& scale, Scale& rescaled_byte_scale,
      const RescaleBounds& bounds, const RescaledByteScaleConstants& constants,
      const std::int32_t* sums, std::ptrdiff_t line_step, int first_line, int end_line, int first,
      int end, const StoreBatch& store_batch) {
    constexpr int kBatchEntries = kBatch * Isa::kLanes;
    const std::int32_t* const line_parts = row_major_ ? terms_.row_part : terms_.col_part;
    const std::ptrdiff_t out_step = static_cast<std::ptrdiff_t>(stride_) * kSize;
    const int whole_end = first + (end - first) / kBatchEntries * kBatchEntries;
    // The along terms' pointers start at the block's first entry on every line.
    const float* const along_a = at.rescale.along_a_float;
    const float* const along_b = at.rescale.along_b_float;
    const float* const one_along = OneAlong(at.rescale, bounds);
    // The lines' own terms lie one after another, and their factors go to arrays of their own: a
    // loop that vectorizes. Through LineAt, line by line into an array of RescaledLine, the
    // factors took three tenths of the writer's samples of an L7R5 GEMM at 1024^3 on the AMX
    // kernel, whose blocks' lines are 64 entries long.
    const RescaleLineTerms& line_terms = row_major_ ? rescale_->lhs : rescale_->rhs;
    const int line_start = row_major_ ? block_.row_start : block_.col_start;
    constexpr int kLineChunk = 64;
    float line_a[kLineChunk], line_b[kLineChunk], addend[kLineChunk];
    const auto chunk_batches = [&](int chunk_first, int chunk_end, auto one_term) {
      for (int entry = first; entry < whole_end; entry += kBatchEntries) {
        Raw along[kBatch];
        for (int j = 0; j < kBatch; ++j) {
          along[j] = Isa::Load(at.terms.first_along + entry + j * Isa::kLanes);
        }
        const std::int32_t* line_sums =
            sums + (chunk_first - first_line) * line_step + (entry - first);
        char* out = at.out + (chunk_first - first_line) * out_step + entry * kSize;
        for (int line = chunk_first; line < chunk_end;
             ++line, line_sums += line_step, out += out_step) {
          const int in_chunk = line - chunk_first;
          rescaled_byte_scale.ForLine(line_a[in_chunk], line_b[in_chunk], addend[in_chunk]);
          const Raw line_part = fixedpoint::Dup<Raw>(line_parts[line]);
          Raw vectors[kBatch];
          for (int j = 0; j < kBatch; ++j) {
            vectors[j] = fixedpoint::Add(
                fixedpoint::Add(Isa::Load(line_sums + j * Isa::kLanes), line_part), along[j]);
          }
          const auto exact = [&](Raw owed_sums, int j) {
            return scale.byte_scale(
                LineAt(line).rescale.ApplyOwed(owed_sums, entry + j * Isa::kLanes, Isa::kLanes),
                scale.scale);
          };
          if constexpr (decltype(one_term)::value) {
            rescaled_byte_scale(vectors, one_along + entry, exact);
          } else {
            rescaled_byte_scale(vectors, along_a + entry, along_b + entry, exact);
          }
          store_batch(vectors, out);
        }
      }
    };
    for (int chunk_first = first_line; chunk_first < end_line; chunk_first += kLineChunk) {
      const int chunk_end = std::min(end_line, chunk_first + kLineChunk);
      const double* const terms_a = line_terms.a + line_start + chunk_first;
      const double* const terms_b = line_terms.b + line_start + chunk_first;
      for (int line = 0; line < chunk_end - chunk_first; ++line) {
        const RescaledLine factors =
            RescaledLineOf(terms_a[line], terms_b[line], bounds, constants);
        line_a[line] = factors.line_a;
        line_b[line] = factors.line_b;
        addend[line] = factors.addend;
      }
      if (one_along != nullptr) {
        chunk_batches(chunk_first, chunk_end, std::true_type());
      } else {
        chunk_batches(chunk_first, chunk_end, std::false_type());
      }
    }
    return whole_end;
  }

  // The whole batches of WriteLines' entries [first, end) for lines whose instructions are the
  // same on every line, with separable offset terms: batch by batch, each down all the lines, so
  // that the instructions' constants and the batch's terms along the lines stay in registers and
  // a line costs its own term, a load and a store. Line by line, setting up each line took as
  // many instructions as the 64 entries of a line of the QuantizeDown pipeline. The batches from
  // entry `from` on (`first` is the block's first); returns where the entries that fill no whole
  // batch start.
  template <int kSize, int kBatch, Owed kOwed, typename Run, typename StoreBatch>
  __attribute__((always_inline)) int WriteBatchesAcrossLines(
      const Line& at, const std::int32_t* sums, std::ptrdiff_t line_step, int first_line,
      int end_line, int first, int from, int end, const Run& run, const StoreBatch& store_batch) {
    const std::int32_t* const line_parts = row_major_ ? terms_.row_part : terms_.col_part;
    const std::ptrdiff_t out_step = static_cast<std::ptrdiff_t>(stride_) * kSize;
    int entry = from;
    for (; entry + kBatch * Isa::kLanes <= end; entry += kBatch * Isa::kLanes) {
      Raw along[kBatch];
      if constexpr (kOwed != Owed::kLineTerms) {
        for (int j = 0; j < kBatch; ++j) {
          along[j] = Isa::Load(at.terms.first_along + entry + j * Isa::kLanes);
        }
      }
      const std::int32_t* line_sums = sums + (entry - first);
      char* out = at.out + entry * kSize;
      for (int line = first_line; line < end_line;
           ++line, line_sums += line_step, out += out_step) {
        // LineTerms::AddSeparableTo's sum, with the batch's terms along the lines loaded once
        // for all the lines: through AddSeparableTo, reloading them at every line, the writer
        // took 8% more samples per tile sample at 64^3.
        const Raw line_part = fixedpoint::Dup<Raw>(line_parts[line]);
        Raw vectors[kBatch];
        for (int j = 0; j < kBatch; ++j) {
          Raw v = Isa::Load(line_sums + j * Isa::kLanes);
          if constexpr (kOwed == Owed::kScaledSeparableTerms) {
            v = fixedpoint::Mul(v, at.terms.factor);
          }
          v = fixedpoint::Add(v, line_part);
          if constexpr (kOwed != Owed::kLineTerms) v = fixedpoint::Add(v, along[j]);
          vectors[j] = v;
        }
        run(vectors, entry, Isa::kLanes, true);
        store_batch(vectors, out);
      }
    }
    return entry;
  }

  const OutputProgram& program_;
  const AccumulatorBlock& block_;
  const OffsetTerms& terms_;
  const Rescale* rescale_;
  const double reciprocal_;
  char* const out_;  // the block's first result
  const int stride_;
  const bool row_major_;
  const ElementType type_;
  const int size_;
  const int count_;
  // Storage for instructions, constructed only as needed. A LineInstruction holds a kilobyte of
  // vectors: default-constructing all kMaxInstructions of them took a tenth of a 64 x 64 x 64
  // GEMM.
  union UnconstructedInstruction {
    UnconstructedInstruction() {}
    LineInstruction<Isa> value;
  };
  static_assert(std::is_trivially_destructible<LineInstruction<Isa>>::value,
                "instructions are never destroyed");
  // Builds the program's first `count` instructions in `storage`.
  void BuildInstructions(UnconstructedInstruction* storage, int count) const {
    for (int k = 0; k < count; ++k) {
      new (&storage[k].value) LineInstruction<Isa>(
          program_.instructions[k], k + 1 < count_ ? &program_.instructions[k + 1] : nullptr);
    }
  }
  // The program's count_ instructions for the generic lines loop, built by its first call.
  UnconstructedInstruction instructions_[OutputProgram::kMaxInstructions];
  bool instructions_built_ = false;
  LinesLoop write_lines_;
};

template <typename Isa>
void WriteOutput(const OutputProgram& program, const AccumulatorBlock& block,
                 const OffsetTerms& terms, const Rescale* rescale, const MatrixView& result) {
  Writer<Isa>(program, block, terms, rescale, result).Write();
}

}  // namespace output_writer
}  // namespace internal
}  // namespace lowbit

#endif  // LOWBIT_INTERNAL_OUTPUT_OUTPUT_WRITER_H_
