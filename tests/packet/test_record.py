"""The shared record repr (explorer/packet/record.py) is the repr dataclasses would generate."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import pytest

from explorer.analysis.result import Metrics
from explorer.packet.record import Record


@dataclass(frozen=True, repr=False)
class Shared(Record):
    name: str
    count: int
    values: tuple = ()
    hidden: float = field(default=0.5, repr=False)


@dataclass(frozen=True)
class Generated:
    name: str
    count: int
    values: tuple = ()
    hidden: float = field(default=0.5, repr=False)


@pytest.mark.parametrize("arguments", [("a", 1), ("quote'\"", -3, (1.5, None, "x")), ("", 0, (np.float32(2),), 9.0)])
def test_the_shared_repr_is_the_generated_one(arguments):
    expected = repr(Generated(*arguments)).replace("Generated(", "Shared(", 1)
    assert repr(Shared(*arguments)) == expected


def test_records_stay_frozen_and_nest():
    record = Shared("outer", 2, (Shared("inner", 1),))
    assert repr(record) == "Shared(name='outer', count=2, values=(Shared(name='inner', count=1, values=()),))"
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.count = 3  # type: ignore[misc]


def test_an_explorer_record_uses_it():
    metrics = Metrics(*(0.0 for _ in dataclasses.fields(Metrics)))
    assert type(metrics).__repr__ is Record.__repr__
    assert repr(metrics).startswith("Metrics(") and "=" in repr(metrics)
