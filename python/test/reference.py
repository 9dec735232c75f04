"""numpy models of what lowbit computes, in int64, for the tests to compare the module with."""
import numpy as np

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


def wrap32(x):
    """Two's-complement int32 wrapping of int64 values."""
    return ((np.asarray(x, np.int64) + 2**31) % 2**32) - 2**31


def gemm(lhs, rhs, lhs_offset=0, rhs_offset=0):
    """(lhs + lhs_offset) @ (rhs + rhs_offset) in int64; offsets scalar or per row / column."""
    lhs = lhs.astype(np.int64) + np.asarray(lhs_offset, np.int64).reshape(-1, 1)
    rhs = rhs.astype(np.int64) + np.asarray(rhs_offset, np.int64).reshape(1, -1)
    return lhs @ rhs


def srdhm(a, b):
    """SaturatingRoundingDoublingHighMul: floor((2ab + 2^31) / 2^32), INT32_MIN^2 saturating."""
    a = np.asarray(a, np.int64)
    b = np.asarray(b, np.int64)
    result = (a * b + 2**30) >> 31
    return np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, result)


def rounding_divide_by_pot(x, exponent):
    """RoundingDivideByPOT: x / 2^exponent rounded to nearest, ties away from zero."""
    x = np.asarray(x, np.int64)
    exponent = np.asarray(exponent, np.int64)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def scale_by_fixed_point(acc, multiplier, exponent, offset):
    """ScaleInt32ByFixedPointAndExponent:
    RDBPOT(SRDHM(acc << max(e, 0), M), max(-e, 0)) + offset, the sum wrapping."""
    exponent = np.asarray(exponent, np.int64)
    shifted = wrap32(np.asarray(acc, np.int64) << np.maximum(exponent, 0))
    scaled = rounding_divide_by_pot(srdhm(shifted, multiplier), np.maximum(-exponent, 0))
    return wrap32(scaled + offset)


def legacy_scale(acc, offset, multiplier, shift):
    """QuantizeDownInt32ToUint8Scale: RDBPOT((acc + offset) * multiplier, shift), wrapping."""
    product = wrap32(wrap32(acc + np.asarray(offset, np.int64)) * multiplier)
    return rounding_divide_by_pot(product, shift)


def saturate(x, dtype):
    info = np.iinfo(dtype)
    return np.clip(x, info.min, info.max)


def _mix(x):
    x = x ^ (x >> np.uint32(16))
    x = x * np.uint32(0x7FEB352D)
    x = x ^ (x >> np.uint32(15))
    x = x * np.uint32(0x846CA68B)
    return x ^ (x >> np.uint32(16))


def stochastic_bits(seed, rows, cols):
    """The 32 random bits of stochastic rounding at each (row, col): the library's hash."""
    with np.errstate(over="ignore"):
        row = np.arange(rows, dtype=np.uint32).reshape(-1, 1)
        col = np.arange(cols, dtype=np.uint32).reshape(1, -1)
        row_key = _mix(np.uint32(seed) + np.uint32(0x9E3779B9) * row)
        return _mix(row_key ^ (np.uint32(0x85EBCA6B) * col))


def shift_by_pot(acc, exponent, rounding="nearest", seed=0):
    acc = np.asarray(acc, np.int64)
    if exponent >= 0:
        return saturate(acc * 2**exponent, np.int32)
    shift = -exponent
    if rounding == "nearest":
        return rounding_divide_by_pot(acc, shift)
    bits = stochastic_bits(seed, *acc.shape).astype(np.int64)
    return (acc + (bits >> (32 - shift))) >> shift


def requantize_nearest(values, bits):
    """A uint8 value s as the N-bit value (s (2^N - 1) + 127) / 255 (BitDepthRounding 'nearest')."""
    return (values.astype(np.int64) * (2**bits - 1) + 127) // 255


def narrow_gemm_nearest(lhs, rhs, lhs_offset, rhs_offset, lhs_bits, rhs_bits):
    """The requantized GEMM with nearest rounding (doc/less-than-8-bit.md, "Rescaling"): int8
    operands as uint8 + 128 with 128 taken out of the offset, the rescaled sum rounded."""
    lhs_offset = np.asarray(lhs_offset, np.int64).reshape(-1, 1)
    rhs_offset = np.asarray(rhs_offset, np.int64).reshape(1, -1)
    if lhs.dtype == np.int8:
        lhs, lhs_offset = lhs.astype(np.int64) + 128, lhs_offset - 128
    if rhs.dtype == np.int8:
        rhs, rhs_offset = rhs.astype(np.int64) + 128, rhs_offset - 128
    pl, pr = 2**lhs_bits - 1, 2**rhs_bits - 1
    a = requantize_nearest(lhs, lhs_bits)
    b = requantize_nearest(rhs, rhs_bits)
    depth = lhs.shape[1]
    n = (255 * 255 * (a @ b) + 255 * pr * rhs_offset * a.sum(axis=1, keepdims=True)
         + 255 * pl * lhs_offset * b.sum(axis=0, keepdims=True)
         + depth * lhs_offset * rhs_offset * pl * pr)
    divisor = pl * pr  # odd: no quotient is a half-integer
    return saturate((2 * n + divisor) // (2 * divisor), np.int32)
