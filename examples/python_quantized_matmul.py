#!/usr/bin/env python3
"""From float matrices to a quantized GEMM and back with the Python module (doc/python.md):
choose scales and zero points, quantize, multiply through a requantizing pipeline, dequantize and
compare with numpy's float product. Usage: python_quantized_matmul.py [rows depth cols]."""
import sys

import numpy as np

import lowbit


def main(rows=64, depth=256, cols=48):
    rng = np.random.default_rng(1)
    lhs = rng.uniform(-1.0, 1.0, (rows, depth)).astype(np.float32)
    rhs = rng.uniform(0.0, 4.0, (depth, cols)).astype(np.float32)
    product = lhs @ rhs

    # uint8, asymmetric: real = scale * (q - zero_point) over each range, 0.0 exact.
    lhs_params = lowbit.choose_quantization_params(-1.0, 1.0)
    rhs_params = lowbit.choose_quantization_params(0.0, 4.0)
    result_params = lowbit.choose_quantization_params(float(product.min()), float(product.max()))

    # acc * lhs_scale * rhs_scale / result_scale, plus the result zero point, saturated to uint8.
    multiplier = lowbit.quantize_multiplier(
        lhs_params.scale * rhs_params.scale / result_params.scale)
    pipeline = [lowbit.ScaleInt32ByFixedPointAndExponent(multiplier.multiplier, multiplier.exponent,
                                                         result_params.zero_point),
                lowbit.SaturatingCastToUint8()]
    result = lowbit.gemm(lowbit.quantize(lhs, lhs_params), lowbit.quantize(rhs, rhs_params),
                         lhs_offset=-lhs_params.zero_point, rhs_offset=-rhs_params.zero_point,
                         pipeline=pipeline)

    error = lowbit.dequantize(result, result_params) - product
    max_error = float(np.abs(error).max())
    print(f"{rows} x {depth} x {cols}, uint8 -> {result.dtype}, lowbit {lowbit.version()}")
    print(f"error against numpy's float product: max {max_error:.4f}, "
          f"rms {float(np.sqrt(np.mean(error**2))):.4f} (result scale {result_params.scale:.4f}, "
          f"range {float(np.ptp(product)):.2f})")
    # The data keeps the worst error within a few result steps at any depth used here.
    return 0 if max_error < 4 * result_params.scale else 1


if __name__ == "__main__":
    if len(sys.argv) not in (1, 4):
        sys.exit(f"usage: {sys.argv[0]} [rows depth cols]")
    sys.exit(main(*(int(argument) for argument in sys.argv[1:])))
