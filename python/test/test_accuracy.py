"""lowbit.accuracy_sweep: one entry per data, depth and setting, in that nesting order, with the
errors of requantized GEMMs against the exact 8-bit result."""
import unittest

import numpy as np

import lowbit

SETTINGS = [(8, 8, "nearest"), (4, 4, "nearest"), (7, 5, "addmod"), (2, 3, "xorshift")]
DEPTHS = [16, 300]
DATA = ["uniform", "clumped"]


class AccuracySweepTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sweep = lowbit.accuracy_sweep(SETTINGS, depths=DEPTHS, data=DATA, trials=8, seed=3)

    def test_arrays_follow_the_nesting_order(self):
        count = len(DATA) * len(DEPTHS) * len(SETTINGS)
        for name, array in self.sweep.items():
            with self.subTest(name=name):
                self.assertEqual(array.shape, (count,))
        self.assertEqual(list(self.sweep["data"]),
                         [d for d in DATA for _ in DEPTHS for _ in SETTINGS])
        self.assertEqual(list(self.sweep["depth"]),
                         [d for _ in DATA for d in DEPTHS for _ in SETTINGS])
        self.assertEqual(list(zip(self.sweep["lhs_bits"], self.sweep["rhs_bits"],
                                  self.sweep["rounding"])), SETTINGS * len(DATA) * len(DEPTHS))
        self.assertEqual(self.sweep["rms"].dtype, np.float64)
        self.assertEqual(self.sweep["exact_range"].dtype, np.int64)

    def test_errors_are_consistent(self):
        exact = self.sweep["lhs_bits"] == 8
        for name in ("bias", "bias_standard_error", "rms", "max"):
            np.testing.assert_array_equal(self.sweep[name][exact], 0)
        self.assertTrue((self.sweep["rms"][~exact] > 0).all())
        self.assertTrue((self.sweep["rms"] >= np.abs(self.sweep["bias"])).all())
        self.assertTrue((self.sweep["max"] >= self.sweep["rms"]).all())
        self.assertTrue((self.sweep["exact_range"] > 0).all())

    def test_the_seed_decides_the_data(self):
        again = lowbit.accuracy_sweep(SETTINGS, depths=DEPTHS, data=DATA, trials=8, seed=3)
        np.testing.assert_array_equal(again["rms"], self.sweep["rms"])
        other = lowbit.accuracy_sweep(SETTINGS, depths=DEPTHS, data=DATA, trials=8, seed=4)
        self.assertFalse(np.array_equal(other["exact_range"], self.sweep["exact_range"]))


if __name__ == "__main__":
    unittest.main()
