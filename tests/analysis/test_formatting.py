"""The one number formatter (explorer.foundations.formatting).

4 significant digits for people, the full value for hovers, '-' for a missing value.
"""

from __future__ import annotations

import numpy as np
import pytest

from explorer.foundations.formatting import MISSING, SIGNIFICANT_DIGITS, full_number, scientific_number, short_number


@pytest.mark.parametrize(
    "value, shown",
    [
        (0.000243701, "0.0002437"),
        (0.000243708, "0.0002437"),
        (3100.0, "3100"),
        (575300.0, "5.753e+05"),
        (0.98812, "0.9881"),
        (1e-7, "1e-07"),
        (np.float32(0.1), "0.1"),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
        (7, "7"),
        (np.int64(12), "12"),
        (True, "true"),
        (None, MISSING),
    ],
)
def test_short_number(value, shown):
    assert short_number(value) == shown


def test_short_number_keeps_four_significant_digits():
    assert SIGNIFICANT_DIGITS == 4
    assert short_number(123456.0) == "1.235e+05" and short_number(1.23456) == "1.235"


@pytest.mark.parametrize(
    "value, shown",
    [(575312.5, "5.753e+05"), (0.98812, "9.881e-01"), (3100.5, "3.100e+03"), (1e20, "1.000e+20")],
)
def test_scientific_number_keeps_four_significant_digits_in_every_cell(value, shown):
    assert scientific_number(value) == shown


@pytest.mark.parametrize(
    "value, shown",
    [(1.0, "1"), (2544000.0, "2544000"), (12, "12"), (3100.0, "3100"), (-0.0, "-0"), (float(2**53), str(2**53))],
)
def test_scientific_number_shows_a_whole_number_as_an_integer(value, shown):
    """The packet list's worst ULP 1 reads `1`, not `1.000e+00` (issue 39)."""
    assert scientific_number(value) == shown


@pytest.mark.parametrize(
    "value, full",
    [
        (0.000243701, "0.000243701"),
        (np.float32(0.1), repr(float(np.float32(0.1)))),
        (3100.0, "3100.0"),
        (None, "-"),
        (False, "false"),
        ({"a": 1}, '{"a": 1}'),
        ([1, 2], "[1, 2]"),
        (np.int32(5), "5"),
        ("x", "x"),
    ],
)
def test_full_number_is_the_json_value(value, full):
    assert full_number(value) == full


def test_full_number_round_trips():
    for value in (0.1 + 0.2, 1e-310, 2.0**70, -0.0):
        assert float(full_number(value)) == value
