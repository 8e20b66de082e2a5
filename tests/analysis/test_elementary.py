"""exp, exp2 and log from IEEE-exact operations.

Within a unit or two in the last place of 60-digit decimal values, the correctly rounded float32 exp of every
bfloat16 and float16 input, and numpy's special values.
"""

from __future__ import annotations

from decimal import Context

import numpy as np
import pytest

from explorer.analysis import elementary

DECIMAL = Context(prec=60)
RNG = np.random.default_rng(2026)


def _exact(function: str, values: np.ndarray) -> np.ndarray:
    """float64 of the 60-digit decimal exp, exp2 or ln of each value."""
    two = DECIMAL.create_decimal(2)
    compute = {"exp": lambda x: DECIMAL.exp(x), "exp2": lambda x: DECIMAL.power(two, x), "log": lambda x: DECIMAL.ln(x)}
    return np.array([float(compute[function](DECIMAL.create_decimal(float(value)))) for value in values])


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float64 units in the last place (both finite, same sign)."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


SAMPLES = {
    "exp": np.concatenate(
        [
            RNG.uniform(-745, 709, 3000),
            RNG.uniform(-1, 1, 3000),
            -RNG.exponential(5, 3000),
            RNG.uniform(-745, -708, 1000),
        ]
    ),  # the last: results in the subnormal range
    "exp2": np.concatenate([RNG.uniform(-1074, 1023, 3000), RNG.uniform(-2, 2, 3000), RNG.uniform(-150, 0, 3000)]),
    "log": np.concatenate(
        [
            RNG.uniform(0, 2, 3000),
            np.exp(RNG.uniform(-700, 700, 3000)),
            RNG.uniform(0.7, 1.4, 3000),
            [5e-324, 1e-310, 2.2250738585072014e-308, 1.7976931348623157e308],
        ]
    ),
}
MAX_ULPS = {"exp": 2, "exp2": 2, "log": 1}


@pytest.mark.parametrize("function", SAMPLES)
def test_within_a_unit_or_two_in_the_last_place_of_decimal_arithmetic(function):
    values = SAMPLES[function]
    got, exact = getattr(elementary, function)(values), _exact(function, values)
    nonzero = exact != 0
    assert _ulps(got[nonzero], exact[nonzero]).max() <= MAX_ULPS[function]
    assert (got[~nonzero] == 0).all()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_float32_exp_of_every_16_bit_input_is_correctly_rounded(dtype):
    bits = np.arange(1 << 16, dtype=np.uint32)
    values = (
        (bits << 16).view(np.float32)
        if dtype == "bfloat16"
        else bits.astype(np.uint16).view(np.float16).astype(np.float32)
    )
    values = values[np.isfinite(values) & (values > -110) & (values < 88)]  # outside: 0 or inf in float32
    exact = np.array([np.float32(DECIMAL.exp(DECIMAL.create_decimal(float(value)))) for value in values])
    assert (elementary.exp(values.astype(np.float64)).astype(np.float32) == exact).all()


def test_the_table_holds_the_correctly_rounded_powers_of_two():
    two = DECIMAL.create_decimal(2)
    expected = [
        float(DECIMAL.power(two, DECIMAL.divide(j, elementary.TABLE_SIZE))) for j in range(elementary.TABLE_SIZE)
    ]
    assert elementary.POWERS.tolist() == expected


def test_special_values_are_numpys():
    x = np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, -746.0, 710.0, -1e300, 1e300])
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(elementary.exp(x), np.exp(x))
        np.testing.assert_array_equal(elementary.exp2(x), np.exp2(x))
    y = np.array([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan, 1.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(elementary.log(y), np.log(y))
    assert elementary.exp2(np.array([-1074.0, -1075.0]))[0] == 5e-324  # 2^-1075 is a tie, rounded to even 0
    assert elementary.exp2(np.array([-1075.0]))[0] == 0


def test_out_takes_the_result_rounded_once_in_its_dtype_and_may_be_the_input():
    x = RNG.uniform(-30, 0, 100_000).astype(np.float32)  # more than one chunk
    expected = elementary.exp(x.astype(np.float64)).astype(np.float32)
    elementary.exp(x, out=x)
    assert x.tobytes() == expected.tobytes()
