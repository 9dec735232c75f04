// libFuzzer harness over lowbit's GEMMs with narrow operands (BitDepthParams): both modes, every
// rounding and bit-depth pair, rhs prepacked with the same or other params, and their misuse,
// against the 64-bit definition of doc/less-than-8-bit.md (test/fuzz/gemm_fuzz.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "test/fuzz/gemm_fuzz.h"

// LOWBIT_FUZZ_WRITE_SEEDS=<directory> writes this harness's seed corpus there and exits.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* directory = std::getenv("LOWBIT_FUZZ_WRITE_SEEDS")) {
    lowbit::fuzz::WriteSeeds(lowbit::fuzz::Harness::kBitDepth, directory);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  lowbit::fuzz::RunInput(data, size, lowbit::fuzz::Harness::kBitDepth);
  return 0;
}
