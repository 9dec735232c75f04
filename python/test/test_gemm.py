"""lowbit.gemm against an int64 numpy product: shapes, storage orders, operand types, offsets,
kernels, threads, contexts and bit depths."""
import itertools
import threading
import unittest

import numpy as np

import lowbit
import reference

SHAPES = [(1, 1, 1), (1, 7, 1), (3, 1, 5), (2, 3, 2), (5, 13, 7), (17, 31, 13), (31, 64, 29),
          (64, 65, 66), (97, 101, 89), (2, 523, 3)]
KERNELS = lowbit.available_kernels()


def random_operand(rng, rows, cols, dtype, order):
    info = np.iinfo(dtype)
    values = rng.integers(info.min, info.max, size=(rows, cols), endpoint=True).astype(dtype)
    return np.asfortranarray(values) if order == "F" else np.ascontiguousarray(values)


class GemmTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(20261126)

    def check(self, lhs, rhs, lhs_offset=0, rhs_offset=0, **options):
        result = lowbit.gemm(lhs, rhs, lhs_offset=lhs_offset, rhs_offset=rhs_offset, **options)
        self.assertEqual(result.dtype, np.int32)
        self.assertEqual(result.shape, (lhs.shape[0], rhs.shape[1]))
        np.testing.assert_array_equal(result, reference.gemm(lhs, rhs, lhs_offset, rhs_offset))

    def test_shapes_orders_types_and_offsets(self):
        for (rows, depth, cols), lhs_order, rhs_order, lhs_type, rhs_type in itertools.product(
                SHAPES, "CF", "CF", (np.uint8, np.int8), (np.uint8, np.int8)):
            with self.subTest(shape=(rows, depth, cols), orders=lhs_order + rhs_order,
                              types=(lhs_type.__name__, rhs_type.__name__)):
                lhs = random_operand(self.rng, rows, depth, lhs_type, lhs_order)
                rhs = random_operand(self.rng, depth, cols, rhs_type, rhs_order)
                self.check(lhs, rhs)
                self.check(lhs, rhs, int(self.rng.integers(-255, 256)),
                           int(self.rng.integers(-255, 256)))
                self.check(lhs, rhs, self.rng.integers(-255, 256, rows).astype(np.int32),
                           self.rng.integers(-255, 256, cols))
                self.check(lhs, rhs, np.int16(-3), np.array(7))

    def test_every_kernel_and_thread_count(self):
        for kernel, threads, (rows, depth, cols) in itertools.product(KERNELS, (1, 2), SHAPES):
            with self.subTest(kernel=kernel, threads=threads, shape=(rows, depth, cols)):
                lhs = random_operand(self.rng, rows, depth, np.uint8, "C")
                rhs = random_operand(self.rng, depth, cols, np.int8, "F")
                self.check(lhs, rhs, -7, self.rng.integers(-9, 9, cols), kernel=kernel,
                           threads=threads)

    def test_large_case_on_two_threads(self):
        lhs = random_operand(self.rng, 300, 700, np.uint8, "C")
        rhs = random_operand(self.rng, 700, 260, np.uint8, "F")
        self.check(lhs, rhs, -128, -3, threads=2)

    def test_slices_keep_their_parents_stride(self):
        parent = random_operand(self.rng, 20, 30, np.uint8, "C")
        rhs = random_operand(self.rng, 40, 9, np.int8, "F")
        self.check(parent[3:15, 5:25], rhs[10:30, 2:7], 1, -2)
        self.check(parent.T[4:20, 2:9], rhs[:7, :], 3, 4)

    def test_out_is_filled_in_any_layout(self):
        lhs = random_operand(self.rng, 6, 9, np.uint8, "C")
        rhs = random_operand(self.rng, 9, 5, np.int8, "F")
        expected = reference.gemm(lhs, rhs, -3, 1)
        for out in (np.zeros((6, 5), np.int32), np.zeros((6, 5), np.int32, order="F")):
            self.assertIs(lowbit.gemm(lhs, rhs, lhs_offset=-3, rhs_offset=1, out=out), out)
            np.testing.assert_array_equal(out, expected)
        frame = np.zeros((10, 10), np.uint8)
        lowbit.gemm(lhs, rhs, lhs_offset=-3, rhs_offset=1, out=frame[2:8, 3:8],
                    pipeline=[lowbit.TruncatingCastToUint8()])
        np.testing.assert_array_equal(frame[2:8, 3:8], expected & 0xFF)
        frame[2:8, 3:8] = 0
        self.assertFalse(frame.any())

    def test_empty_and_zero_depth(self):
        self.check(np.zeros((0, 5), np.uint8), np.zeros((5, 3), np.uint8))
        result = lowbit.gemm(np.zeros((4, 0), np.uint8), np.zeros((0, 3), np.uint8),
                             pipeline=[lowbit.BiasAddition(np.arange(4), "row")])
        np.testing.assert_array_equal(result, np.repeat(np.arange(4).reshape(4, 1), 3, axis=1))

    def test_context_is_reused_and_settable(self):
        context = lowbit.Context(threads=2, kernel=KERNELS[0])
        self.assertEqual((context.threads, context.kernel), (2, KERNELS[0]))
        self.assertEqual(context.resolved_kernel, KERNELS[0])
        lhs = random_operand(self.rng, 33, 40, np.uint8, "C")
        rhs = random_operand(self.rng, 40, 21, np.uint8, "C")
        for kernel in KERNELS:
            context.kernel = kernel
            context.threads = 1
            self.check(lhs, rhs, -1, -2, context=context)
        self.assertEqual(lowbit.Context().kernel, "auto")
        self.assertIn(lowbit.Context().resolved_kernel, KERNELS)

    def test_python_threads_run_gemms_side_by_side_and_share_a_context(self):
        lhs = random_operand(self.rng, 200, 300, np.uint8, "C")
        rhs = random_operand(self.rng, 300, 150, np.int8, "F")
        expected = reference.gemm(lhs, rhs, -5, 2)
        shared = lowbit.Context(threads=2)
        results = {}

        def run(name, **options):
            results[name] = [lowbit.gemm(lhs, rhs, lhs_offset=-5, rhs_offset=2, **options)
                             for _ in range(5)]

        threads = [threading.Thread(target=run, args=(f"shared{i}",), kwargs={"context": shared})
                   for i in range(2)]
        threads += [threading.Thread(target=run, args=(f"own{i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(len(results), 4)
        for name, outputs in results.items():
            for result in outputs:
                np.testing.assert_array_equal(result, expected, err_msg=name)

    def test_version(self):
        self.assertRegex(lowbit.version(), r"^\d+\.\d+\.\d+$")


class BitDepthTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(7)

    def test_declared_range_is_exact(self):
        for lhs_bits, rhs_bits, kernel in itertools.product((1, 3, 4, 7, 8), (2, 5, 8), KERNELS):
            with self.subTest(lhs_bits=lhs_bits, rhs_bits=rhs_bits, kernel=kernel):
                lhs = self.rng.integers(0, 2**lhs_bits, size=(9, 37)).astype(np.uint8)
                rhs = self.rng.integers(-(2**(rhs_bits - 1)), 2**(rhs_bits - 1),
                                        size=(37, 11)).astype(np.int8)
                params = lowbit.BitDepthParams(lhs_bits, rhs_bits, mode="declared_range")
                result = lowbit.gemm(lhs, rhs, lhs_offset=-3, rhs_offset=2, bit_depth=params,
                                     kernel=kernel)
                np.testing.assert_array_equal(result, reference.gemm(lhs, rhs, -3, 2))

    def test_nearest_requantization_follows_the_documented_formula(self):
        cases = itertools.product((1, 4, 7), (2, 5, 8), (np.uint8, np.int8), KERNELS)
        for lhs_bits, rhs_bits, dtype, kernel in cases:
            with self.subTest(lhs_bits=lhs_bits, rhs_bits=rhs_bits, dtype=dtype.__name__,
                              kernel=kernel):
                info = np.iinfo(dtype)
                lhs = self.rng.integers(info.min, info.max, (13, 45), endpoint=True).astype(dtype)
                rhs = np.asfortranarray(
                    self.rng.integers(info.min, info.max, (45, 6), endpoint=True).astype(dtype))
                lhs_offset = self.rng.integers(-20, 20, 13)
                params = lowbit.BitDepthParams(lhs_bits, rhs_bits, rounding="nearest")
                result = lowbit.gemm(lhs, rhs, lhs_offset=lhs_offset, rhs_offset=-5,
                                     bit_depth=params, kernel=kernel, threads=2)
                expected = reference.narrow_gemm_nearest(lhs, rhs, lhs_offset, -5, lhs_bits,
                                                         rhs_bits)
                np.testing.assert_array_equal(result, expected)

    def test_auto_rounds_to_nearest_below_depth_256(self):
        lhs = self.rng.integers(0, 256, (5, 100)).astype(np.uint8)
        rhs = self.rng.integers(0, 256, (100, 4)).astype(np.uint8)
        result = lowbit.gemm(lhs, rhs, rhs_offset=-128, bit_depth=lowbit.BitDepthParams(4, 4))
        np.testing.assert_array_equal(
            result, reference.narrow_gemm_nearest(lhs, rhs, 0, -128, 4, 4))

    def test_probabilistic_rounding_is_reproducible_and_seeded(self):
        lhs = self.rng.integers(0, 256, (7, 300)).astype(np.uint8)
        rhs = self.rng.integers(0, 256, (300, 5)).astype(np.uint8)
        exact = reference.gemm(lhs, rhs, 0, -128)
        for rounding in ("xorshift", "addmod"):
            with self.subTest(rounding=rounding):
                results = [lowbit.gemm(lhs, rhs, rhs_offset=-128, kernel=kernel, threads=threads,
                                       bit_depth=lowbit.BitDepthParams(5, 6, rounding, seed=3))
                           for kernel in KERNELS for threads in (1, 2)]
                for result in results[1:]:
                    np.testing.assert_array_equal(result, results[0])
                other_seed = lowbit.gemm(lhs, rhs, rhs_offset=-128,
                                         bit_depth=lowbit.BitDepthParams(5, 6, rounding, seed=4))
                self.assertFalse(np.array_equal(other_seed, results[0]))
                # Within a few percent of the 8-bit result's spread.
                self.assertLess(np.abs(results[0] - exact).max(), 0.05 * np.ptp(exact))

    def test_eight_bits_requantized_is_the_exact_gemm(self):
        lhs = self.rng.integers(-128, 128, (6, 50)).astype(np.int8)
        rhs = self.rng.integers(0, 256, (50, 7)).astype(np.uint8)
        for rounding in ("nearest", "xorshift", "addmod", "auto"):
            result = lowbit.gemm(lhs, rhs, lhs_offset=4, rhs_offset=-100,
                                 bit_depth=lowbit.BitDepthParams(8, 8, rounding, seed=9))
            np.testing.assert_array_equal(result, reference.gemm(lhs, rhs, 4, -100))

    def test_params_show_their_fields(self):
        params = lowbit.BitDepthParams(lhs_bits=7, rhs_bits=5, rounding="addmod", seed=42)
        self.assertEqual((params.lhs_bits, params.rhs_bits, params.rounding, params.seed,
                          params.mode), (7, 5, "addmod", 42, "requantize"))
        self.assertEqual(repr(params), "BitDepthParams(lhs_bits=7, rhs_bits=5, rounding='addmod', "
                                       "seed=42, mode='requantize')")


if __name__ == "__main__":
    unittest.main()
