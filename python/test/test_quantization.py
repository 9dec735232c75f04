"""The quantization helpers on numpy arrays: params, multipliers, quantize and dequantize, the
quantized add, the quantized GEMM and the fully-connected layer (doc/quantization.md)."""
import unittest

import numpy as np

import lowbit
import reference


def round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


class QuantizationTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(5)

    def test_choose_params(self):
        params = lowbit.choose_quantization_params(-1.0, 2.0)
        self.assertAlmostEqual(params.scale, 3 / 255)
        self.assertEqual(params.zero_point, 85)
        symmetric = lowbit.choose_quantization_params(-2.0, 1.0, lowbit.QuantizedType.int8(),
                                                      "symmetric")
        self.assertAlmostEqual(symmetric.scale, 2 / 127)
        self.assertEqual(symmetric.zero_point, 0)
        narrow = lowbit.choose_quantization_params(0.0, 1.5, lowbit.QuantizedType.unsigned(4))
        self.assertAlmostEqual(narrow.scale, 0.1)
        self.assertEqual(narrow.zero_point, 0)

    def test_choose_params_per_channel(self):
        low = -self.rng.random(6).astype(np.float32)
        high = self.rng.random(6).astype(np.float32)
        channels = lowbit.choose_quantization_params_per_channel(low, high)
        self.assertEqual(len(channels), 6)
        for channel, (a, b) in zip(channels, zip(low, high)):
            one = lowbit.choose_quantization_params(float(a), float(b), lowbit.QuantizedType.int8(),
                                                    "symmetric")
            self.assertEqual((channel.scale, channel.zero_point), (one.scale, one.zero_point))

    def test_quantize_follows_its_formula_and_keeps_the_shape(self):
        values = (self.rng.standard_normal((3, 4, 5)) * 2).astype(np.float32)
        for params, quantized_type, dtype in (
                (lowbit.QuantizationParams(0.02, 130), lowbit.QuantizedType.uint8(), np.uint8),
                (lowbit.QuantizationParams(0.013, -5), lowbit.QuantizedType.int8(), np.int8),
                (lowbit.QuantizationParams(0.3, 7), lowbit.QuantizedType.unsigned(4), np.uint8)):
            with self.subTest(type=repr(quantized_type)):
                quantized = lowbit.quantize(values, params, quantized_type)
                self.assertEqual((quantized.dtype, quantized.shape), (dtype, values.shape))
                expected = np.clip(params.zero_point + round_half_away(
                    values.astype(np.float64) / params.scale), quantized_type.min,
                    quantized_type.max)
                np.testing.assert_array_equal(quantized, expected)
                np.testing.assert_array_equal(
                    lowbit.dequantize(quantized, params),
                    (params.scale * (quantized.astype(np.float64) - params.zero_point))
                    .astype(np.float32))

    def test_round_trip_is_within_half_a_step(self):
        values = self.rng.uniform(-3, 5, (50, 7)).astype(np.float32)
        params = lowbit.choose_quantization_params(float(values.min()), float(values.max()))
        restored = lowbit.dequantize(lowbit.quantize(values, params), params)
        self.assertEqual(restored.dtype, np.float32)
        self.assertLessEqual(np.abs(restored - values).max(), params.scale / 2 * (1 + 1e-6))
        # A Fortran-ordered and a sliced input quantize as their values do.
        np.testing.assert_array_equal(lowbit.quantize(np.asfortranarray(values), params),
                                      lowbit.quantize(values, params))
        np.testing.assert_array_equal(lowbit.quantize(values[:, ::2], params),
                                      lowbit.quantize(values, params)[:, ::2])

    def test_quantize_multiplier(self):
        for real in (1e-9, 0.0003, 0.3, 0.5, 0.999, 1.0, 3.7, 1e8):
            with self.subTest(real=real):
                fixed = lowbit.quantize_multiplier(real)
                self.assertTrue(2**30 <= fixed.multiplier < 2**31)
                self.assertLessEqual(abs(fixed.multiplier * 2.0**(fixed.exponent - 31) - real),
                                     real * 2**-31)
                if real < 0.999:
                    smaller = lowbit.quantize_multiplier_smaller_than_one(real)
                    self.assertEqual((smaller.multiplier, smaller.right_shift),
                                     (fixed.multiplier, -fixed.exponent))
        reals = [0.25, 1e-4, 17.0]
        multipliers, exponents = lowbit.quantize_multipliers(reals)
        self.assertEqual((multipliers.dtype, exponents.dtype), (np.int32, np.int32))
        for real, multiplier, exponent in zip(reals, multipliers, exponents):
            fixed = lowbit.quantize_multiplier(real)
            self.assertEqual((multiplier, exponent), (fixed.multiplier, fixed.exponent))

    def test_quantized_add_is_within_one_of_the_real_sum(self):
        lhs_params = lowbit.QuantizationParams(0.05, 100)
        rhs_params = [lowbit.QuantizationParams(0.01 * (c + 1), c - 3) for c in range(6)]
        output = lowbit.QuantizationParams(0.08, -10)
        plan = lowbit.make_quantized_add_plan(
            lowbit.QuantizedAddInput(lhs_params),
            lowbit.QuantizedAddInput(rhs_params, lowbit.QuantizedType.int8(), "col"), output,
            lowbit.QuantizedType.int8())
        self.assertEqual((plan.output_min, plan.output_max), (-128, 127))
        lhs = self.rng.integers(0, 256, (9, 6)).astype(np.uint8)
        rhs = self.rng.integers(-128, 128, (9, 6)).astype(np.int8)
        result = lowbit.quantized_add(plan, lhs, rhs)
        self.assertEqual(result.dtype, np.int8)
        real = (lhs_params.scale * (lhs.astype(np.float64) - lhs_params.zero_point)
                + np.array([p.scale for p in rhs_params])
                * (rhs.astype(np.float64) - np.array([p.zero_point for p in rhs_params])))
        exact = np.clip(round_half_away(real / output.scale) + output.zero_point, -128, 127)
        self.assertLessEqual(np.abs(result - exact).max(), 1)

    def test_quantized_add_flat_and_clamped(self):
        params = lowbit.QuantizationParams(0.1, 128)
        plan = lowbit.make_quantized_add_plan(lowbit.QuantizedAddInput(params),
                                              lowbit.QuantizedAddInput(params), params,
                                              output_min=128)
        lhs = self.rng.integers(0, 256, 100).astype(np.uint8)
        rhs = self.rng.integers(0, 256, 100).astype(np.uint8)
        result = lowbit.quantized_add(plan, lhs, rhs)
        exact = np.clip(lhs.astype(np.int64) + rhs - 128, 128, 255)
        self.assertLessEqual(np.abs(result - exact).max(), 1)
        self.assertGreaterEqual(result.min(), 128)

    def test_quantized_gemm_is_gemm_through_its_pipeline(self):
        lhs = self.rng.integers(0, 256, (10, 33)).astype(np.uint8)
        rhs = np.asfortranarray(self.rng.integers(-128, 128, (33, 8)).astype(np.int8))
        lhs_params = lowbit.QuantizationParams(0.02, 120)
        rhs_params = lowbit.QuantizationParams(0.01, 3)
        result_params = lowbit.QuantizationParams(0.1, -20)
        for dtype, quantized_type in ((np.uint8, lowbit.QuantizedType.uint8()),
                                      (np.int8, lowbit.QuantizedType.int8())):
            with self.subTest(dtype=dtype.__name__):
                pipeline = lowbit.make_quantized_gemm_pipeline(
                    lhs_params, rhs_params,
                    lowbit.QuantizationParams(0.1, 108 if dtype == np.uint8 else -20),
                    quantized_type, "relu")
                self.assertEqual((pipeline.lhs_offset, pipeline.rhs_offset), (-120, -3))
                result_params = pipeline.result
                result = lowbit.quantized_gemm(lhs, rhs, lhs_params=lhs_params,
                                               rhs_params=rhs_params, result_params=result_params,
                                               result_dtype=dtype, activation="relu")
                self.assertEqual(result.dtype, dtype)
                through_gemm = lowbit.gemm(lhs, rhs, lhs_offset=pipeline.lhs_offset,
                                           rhs_offset=pipeline.rhs_offset,
                                           pipeline=pipeline.stages(dtype))
                np.testing.assert_array_equal(result, through_gemm)
                real = (lhs_params.scale * reference.gemm(lhs, rhs, -120, -3) * rhs_params.scale)
                exact = np.clip(round_half_away(np.maximum(real, 0) / result_params.scale)
                                + result_params.zero_point, np.iinfo(dtype).min,
                                np.iinfo(dtype).max)
                self.assertLessEqual(np.abs(result - exact).max(), 1)

    def test_fully_connected_layer(self):
        weights = self.rng.standard_normal((5, 12)).astype(np.float32)
        bias = self.rng.standard_normal(5).astype(np.float32)
        inputs = self.rng.uniform(0, 2, (7, 12)).astype(np.float32)
        input_params = lowbit.choose_quantization_params(0.0, 2.0)
        real = inputs @ weights.T + bias
        output_params = lowbit.choose_quantization_params(float(real.min()), float(real.max()))
        layer = lowbit.QuantizedFullyConnected(weights, bias, input_params=input_params,
                                               output_params=output_params)
        self.assertEqual((layer.inputs, layer.outputs), (12, 5))
        self.assertEqual(layer.quantized_weights.shape, (5, 12))
        output = layer.run(lowbit.quantize(inputs, input_params))
        self.assertEqual((output.dtype, output.shape), (np.uint8, (7, 5)))
        error = np.abs(lowbit.dequantize(output, output_params) - real)
        self.assertLess(error.max(), 4 * output_params.scale)

        again = lowbit.QuantizedFullyConnected.from_quantized(
            layer.quantized_weights, [p.scale for p in layer.weight_params], layer.bias,
            input_params=input_params, output_params=output_params, context=layer.context)
        np.testing.assert_array_equal(again.run(lowbit.quantize(inputs, input_params)), output)

    def test_types_and_params_show_their_fields(self):
        self.assertEqual(repr(lowbit.QuantizedType.signed(4)),
                         "QuantizedType(is_signed=True, bits=4)")
        self.assertEqual((lowbit.QuantizedType.signed(4).min, lowbit.QuantizedType.signed(4).max),
                         (-8, 7))
        self.assertEqual(repr(lowbit.QuantizationParams(0.5, 3)),
                         "QuantizationParams(scale=0.5, zero_point=3)")


if __name__ == "__main__":
    unittest.main()
