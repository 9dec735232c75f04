"""Each output stage through lowbit.gemm against a numpy model of its formula
(doc/output-pipeline.md), on every kernel: the vectorized writers and the scalar path."""
import unittest

import numpy as np

import lowbit
import reference

KERNELS = lowbit.available_kernels()
ROWS, COLS = 13, 11


class StagesTest(unittest.TestCase):
    def setUp(self):
        rng = np.random.default_rng(99)
        self.rng = rng
        # Accumulators spread over most of int32: a depth-3 GEMM with large per-row offsets.
        self.wide = (rng.integers(0, 256, (ROWS, 3)).astype(np.uint8),
                     rng.integers(0, 256, (3, COLS)).astype(np.uint8),
                     rng.integers(-(2**21), 2**21, ROWS))
        # Accumulators of an ordinary 8-bit layer.
        self.narrow = (rng.integers(0, 256, (ROWS, 40)).astype(np.uint8),
                       rng.integers(-128, 128, (40, COLS)).astype(np.int8), -128)

    def accumulators(self, operands):
        lhs, rhs, lhs_offset = operands
        return reference.gemm(lhs, rhs, lhs_offset, 0)

    def check(self, pipeline, model, dtype, operands=None):
        """The pipeline on every kernel, one and two threads, against model(acc)."""
        operands = operands or self.wide
        lhs, rhs, lhs_offset = operands
        expected = model(self.accumulators(operands))
        for kernel in KERNELS:
            for threads in (1, 2):
                with self.subTest(kernel=kernel, threads=threads):
                    result = lowbit.gemm(lhs, rhs, lhs_offset=lhs_offset, pipeline=pipeline,
                                         kernel=kernel, threads=threads)
                    self.assertEqual(result.dtype, dtype)
                    np.testing.assert_array_equal(result, expected)

    def test_bias_addition(self):
        for axis, size in (("row", ROWS), ("col", COLS)):
            bias = self.rng.integers(-(2**31), 2**31, size)
            shape = (-1, 1) if axis == "row" else (1, -1)
            self.check([lowbit.BiasAddition(bias, axis)],
                       lambda acc: reference.wrap32(acc + bias.reshape(shape)), np.int32)

    def test_quantize_down_by_fixed_point(self):
        for multiplier, shift, offset in ((1 << 30, 0, 0), (1234567891, 7, 3), (2**31 - 1, 31, -9),
                                          (0, 5, 17)):
            with self.subTest(multiplier=multiplier, shift=shift):
                stage = lowbit.QuantizeDownInt32ByFixedPoint(multiplier, shift, offset)
                self.check([stage], lambda acc: reference.scale_by_fixed_point(
                    acc, multiplier, -shift, offset), np.int32)

    def test_quantize_down_by_fixed_point_per_channel(self):
        for axis, size in (("row", ROWS), ("col", COLS)):
            multipliers = self.rng.integers(0, 2**31, size)
            shifts = self.rng.integers(0, 32, size)
            shape = (-1, 1) if axis == "row" else (1, -1)
            stage = lowbit.QuantizeDownInt32ByFixedPointPerChannel(multipliers, shifts, -4, axis)
            self.check([stage], lambda acc: reference.scale_by_fixed_point(
                acc, multipliers.reshape(shape), -shifts.reshape(shape), -4), np.int32)

    def test_scale_by_fixed_point_and_exponent(self):
        for exponent in (-31, -12, -1, 0, 1, 5, 30):
            with self.subTest(exponent=exponent):
                stage = lowbit.ScaleInt32ByFixedPointAndExponent(1518500250, exponent, 11)
                self.check([stage], lambda acc: reference.scale_by_fixed_point(
                    acc, 1518500250, exponent, 11), np.int32)

    def test_scale_by_fixed_point_and_exponent_per_channel(self):
        for axis, size in (("row", ROWS), ("col", COLS)):
            multipliers = self.rng.integers(2**30, 2**31, size)
            exponents = self.rng.integers(-31, 31, size)
            shape = (-1, 1) if axis == "row" else (1, -1)
            stage = lowbit.ScaleInt32ByFixedPointAndExponentPerChannel(multipliers, exponents, 2,
                                                                       axis)
            self.check([stage], lambda acc: reference.scale_by_fixed_point(
                acc, multipliers.reshape(shape), exponents.reshape(shape), 2), np.int32)

    def test_legacy_uint8_scale(self):
        stage = lowbit.QuantizeDownInt32ToUint8Scale(result_offset=5000, result_mult_int=3,
                                                     result_shift=9)
        self.check([stage, lowbit.SaturatingCastToUint8()], lambda acc: reference.saturate(
            reference.legacy_scale(acc, 5000, 3, 9), np.uint8), np.uint8, self.narrow)
        self.check([stage], lambda acc: reference.legacy_scale(acc, 5000, 3, 9), np.int32)

    def test_legacy_uint8_scale_per_channel(self):
        offsets = self.rng.integers(-1000, 1000, COLS)
        multipliers = self.rng.integers(0, 50, COLS)
        stage = lowbit.QuantizeDownInt32ToUint8ScalePerChannel(offsets, multipliers, 12, "col")
        self.check([stage], lambda acc: reference.legacy_scale(
            acc, offsets.reshape(1, -1), multipliers.reshape(1, -1), 12), np.int32)

    def test_shift_by_pot(self):
        for exponent in (-31, -20, -3, 0, 2, 31):
            with self.subTest(exponent=exponent):
                self.check([lowbit.ShiftByPOT(exponent)],
                           lambda acc: reference.shift_by_pot(acc, exponent), np.int32)

    def test_shift_by_pot_stochastic(self):
        for exponent, seed in ((-1, 0), (-9, 12345), (-31, 2**32 - 1)):
            with self.subTest(exponent=exponent, seed=seed):
                stage = lowbit.ShiftByPOT(exponent, rounding="stochastic", seed=seed)
                self.check([stage], lambda acc: reference.shift_by_pot(
                    acc, exponent, "stochastic", seed), np.int32)

    def test_clamp(self):
        self.check([lowbit.Clamp(-(10**8), 3 * 10**8)],
                   lambda acc: np.clip(acc, -(10**8), 3 * 10**8), np.int32)

    def test_casts_set_the_result_dtype(self):
        for stage, dtype in ((lowbit.SaturatingCastToUint8(), np.uint8),
                             (lowbit.SaturatingCastToInt8(), np.int8),
                             (lowbit.SaturatingCastToInt16(), np.int16)):
            with self.subTest(dtype=dtype.__name__):
                self.check([lowbit.ShiftByPOT(-20), stage],
                           lambda acc: reference.saturate(reference.shift_by_pot(acc, -20), dtype),
                           dtype)
        self.check([lowbit.TruncatingCastToUint8()], lambda acc: acc & 0xFF, np.uint8)

    def test_a_cast_before_the_end_saturates_without_narrowing(self):
        self.check([lowbit.ShiftByPOT(-22), lowbit.SaturatingCastToInt8(), lowbit.ShiftByPOT(4)],
                   lambda acc: reference.saturate(reference.shift_by_pot(acc, -22), np.int8) * 16,
                   np.int32)

    def test_tanh_and_logistic_are_within_their_documented_error(self):
        zero, amplitude = 3000, 1 << 12
        lhs, rhs, lhs_offset = self.narrow
        acc = self.accumulators(self.narrow).astype(np.float64)
        real = (acc - zero) / amplitude
        cases = ((lowbit.Tanh(zero, amplitude), zero + amplitude * np.tanh(real), 2),
                 (lowbit.Tanh(zero, amplitude, "accurate"), zero + amplitude * np.tanh(real), 1.5),
                 (lowbit.Logistic(zero, amplitude), zero + amplitude / (1 + np.exp(-real)), 1.5))
        for stage, exact, tolerance in cases:
            for kernel in KERNELS:
                with self.subTest(stage=repr(stage), kernel=kernel):
                    result = lowbit.gemm(lhs, rhs, lhs_offset=lhs_offset, pipeline=[stage],
                                         kernel=kernel)
                    self.assertLessEqual(np.abs(result - exact).max(), tolerance)

    def test_quantized_add_stage_is_the_elementwise_add_of_the_stored_result(self):
        lhs, rhs, lhs_offset = self.narrow
        residual = self.rng.integers(-128, 128, (ROWS, COLS)).astype(np.int8)
        plan = lowbit.make_quantized_add_plan(
            lowbit.QuantizedAddInput(lowbit.QuantizationParams(0.05, 10)),
            lowbit.QuantizedAddInput(lowbit.QuantizationParams(0.02, -3),
                                     lowbit.QuantizedType.int8()),
            lowbit.QuantizationParams(0.07, 128))
        requantize = lowbit.QuantizeDownInt32ByFixedPoint(1 << 30, 12, 10)
        stored = lowbit.gemm(lhs, rhs, lhs_offset=lhs_offset,
                             pipeline=[requantize, lowbit.SaturatingCastToUint8()])
        expected = lowbit.quantized_add(plan, stored, residual)
        for kernel in KERNELS:
            with self.subTest(kernel=kernel):
                fused = lowbit.gemm(lhs, rhs, lhs_offset=lhs_offset, kernel=kernel, pipeline=[
                    requantize, lowbit.QuantizedAdd(plan, np.asfortranarray(residual)),
                    lowbit.SaturatingCastToUint8()])
                np.testing.assert_array_equal(fused, expected)

    def test_a_long_pipeline_composes_left_to_right(self):
        bias = self.rng.integers(-5000, 5000, COLS)
        pipeline = [lowbit.BiasAddition(bias, "col"), lowbit.ShiftByPOT(-2),
                    lowbit.ScaleInt32ByFixedPointAndExponent(1 << 30, -3, 7), lowbit.Clamp(-90, 90),
                    lowbit.ShiftByPOT(1), lowbit.SaturatingCastToInt8()]

        def model(acc):
            value = reference.shift_by_pot(reference.wrap32(acc + bias.reshape(1, -1)), -2)
            value = np.clip(reference.scale_by_fixed_point(value, 1 << 30, -3, 7), -90, 90)
            return reference.saturate(reference.shift_by_pot(value, 1), np.int8)

        self.check(pipeline, model, np.int8, self.narrow)
        # More stages than the compiled program holds run on the scalar path, with the same bits.
        self.check([lowbit.Clamp(-(2**31), 2**31 - 1)] * 14 + pipeline, model, np.int8, self.narrow)

    def test_stages_show_their_arguments(self):
        stage = lowbit.ScaleInt32ByFixedPointAndExponentPerChannel([1 << 30, 1 << 29], [-1, 2],
                                                                   5, "row")
        self.assertEqual(stage.result_offset_after_exponent, 5)
        self.assertEqual(stage.axis, "row")
        self.assertEqual(stage.result_exponent.dtype, np.int32)
        self.assertFalse(stage.result_exponent.flags.writeable)
        self.assertEqual(repr(lowbit.Clamp(0, 255)), "Clamp(min=0, max=255)")
        self.assertEqual(repr(lowbit.SaturatingCastToInt8()), "SaturatingCastToInt8()")
        with self.assertRaises(AttributeError):
            lowbit.Clamp(0, 1).maximum

    def test_per_channel_arrays_are_copied_when_the_stage_is_made(self):
        bias = np.arange(ROWS, dtype=np.int32)
        stage = lowbit.BiasAddition(bias, "row")
        bias[:] = 1000
        lhs, rhs, lhs_offset = self.narrow
        result = lowbit.gemm(lhs, rhs, lhs_offset=lhs_offset, pipeline=[stage])
        np.testing.assert_array_equal(
            result, reference.gemm(lhs, rhs, lhs_offset, 0) + np.arange(ROWS).reshape(-1, 1))


if __name__ == "__main__":
    unittest.main()
