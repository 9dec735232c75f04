"""Every kind of bad input raises lowbit.Error with lowbit's message, naming the argument and
the rule, or TypeError for an argument of the wrong Python type."""
import unittest

import numpy as np

import lowbit

LHS = np.zeros((4, 5), np.uint8)
RHS = np.zeros((5, 3), np.uint8)
PARAMS = lowbit.QuantizationParams(0.1, 0)


def gemm(**options):
    return lowbit.gemm(options.pop("lhs", LHS), options.pop("rhs", RHS), **options)


def sweep(settings=((4, 4, "nearest"),), **options):
    options.setdefault("depths", [8])
    return lowbit.accuracy_sweep(list(settings), **options)


class ErrorsTest(unittest.TestCase):
    def assertError(self, call, message, argument=None):
        with self.assertRaises(lowbit.Error) as raised:
            call()
        self.assertEqual(str(raised.exception), message)
        self.assertIsInstance(raised.exception, ValueError)
        if argument is not None:
            self.assertEqual(raised.exception.argument, argument)

    def assertTypeError(self, call, message):
        with self.assertRaises(TypeError) as raised:
            call()
        self.assertEqual(str(raised.exception), message)

    def test_operands(self):
        self.assertTypeError(lambda: gemm(lhs=[[1]]), "lhs must be a numpy.ndarray, got list")
        self.assertError(lambda: gemm(lhs=LHS.astype(np.int32)),
                         "lowbit: lhs: must have dtype uint8 or int8, got int32", "lhs")
        self.assertError(lambda: gemm(rhs=RHS.astype(bool)),
                         "lowbit: rhs: must have dtype uint8 or int8, got bool", "rhs")
        self.assertError(lambda: gemm(lhs=np.zeros((2, 2, 2), np.uint8)),
                         "lowbit: lhs: must be a 2-D array, got 3 dimensions")
        self.assertError(lambda: gemm(rhs=np.zeros(5, np.uint8)),
                         "lowbit: rhs: must be a 2-D array, got 1 dimension")
        self.assertError(
            lambda: gemm(lhs=np.zeros((4, 10), np.uint8)[:, ::2]),
            "lowbit: lhs: must have one axis of unit stride and the other's stride at least its "
            "length (C or Fortran order, or a slice of such an array), got strides (10, 2) bytes "
            "for shape (4, 5)")
        self.assertError(lambda: gemm(rhs=np.zeros((6, 3), np.uint8)),
                         "lowbit: rhs.rows: must equal lhs.cols, the depth (5), got 6", "rhs.rows")
        self.assertError(
            lambda: gemm(lhs=np.zeros((1, 70000), np.uint8), rhs=np.zeros((70000, 1), np.uint8),
                         lhs_offset=-255, rhs_offset=-255),
            "lowbit: lhs.cols: the depth 70000 can overflow int32 accumulators: with these operand "
            "types and offsets the largest |(lhs + lhs_offset) * (rhs + rhs_offset)| allows a "
            "depth of at most 33025")

    def test_out(self):
        self.assertError(lambda: gemm(out=np.zeros((4, 3), np.int16)),
                         "lowbit: out: must have dtype int32, the pipeline's result type, "
                         "got int16")
        self.assertError(lambda: gemm(out=np.zeros((4, 2), np.int32)),
                         "lowbit: out: must have shape (4, 3), lhs's rows by rhs's columns, "
                         "got (4, 2)")
        self.assertError(lambda: gemm(out=np.zeros((4, 6), np.int32)[:, ::2]),
                         "lowbit: out: must have one axis of unit stride and the other's stride at "
                         "least its length (C or Fortran order, or a slice of such an array), got "
                         "strides (24, 8) bytes for shape (4, 3)")
        read_only = np.zeros((4, 3), np.int32)
        read_only.flags.writeable = False
        self.assertError(lambda: gemm(out=read_only), "lowbit: out: must be writable")
        buffer = np.zeros((4, 8), np.uint8)
        self.assertError(lambda: gemm(lhs=buffer[:, :5], out=buffer[:, 5:],
                                      pipeline=[lowbit.SaturatingCastToUint8()]),
                         "lowbit: result: overlaps lhs; the result must not alias an input")
        self.assertTypeError(lambda: gemm(out=[0]), "out must be a numpy.ndarray, got list")

    def test_offsets(self):
        self.assertError(lambda: gemm(lhs_offset=np.arange(3)),
                         "lowbit: lhs_offset: a per-channel offset needs one entry per lhs row "
                         "(4), got 3")
        self.assertError(lambda: gemm(rhs_offset=np.zeros((3, 1), int)),
                         "lowbit: rhs_offset: must be a 1-D array, got 2 dimensions")
        self.assertError(lambda: gemm(lhs_offset=2**31),
                         "lowbit: lhs_offset: must be in [-2147483648, 2147483647], got 2147483648")
        self.assertError(lambda: gemm(rhs_offset=[0, 2**40, 0]),
                         "lowbit: rhs_offset[1]: must be in [-2147483648, 2147483647], "
                         "got 1099511627776")
        self.assertError(lambda: gemm(rhs_offset=[0.5, 1, 2]),
                         "lowbit: rhs_offset: must be a 1-D array of integers, got dtype float64")
        self.assertTypeError(lambda: gemm(lhs_offset=1.5),
                             "lhs_offset must be an int or a 1-D array of integers, got float")
        self.assertError(lambda: gemm(rhs_offset=np.uint64(2**63)),
                         "lowbit: rhs_offset: must be in [-2147483648, 2147483647], "
                         "got 9223372036854775808")

    def test_pipeline_stages_are_checked_by_lowbit(self):
        cases = [
            ([lowbit.ShiftByPOT(0), lowbit.BiasAddition([1, 2], "col")],
             "lowbit: pipeline[1].bias: with ChannelAxis::kCol must have one entry per result "
             "column (3), got 2 entries"),
            ([lowbit.Clamp(5, 1)], "lowbit: pipeline[0].min: must not exceed max (1), got 5"),
            ([lowbit.QuantizeDownInt32ByFixedPoint(5, 40)],
             "lowbit: pipeline[0].result_shift: must be in [0, 31], got 40"),
            ([lowbit.QuantizeDownInt32ByFixedPointPerChannel([1, 1, 1], [0, 40, 0], 0, "col")],
             "lowbit: pipeline[0].result_shift[1]: must be in [0, 31], got 40"),
            ([lowbit.ScaleInt32ByFixedPointAndExponent(-1, 0)],
             "lowbit: pipeline[0].result_fixedpoint_multiplier: must be in [0, 2147483647], "
             "got -1"),
            ([lowbit.ScaleInt32ByFixedPointAndExponentPerChannel([1] * 4, [31] * 4, 0, "row")],
             "lowbit: pipeline[0].result_exponent[0]: must be in [-31, 30], got 31"),
            ([lowbit.QuantizeDownInt32ToUint8Scale(0, 1, 32)],
             "lowbit: pipeline[0].result_shift: must be in [0, 31], got 32"),
            ([lowbit.QuantizeDownInt32ToUint8ScalePerChannel([0] * 3, [1, -1, 1], 0, "col")],
             "lowbit: pipeline[0].result_mult_int[1]: must be in [0, 2147483647], got -1"),
            ([lowbit.ShiftByPOT(40)], "lowbit: pipeline[0].exponent: must be in [-31, 31], got 40"),
            ([lowbit.Tanh(0, 0)],
             "lowbit: pipeline[0].real_amplitude_as_int32: must be in [1, 2147483647], got 0"),
            ([lowbit.Tanh(0, 2**30)],
             "lowbit: pipeline[0].real_amplitude_as_int32: with gemmlowp's arithmetic, "
             "real_zero_as_int32 +- 8 * real_amplitude_as_int32 must lie within int32, got zero 0 "
             "and amplitude 1073741824 (TanhArithmetic::kAccurate takes any positive amplitude)"),
            ([lowbit.Logistic(0, -5)],
             "lowbit: pipeline[0].real_amplitude_as_int32: must be in [1, 2147483647], got -5"),
        ]
        for pipeline, message in cases:
            with self.subTest(message=message):
                self.assertError(lambda: gemm(pipeline=pipeline), message)

    def test_quantized_add_stage(self):
        plan = lowbit.make_quantized_add_plan(lowbit.QuantizedAddInput(PARAMS),
                                              lowbit.QuantizedAddInput(PARAMS), PARAMS)
        self.assertError(lambda: lowbit.QuantizedAdd(plan, np.zeros((4, 3), np.int8)),
                         "lowbit: residual: must be uint8_t data: the plan's rhs type is unsigned")
        self.assertError(lambda: gemm(pipeline=[lowbit.QuantizedAdd(plan, np.zeros((4, 2),
                                                                                   np.uint8))]),
                         "lowbit: pipeline[0].residual: must be the result's size (4 x 3), "
                         "got 4 x 2")

    def test_stage_constructors(self):
        self.assertError(lambda: lowbit.BiasAddition([1], "rows"),
                         "lowbit: BiasAddition.axis: must be 'row' or 'col', got 'rows'")
        self.assertError(lambda: lowbit.BiasAddition([1.5], "row"),
                         "lowbit: BiasAddition.bias: must be a 1-D array of integers, got dtype "
                         "float64")
        self.assertError(lambda: lowbit.ShiftByPOT(-1, "up"),
                         "lowbit: ShiftByPOT.rounding: must be 'nearest' or 'stochastic', got 'up'")
        self.assertError(lambda: lowbit.ShiftByPOT(-1, "stochastic", -1),
                         "lowbit: ShiftByPOT.seed: must be in [0, 4294967295], got -1")
        self.assertError(lambda: lowbit.Tanh(0, 1, "fast"),
                         "lowbit: Tanh.arithmetic: must be 'gemmlowp' or 'accurate', got 'fast'")
        self.assertError(lambda: lowbit.Clamp(0, 2**31),
                         "lowbit: Clamp.max: must be in [-2147483648, 2147483647], got 2147483648")
        self.assertTypeError(lambda: gemm(pipeline="abc"),
                             "pipeline must be a list or tuple of lowbit stages, got str")
        self.assertTypeError(lambda: gemm(pipeline=(s for s in [lowbit.Clamp(0, 1)])),
                             "pipeline must be a list or tuple of lowbit stages, got generator")
        self.assertTypeError(lambda: gemm(pipeline=[lowbit.Clamp(0, 1), 3]),
                             "pipeline[1] must be a lowbit output stage (lowbit.Clamp, ...), "
                             "got int")

    def test_bit_depth(self):
        self.assertError(lambda: gemm(bit_depth=lowbit.BitDepthParams(9, 8)),
                         "lowbit: bit_depth.lhs_bits: must be in [1, 8], got 9")
        self.assertError(
            lambda: gemm(lhs=LHS + 4, bit_depth=lowbit.BitDepthParams(2, 8, mode="declared_range")),
            "lowbit: lhs: holds 4 at (0, 0), outside [0, 3]: BitDepthMode::kDeclaredRange promises "
            "2-bit values (bit_depth.lhs_bits)")
        self.assertError(lambda: lowbit.BitDepthParams(rounding="add-mod-97"),
                         "lowbit: BitDepthParams.rounding: must be one of 'nearest', 'xorshift', "
                         "'addmod', 'auto', got 'add-mod-97'")
        self.assertError(lambda: lowbit.BitDepthParams(mode="exact"),
                         "lowbit: BitDepthParams.mode: must be one of 'requantize', "
                         "'declared_range', got 'exact'")
        self.assertTypeError(lambda: gemm(bit_depth=(4, 4)),
                             "bit_depth must be a lowbit.BitDepthParams or None, got tuple")

    def test_threads_kernel_and_context(self):
        self.assertError(lambda: gemm(threads=0), "lowbit: threads: must be in [1, 1024], got 0")
        self.assertError(lambda: lowbit.Context(threads=2000),
                         "lowbit: threads: must be in [1, 1024], got 2000")
        self.assertError(lambda: gemm(kernel="foo"),
                         "lowbit: kernel: must be one of 'auto', 'reference', 'sse41', 'avx2', "
                         "'avx512vnni', 'amx', 'neon', got 'foo'")
        missing = [kernel for kernel in ("reference", "sse41", "avx2", "avx512vnni", "amx", "neon")
                   if kernel not in lowbit.available_kernels()]
        for kernel in missing:
            self.assertError(lambda: gemm(kernel=kernel),
                             f"lowbit: kernel: kernel '{kernel}' is not available on this CPU and "
                             f"build; available: {', '.join(lowbit.available_kernels())}")
        self.assertError(lambda: gemm(threads=2, context=lowbit.Context()),
                         "lowbit: threads: must be None when a context is given: set "
                         "context.threads")
        self.assertError(lambda: gemm(kernel="auto", context=lowbit.Context()),
                         "lowbit: kernel: must be None when a context is given: set context.kernel")
        self.assertTypeError(lambda: gemm(context="x"),
                             "context must be a lowbit.Context or None, got str")

    def test_quantization_helpers(self):
        self.assertError(lambda: lowbit.choose_quantization_params(2.0, 1.0),
                         "lowbit: min: must not exceed max (1), got 2", "min")
        self.assertError(lambda: lowbit.choose_quantization_params(float("nan"), 1.0),
                         "lowbit: min: must be finite, got nan")
        self.assertError(lambda: lowbit.choose_quantization_params(0, 1, mode="sym"),
                         "lowbit: mode: must be 'asymmetric' or 'symmetric', got 'sym'")
        self.assertError(lambda: lowbit.quantize_multiplier(0.0),
                         "lowbit: real_multiplier: must be positive, got 0")
        self.assertError(lambda: lowbit.quantize_multipliers([0.5, -1.0]),
                         "lowbit: real_multipliers[1]: must be positive, got -1")
        self.assertError(lambda: lowbit.quantize(np.array([1.0, np.nan]), PARAMS),
                         "lowbit: values[1]: must not be NaN")
        self.assertError(lambda: lowbit.quantize([1.0], lowbit.QuantizationParams(0.0, 0)),
                         "lowbit: params.scale: must be finite and positive, got 0")
        self.assertError(lambda: lowbit.quantize([1.0], lowbit.QuantizationParams(0.1, 300)),
                         "lowbit: params.zero_point: must be in [0, 255], got 300")
        self.assertError(lambda: lowbit.quantize(np.array(["a"]), PARAMS),
                         "lowbit: values: must be an array of real numbers, got dtype <U1")
        self.assertError(lambda: lowbit.dequantize(np.zeros(3, np.int16), PARAMS),
                         "lowbit: quantized: must have dtype uint8 or int8, got int16")
        self.assertError(
            lambda: lowbit.make_quantized_add_plan(
                lowbit.QuantizedAddInput(lowbit.QuantizationParams(0.0, 0)),
                lowbit.QuantizedAddInput(PARAMS), PARAMS),
            "lowbit: lhs.params[0].scale: must be finite and at least DBL_MIN (positive, not "
            "subnormal), got 0")
        plan = lowbit.make_quantized_add_plan(lowbit.QuantizedAddInput(PARAMS),
                                              lowbit.QuantizedAddInput(PARAMS), PARAMS)
        self.assertError(lambda: lowbit.quantized_add(plan, LHS, LHS[:3]),
                         "lowbit: rhs: must have lhs's shape (4, 5), got (3, 5)")
        self.assertError(
            lambda: lowbit.quantized_gemm(LHS, RHS, lhs_params=lowbit.QuantizationParams(0.1, 300),
                                          rhs_params=PARAMS, result_params=PARAMS),
            "lowbit: lhs.params.zero_point: must be in [0, 255], got 300")
        self.assertError(
            lambda: lowbit.quantized_gemm(LHS, RHS, lhs_params=PARAMS, rhs_params=PARAMS,
                                          result_params=PARAMS, result_dtype="int32"),
            "lowbit: result_dtype: must be uint8 or int8, got int32")
        self.assertError(
            lambda: lowbit.make_quantized_gemm_pipeline(PARAMS, PARAMS, PARAMS, activation="gelu"),
            "lowbit: activation: must be 'none', 'relu' or 'relu6', got 'gelu'")

    def test_accuracy_sweep(self):
        self.assertError(lambda: sweep([(0, 4, "nearest")]),
                         "lowbit: settings[0].lhs_bits: must be in [1, 8], got 0")
        self.assertError(lambda: sweep([(4, 4)]),
                         "lowbit: settings[0]: must be (lhs_bits, rhs_bits, rounding), got 2 items")
        self.assertError(lambda: sweep(data=["gauss"]),
                         "lowbit: data[0]: must be one of 'uniform', 'clumped', got 'gauss'")
        self.assertError(lambda: sweep(trials=0),
                         "lowbit: trials: must be in [1, 2147483647], got 0")
        self.assertError(lambda: sweep(depths=[8, 0]),
                         "lowbit: depths[1]: must be in [1, 2147483647], got 0")


if __name__ == "__main__":
    unittest.main()
