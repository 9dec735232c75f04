// LOWBIT_AVX2_CLONES: a plain loop outside the ISA files, compiled for the baseline and for AVX2
// as well, the clone chosen when the program loads (target_clones): twice the vector width where
// the CPU has AVX2, for loops that run once per value or result.
#ifndef LOWBIT_INTERNAL_DRIVER_AVX2_CLONES_H_
#define LOWBIT_INTERNAL_DRIVER_AVX2_CLONES_H_

// Clang takes no function templates (one clone set per instantiation, by hand). Sanitizer builds
// keep one plain version: they need no speed, and their runtimes start after the loader resolves
// the clones.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__) && \
    !defined(__SANITIZE_THREAD__)
#define LOWBIT_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LOWBIT_AVX2_CLONES
#endif

#endif  // LOWBIT_INTERNAL_DRIVER_AVX2_CLONES_H_
