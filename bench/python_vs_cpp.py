#!/usr/bin/env python3
"""Times one GEMM case through the Python module and through C++ (gemm_repeat, gemm_bench's
lowbit case: uint8 512^3, row-major lhs, column-major rhs and result, QuantizeDown and a uint8
cast, one thread) and prints the ratio, for doc/python.md. Needs gemm_repeat and the module in
build/release (scripts/bench builds the one, scripts/demo the other):
    cmake --build build/release --target gemm_repeat lowbit_python
    PYTHONPATH=build/release/python python3 bench/python_vs_cpp.py [KERNEL [SIZE [ITERATIONS]]]"""
import pathlib
import subprocess
import sys
import time

import numpy as np

import lowbit

REPEAT = pathlib.Path(__file__).resolve().parent.parent / "build/release/bench/gemm_repeat"


def cpp_seconds_per_gemm(kernel, size, iterations):
    """gemm_repeat's time for `iterations` GEMMs less its time for one (start-up and set-up)."""
    def run(count):
        start = time.perf_counter()
        subprocess.run([str(REPEAT), kernel, str(size), str(size), str(size), str(count)],
                       check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - start
    return min((run(iterations + 1) - run(1)) / iterations for _ in range(3))


def python_seconds_per_gemm(kernel, size, iterations):
    rng = np.random.default_rng(1)
    lhs = rng.integers(0, 256, (size, size)).astype(np.uint8)
    rhs = np.asfortranarray(rng.integers(0, 256, (size, size)).astype(np.uint8))
    out = np.zeros((size, size), np.uint8, order="F")
    pipeline = [lowbit.QuantizeDownInt32ByFixedPoint(1 << 30, 15, 128),
                lowbit.SaturatingCastToUint8()]
    context = lowbit.Context(kernel=kernel)

    def run(count):
        start = time.perf_counter()
        for _ in range(count):
            lowbit.gemm(lhs, rhs, lhs_offset=-128, rhs_offset=-128, pipeline=pipeline,
                        context=context, out=out)
        return time.perf_counter() - start
    run(1)
    return min(run(iterations) / iterations for _ in range(3))


def main(kernel=None, size="512", iterations="200"):
    kernel = kernel or lowbit.Context().resolved_kernel
    size, iterations = int(size), int(iterations)
    cpp = cpp_seconds_per_gemm(kernel, size, iterations)
    python = python_seconds_per_gemm(kernel, size, iterations)
    gops = 2.0 * size**3 / 1e9
    print(f"{size}^3 uint8, kernel {kernel}, 1 thread, best of 3 runs of {iterations} GEMMs")
    print(f"C++ (gemm_repeat): {cpp * 1e6:9.1f} us per GEMM, {gops / cpp:6.1f} GOPS")
    print(f"Python (lowbit):   {python * 1e6:9.1f} us per GEMM, {gops / python:6.1f} GOPS")
    print(f"Python / C++ time: {python / cpp:.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
