// Runtime kernel choice: the Context setting, else LOWBIT_KERNEL, else the best kernel the CPU
// supports. One binary, no -m flags needed by the caller.
#include <cpuinfo.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "lowbit/internal/driver/context_state.h"
#include "lowbit/internal/driver/driver.h"
#include "lowbit/internal/kernel/kernel.h"
#include "lowbit/internal/output/output.h"
#include "lowbit/public/context.h"
#include "lowbit/public/error.h"

namespace lowbit {

const char* KernelName(Kernel kernel) {
  switch (kernel) {
    case Kernel::kAuto:
      return "auto";
    case Kernel::kReference:
      return "reference";
    case Kernel::kSse41:
      return "sse41";
    case Kernel::kAvx2:
      return "avx2";
    case Kernel::kAvx512Vnni:
      return "avx512vnni";
    case Kernel::kAmx:
      return "amx";
    case Kernel::kNeon:
      return "neon";
  }
  return "unknown";
}

namespace {

bool AlwaysSupported() { return true; }
#if defined(__x86_64__)
bool HasSse41() { return cpuinfo_initialize() && cpuinfo_has_x86_sse4_1(); }
// Every CPU with AVX2 so far has FMA3 too; the AVX2 writer's rescale uses it.
bool HasAvx2() { return cpuinfo_initialize() && cpuinfo_has_x86_avx2() && cpuinfo_has_x86_fma3(); }
// Its packing and requantizing are the AVX2 ones.
bool HasAvx512Vnni() {
  return HasAvx2() && cpuinfo_has_x86_avx512f() && cpuinfo_has_x86_avx512bw() &&
         cpuinfo_has_x86_avx512vnni();
}
// Its packing, output and products of short lhs are the AVX-512 VNNI ones.
bool HasAmx() { return HasAvx512Vnni() && internal::AmxSupported(); }
// Bit-serial products of 1- and 2-bit operands, where the CPU has VPOPCNTDQ.
const internal::KernelImplementation* Avx512BitSerialIfVpopcntdq(int lhs_bits, int rhs_bits) {
  if (!cpuinfo_has_x86_avx512vpopcntdq()) return nullptr;
  return internal::Avx512BitSerialKernel(lhs_bits, rhs_bits);
}
#endif

#if defined(__aarch64__)
bool HasNeon() { return cpuinfo_initialize() && cpuinfo_has_arm_neon(); }
bool HasNeonDot() { return cpuinfo_initialize() && cpuinfo_has_arm_neon_dot(); }
// Kernel::kNeon is the best 8-bit NEON kernel the CPU runs. A prepacked rhs is packed by this
// same choice, made again on the same CPU when it is multiplied.
const internal::KernelImplementation& BestNeonKernel() {
  return HasNeonDot() ? internal::NeonDotKernel() : internal::NeonKernel();
}
// Narrow operands where the CPU has SDOT: the narrow kernels' vmlal_s8 and vmlal_high_s8 add 8
// products an instruction (32 for the 4x4 tile's 256 of a 16-deep group), sdot adds 16 (24 for the
// dot-product tile's 384 of a 4-deep one), exactly for any values of up to 8 bits. So, as with
// AVX-512 VNNI's vpdpbusd, narrow values take the dot-product kernel there, and the narrow kernels
// serve CPUs without it; 1 x 1 bits still run bit-serial (BitSerialPays).
const internal::KernelImplementation* NeonNarrowKernelWithoutDot(int lhs_bits, int rhs_bits) {
  return HasNeonDot() ? nullptr : internal::NeonNarrowKernel(lhs_bits, rhs_bits);
}
// Weights of at most 4 bits two to a byte need SDOT too; without it they stay a byte each.
const internal::KernelImplementation* NeonUint4WeightsKernel() {
  return HasNeonDot() ? &internal::NeonDotUint4PairsKernel() : nullptr;
}
#endif

// One row per kernel compiled into this build, slowest first. An ISA kernel file provides
// its implementation, and its ISA's output writer (none for the reference kernel, which has
// no ISA); cpuinfo says whether this CPU can run it.
struct KernelEntry {
  Kernel kernel;
  bool (*cpu_supports)();
  const internal::KernelImplementation& (*implementation)();
  const internal::KernelImplementation& (*prepacked_rhs_implementation)();
  // The one that multiplies the same prepacked rhs layout with an lhs of one or two rows, where
  // it is not the same. Or null.
  const internal::KernelImplementation& (*matrix_vector_implementation)();
  // For operands of fewer bits: returns null where the bit depths gain nothing. Or null.
  const internal::KernelImplementation* (*narrow_implementation)(int lhs_bits, int rhs_bits);
  internal::OutputWriter output_writer;
  // Bit-serial products for 1- and 2-bit operands on this CPU (null for other bit depths), used
  // where BitSerialPays. Or null.
  const internal::KernelImplementation* (*bit_serial_implementation)(int lhs_bits,
                                                                     int rhs_bits) = nullptr;
  // For prepacked weights of at most 4 bits, stored two to a byte, where no bit-serial kernel
  // takes them: null where this CPU has none. Or null.
  const internal::KernelImplementation* (*uint4_weights_implementation)() = nullptr;
};
// An implementation every CPU that runs the entry's kernel has, as uint4_weights_implementation.
template <const internal::KernelImplementation& (*kImplementation)()>
const internal::KernelImplementation* Always() {
  return &kImplementation();
}
const KernelEntry kKernels[] = {
    {Kernel::kReference, &AlwaysSupported, &internal::ReferenceKernel, &internal::ReferenceKernel,
     nullptr, nullptr, nullptr},
#if defined(__x86_64__)
    {Kernel::kSse41, &HasSse41, &internal::Sse41Kernel, &internal::Sse41Kernel, nullptr,
     &internal::Sse41NarrowKernel, &internal::WriteOutputSse41},
    {Kernel::kAvx2, &HasAvx2, &internal::Avx2Kernel, &internal::Avx2PrepackedKernel,
     &internal::Avx2NibbleKernel, &internal::Avx2NarrowKernel, &internal::WriteOutputAvx2,
     &internal::Avx2BitSerialKernel, &Always<&internal::Avx2Int4PairsKernel>},
    // vpdpbusd multiplies full 8-bit values at the rate int16 narrow kernels would: the only
    // narrow ones are bit-serial.
    {Kernel::kAvx512Vnni, &HasAvx512Vnni, &internal::Avx512VnniKernel, &internal::Avx512VnniKernel,
     nullptr, nullptr, &internal::WriteOutputAvx512, &Avx512BitSerialIfVpopcntdq,
     &Always<&internal::Avx512VnniUint4PairsKernel>},
    // Prepacked weights multiply in the AVX-512 VNNI rhs layout, which the tile loads read, so
    // that kernel takes them for an lhs of one or two rows, where 32-row tiles would idle.
    {Kernel::kAmx, &HasAmx, &internal::AmxKernel, &internal::AmxKernel, &internal::Avx512VnniKernel,
     nullptr, &internal::WriteOutputAvx512, &Avx512BitSerialIfVpopcntdq,
     &Always<&internal::Avx512VnniUint4PairsKernel>},
#endif
#if defined(__aarch64__)
    {Kernel::kNeon, &HasNeon, &BestNeonKernel, &BestNeonKernel, nullptr,
     &NeonNarrowKernelWithoutDot, &internal::WriteOutputNeon, &internal::NeonBitSerialKernel,
     &NeonUint4WeightsKernel},
#endif
};

const KernelEntry* FindEntry(Kernel kernel) {
  for (const KernelEntry& entry : kKernels) {
    if (entry.kernel == kernel) return &entry;
  }
  return nullptr;
}

bool IsAvailable(Kernel kernel) {
  const KernelEntry* entry = FindEntry(kernel);
  return entry != nullptr && entry->cpu_supports();
}

std::string AvailableNames() {
  std::string names;
  for (Kernel kernel : AvailableKernels()) {
    names += names.empty() ? "" : ", ";
    names += KernelName(kernel);
  }
  return names;
}

void CheckAvailable(const std::string& argument, Kernel kernel) {
  if (!IsAvailable(kernel)) {
    throw Error(argument,
                std::string("kernel '") + KernelName(kernel) +
                    "' is not available on this CPU and build; available: " + AvailableNames());
  }
}

Kernel KernelFromEnvironment(const char* value) {
  for (Kernel kernel : {Kernel::kReference, Kernel::kSse41, Kernel::kAvx2, Kernel::kAvx512Vnni,
                        Kernel::kAmx, Kernel::kNeon}) {
    if (std::strcmp(value, KernelName(kernel)) == 0) {
      CheckAvailable("LOWBIT_KERNEL", kernel);
      return kernel;
    }
  }
  throw Error("LOWBIT_KERNEL",
              "must be one of: reference, sse41, avx2, avx512vnni, amx, neon; got '" +
                  std::string(value) + "'");
}

}  // namespace

std::vector<Kernel> AvailableKernels() {
  std::vector<Kernel> kernels;
  for (const KernelEntry& entry : kKernels) {
    if (entry.cpu_supports()) kernels.push_back(entry.kernel);
  }
  return kernels;
}

void Context::set_kernel(Kernel kernel) {
  if (kernel != Kernel::kAuto) CheckAvailable("kernel", kernel);
  const internal::ContextUse use(*this);
  state_->kernel = kernel;
}

Kernel Context::ResolvedKernel() const {
  const Kernel kernel = state_->kernel;
  if (kernel != Kernel::kAuto) return kernel;
  const char* forced = std::getenv("LOWBIT_KERNEL");
  if (forced != nullptr && forced[0] != '\0') return KernelFromEnvironment(forced);
  // Once per process: every GEMM asks, and the list is a heap allocation.
  static const Kernel best = AvailableKernels().back();
  return best;
}

namespace internal {

OutputWriter OutputWriterFor(Kernel kernel) {
  const KernelEntry* entry = FindEntry(kernel);
  return entry == nullptr ? nullptr : entry->output_writer;
}

namespace {
const KernelEntry& ResolvedEntry(Kernel kernel) {
  const KernelEntry* entry = FindEntry(kernel);
  if (entry == nullptr) throw std::logic_error("kernel implementations need a resolved kernel");
  return *entry;
}
}  // namespace

namespace {
// Whether the bit-serial kernel beats the kernel's other implementation for these bit depths when
// each packed value is used `uses` times. Each plane pair costs an AND and a popcount, so the pairs
// decide the products' speed; but a GEMM packs both operands into bit planes on every call, which
// pays back only where each packed value takes part in enough products, while the 8-bit kernels
// read a short lhs's rhs where it lies (the direct product). Measured with declared operands on one
// thread (gemm_bench's <kernel>_declared_L1R1, _declared_L1R2, _prepacked_declared_L1R1, ..., on
// the AMX Xeon of doc/performance.md), against the same ISA's 8-bit GEMM:
// - AVX-512 VNNI, 1 x 1 bits: 0.11x at 1 x 1024 x 1024, 0.39x at 8 rows, 1.1x to 1.6x at 64 (in a
//   run with 16 and 32 rows added, 0.69x and 1.17x), 1.2x to 2.3x from 256^3; 1 x 2 bits: 0.73x at
//   64 rows, 1.0x at 256^3, 1.1x to 1.3x above.
// - AMX: the tile's 16384 products an instruction against popcounts of 512 bits. 1 x 1 bits:
//   0.1x to 0.8x up to 64 rows; 0.6x to 1.2x at 256^3, 0.75x to 1.3x at 512^3 and 0.9x to 1.5x at
//   1024^3 over runs (the tile's speed swings on that host); 1 x 2 bits 0.35x to 0.72x.
// - Prepacked weights, packed once (kUnboundedUses): 1 x 1 bits 1.5x to 4.1x the 8-bit prepacked
//   GEMM from 1 to 1024 rows with AVX-512 VNNI or AMX (0.98x at 256^3 with AMX), 1 x 2 bits 1.2x
//   to 3.0x with AVX-512 VNNI; with AMX 3.0x at one row, 1.2x at 8 and 0.65x to 0.8x from 256^3,
//   kept for the short lhs that prepacked weights usually meet.
// - AVX-512 VNNI, 2 x 2 bits (four plane pairs): 0.77x at 1024^3 on the Intel Xeon (Emerald
//   Rapids), where popcounts make 2.5 times the products of vpdpbusd; 1.10x to 1.16x at 1024^3
//   and 0.95x to 0.97x at 256^3 on a Zen 4 EPYC, where they make 5.3 times (vpdpbusd runs there
//   in two 256-bit halves). Never by rule: timed (BitSerialIsTimed).
// - AVX2, 1 x 1 bits: 1.2x at one row to 3.8x at 1024^3; against the AVX2 int16 narrow kernel,
//   1 x 2 bits 0.98x and 2 x 2 bits 0.54x at 1024^3.
// - NEON, not measured on hardware (qemu only): 1 x 1 bits, whose AND and vcnt make 128 products
//   where SDOT makes 16.
bool BitSerialPays(Kernel kernel, int lhs_bits, int rhs_bits, int uses) {
  const bool one_bit = lhs_bits == 1 && rhs_bits == 1;
  const bool one_and_two_bits = lhs_bits + rhs_bits == 3;
  switch (kernel) {
    case Kernel::kAvx512Vnni:
      return (one_bit && uses >= 32) || (one_and_two_bits && uses >= 256);
    case Kernel::kAmx:
      return (one_bit && uses >= 1024) || (one_and_two_bits && uses == kUnboundedUses);
    default:
      return one_bit;
  }
}

// Where BitSerialPays is a close call, one whose answer a host with other instruction costs, or
// this host under other load, may turn around: the ratios above within about 0.7x to 1.4x, and
// the AMX ones, which swing with the AMX unit's load (0.6x to 1.2x at 256^3, 0.75x to 1.3x at
// 512^3, 0.74x to 1.5x at 1024^3 over runs). There the driver times the two (MeasuredChoice).
// Prepacked weights are packed for one of the two and stay with it.
bool BitSerialIsTimed(Kernel kernel, int lhs_bits, int rhs_bits, int uses) {
  if (uses == kUnboundedUses) return false;
  const bool one_bit = lhs_bits == 1 && rhs_bits == 1;
  const bool one_and_two_bits = lhs_bits + rhs_bits == 3;
  const bool two_bits = lhs_bits == 2 && rhs_bits == 2;
  switch (kernel) {
    case Kernel::kAvx512Vnni:
      return (one_bit && uses >= 16 && uses < 256) ||
             ((one_and_two_bits || two_bits) && uses >= 64);
    case Kernel::kAmx:
      return one_bit && uses >= 256;
    case Kernel::kAvx2:
      return one_and_two_bits && uses >= 256;
    default:
      return false;
  }
}

const KernelImplementation* NarrowImplementation(const KernelEntry& entry, int lhs_bits,
                                                 int rhs_bits, bool bit_serial_pays) {
  if (lhs_bits == 8 && rhs_bits == 8) return nullptr;
  if (entry.bit_serial_implementation != nullptr && bit_serial_pays) {
    const KernelImplementation* bit_serial = entry.bit_serial_implementation(lhs_bits, rhs_bits);
    if (bit_serial != nullptr) return bit_serial;
  }
  if (entry.narrow_implementation == nullptr) return nullptr;
  return entry.narrow_implementation(lhs_bits, rhs_bits);
}
}  // namespace

const KernelImplementation* GetBitSerialKernelImplementation(Kernel kernel, int lhs_bits,
                                                             int rhs_bits) {
  const KernelEntry& entry = ResolvedEntry(kernel);
  if (entry.bit_serial_implementation == nullptr) return nullptr;
  return entry.bit_serial_implementation(lhs_bits, rhs_bits);
}

const KernelImplementation& GetKernelImplementation(Kernel kernel, int lhs_bits, int rhs_bits,
                                                    int uses) {
  const KernelEntry& entry = ResolvedEntry(kernel);
  const KernelImplementation* narrow = NarrowImplementation(
      entry, lhs_bits, rhs_bits, BitSerialPays(kernel, lhs_bits, rhs_bits, uses));
  return narrow != nullptr ? *narrow : entry.implementation();
}

const KernelImplementation* GetTimedAlternativeImplementation(Kernel kernel, int lhs_bits,
                                                              int rhs_bits, int uses) {
  if (!BitSerialIsTimed(kernel, lhs_bits, rhs_bits, uses) ||
      GetBitSerialKernelImplementation(kernel, lhs_bits, rhs_bits) == nullptr) {
    return nullptr;
  }
  const KernelEntry& entry = ResolvedEntry(kernel);
  const KernelImplementation* narrow = NarrowImplementation(
      entry, lhs_bits, rhs_bits, !BitSerialPays(kernel, lhs_bits, rhs_bits, uses));
  return narrow != nullptr ? narrow : &entry.implementation();
}

const KernelImplementation& GetPrepackedRhsKernelImplementation(Kernel kernel, int lhs_bits,
                                                                int rhs_bits, int lhs_rows) {
  const KernelEntry& entry = ResolvedEntry(kernel);
  if (BitSerialPays(kernel, lhs_bits, rhs_bits, kUnboundedUses)) {
    const KernelImplementation* bit_serial =
        GetBitSerialKernelImplementation(kernel, lhs_bits, rhs_bits);
    if (bit_serial != nullptr) return *bit_serial;
  }
  if (rhs_bits <= 4 && entry.uint4_weights_implementation != nullptr) {
    const KernelImplementation* two_to_a_byte = entry.uint4_weights_implementation();
    if (two_to_a_byte != nullptr) return *two_to_a_byte;
  }
  const KernelImplementation* narrow =
      NarrowImplementation(entry, lhs_bits, rhs_bits, /*bit_serial_pays=*/false);
  if (narrow != nullptr) return *narrow;
  // Interleaved in one process on 1024x1024 prepacked weights, the nibble tile was 10% faster
  // than the quad tile for 2 lhs rows, and 4 to 10% slower for 3, 4, 5 and 8.
  constexpr int kMatrixVectorRows = 2;
  if (lhs_rows >= 1 && lhs_rows <= kMatrixVectorRows &&
      entry.matrix_vector_implementation != nullptr) {
    return entry.matrix_vector_implementation();
  }
  return entry.prepacked_rhs_implementation();
}

}  // namespace internal
}  // namespace lowbit
