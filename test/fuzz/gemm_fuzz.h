// The engine shared by lowbit's libFuzzer harnesses (test/fuzz/*_fuzzer.cc): one input becomes
// one GEMM call, run on every kernel and thread count, which must equal a 64-bit reference or
// raise lowbit::Error with the result untouched.
#ifndef LOWBIT_TEST_FUZZ_GEMM_FUZZ_H_
#define LOWBIT_TEST_FUZZ_GEMM_FUZZ_H_

#include <cstddef>
#include <cstdint>

namespace lowbit {
namespace fuzz {

// What an input decodes to: kGemm, 8-bit GEMMs (every entry point, pipeline, storage form and
// misuse); kBitDepth, GEMMs with BitDepthParams (both modes, every rounding, prepacked with
// matching or mismatching params, and their misuse).
enum class Harness { kGemm, kBitDepth };

// Runs one input; aborts with a message on stderr (so that libFuzzer keeps it as a crash) when
// a call's outcome is wrong.
void RunInput(const std::uint8_t* data, std::size_t size, Harness harness);

// Writes the seed corpus of `harness` into `directory` (one file per seed); see
// gemm_fuzz.cc, "Seeds".
void WriteSeeds(Harness harness, const char* directory);

}  // namespace fuzz
}  // namespace lowbit

#endif  // LOWBIT_TEST_FUZZ_GEMM_FUZZ_H_
