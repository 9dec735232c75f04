// libFuzzer harness over lowbit's 8-bit GEMM entry points: every shape, storage form, offset
// kind, output pipeline, prepacked rhs, kernel and thread count, and every misuse the library
// must reject (test/fuzz/gemm_fuzz.cc has the decoding and the checks).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "test/fuzz/gemm_fuzz.h"

// LOWBIT_FUZZ_WRITE_SEEDS=<directory> writes this harness's seed corpus there and exits.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* directory = std::getenv("LOWBIT_FUZZ_WRITE_SEEDS")) {
    lowbit::fuzz::WriteSeeds(lowbit::fuzz::Harness::kGemm, directory);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  lowbit::fuzz::RunInput(data, size, lowbit::fuzz::Harness::kGemm);
  return 0;
}
