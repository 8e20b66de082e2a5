"""The shared record methods behave as the ones `@dataclass(frozen=True)` generates.

The shared record methods (explorer/foundations/record.py) behave as the ones `@dataclass(frozen=True)` generates.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field

import numpy as np
import pytest

from explorer.analysis.result import Analysis, Metrics, NonfiniteMap
from explorer.foundations.record import Record, record
from explorer.packet.model import Reason


@record
class Shared(Record):
    name: str
    count: int
    values: tuple = ()
    hidden: float = field(default=0.5, repr=False)
    listed: list = field(default_factory=list, compare=False)


@dataclass(frozen=True)
class Generated:
    name: str
    count: int
    values: tuple = ()
    hidden: float = field(default=0.5, repr=False)
    listed: list = field(default_factory=list, compare=False)


@record(eq=False)
class Holding(Record):
    array: np.ndarray
    label: str = "x"


ARGUMENTS = [("a", 1), ("quote'\"", -3, (1.5, None, "x")), ("", 0, (np.float32(2),), 9.0)]


@pytest.mark.parametrize("arguments", ARGUMENTS)
def test_the_shared_repr_is_the_generated_one(arguments):
    expected = repr(Generated(*arguments)).replace("Generated(", "Shared(", 1)
    assert repr(Shared(*arguments)) == expected


@pytest.mark.parametrize("arguments", ARGUMENTS)
def test_equality_and_hash_are_the_generated_ones(arguments):
    changed = (arguments[0] + "!", *arguments[1:])
    assert (Shared(*arguments) == Shared(*arguments)) is (Generated(*arguments) == Generated(*arguments)) is True
    assert (Shared(*arguments) == Shared(*changed)) is (Generated(*arguments) == Generated(*changed)) is False
    assert hash(Shared(*arguments)) == hash(Generated(*arguments))  # both hash the tuple of compared fields
    assert Shared(*arguments) == Shared(*arguments, listed=[1])  # compare=False fields are left out
    assert Shared(*arguments) != Generated(*arguments) and Shared(*arguments) != arguments
    assert len({Shared(*arguments), Shared(*arguments)}) == 1


def test_records_stay_frozen_and_nest():
    nested = Shared("outer", 2, (Shared("inner", 1),))
    assert repr(nested) == (
        "Shared(name='outer', count=2, values=(Shared(name='inner', count=1, values=(), listed=[]),), listed=[])"
    )
    for name in ("count", "name", "listed", "not_a_field", "__dict__"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(nested, name, 3)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(nested, name)
    assert nested.count == 2 and "not_a_field" not in vars(nested)


def test_defaults_replace_copy_and_pickle_keep_the_fields():
    made = Shared("a", 1)
    assert (made.values, made.hidden, made.listed) == ((), 0.5, []) and made.listed is not Shared("b", 2).listed
    replaced = dataclasses.replace(made, count=5)
    assert (replaced.name, replaced.count) == ("a", 5) and made.count == 1
    for twin in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert twin == made and twin is not made
        with pytest.raises(dataclasses.FrozenInstanceError):
            twin.count = 0  # type: ignore[misc]
    with pytest.raises(TypeError):
        Shared("a")  # type: ignore[call-arg]  # the generated __init__ checks its arguments


def test_a_record_holding_arrays_compares_and_hashes_by_identity():
    array = np.arange(3.0)
    one, twin = Holding(array), Holding(array)
    assert one == one and one != twin and one != twin
    assert hash(one) == object.__hash__(one) and len({one, twin}) == 2
    restored = pickle.loads(pickle.dumps(one))
    assert np.array_equal(restored.array, array) and restored != one


def test_record_requires_the_base():
    with pytest.raises(TypeError, match="must derive from Record"):

        @record
        class Plain:
            x: int


def test_explorer_records_use_the_shared_methods():
    metrics = Metrics(*(0.0 for _ in dataclasses.fields(Metrics)))
    assert type(metrics).__repr__ is Record.__repr__ and type(metrics).__eq__ is Record.__eq__
    assert repr(metrics).startswith("Metrics(") and "=" in repr(metrics)
    assert metrics == Metrics(*(0.0 for _ in dataclasses.fields(Metrics)))
    assert Reason("a", "b") == Reason("a", "b") and hash(Reason("a", "b")) == hash(Reason("a", "b"))
    for holder in (NonfiniteMap, Analysis):
        assert holder.__eq__ is object.__eq__ and holder.__hash__ is object.__hash__
    for name in ("__init__", "__setattr__", "__delattr__", "__eq__", "__hash__", "__repr__"):
        generated = [
            cls.__name__
            for cls in (Metrics, NonfiniteMap, Reason)
            if name != "__init__" and name in vars(cls) and vars(cls)[name] not in (object.__eq__, object.__hash__)
        ]
        assert generated == [], name  # only __init__ is generated per class


@pytest.mark.parametrize(
    "body",
    [
        "x: int = field(default=0, init=False)",
        "x: int = field(kw_only=True)",
        "x: dataclasses.InitVar[int]",
        "_: dataclasses.KW_ONLY\n    x: int",
    ],
)
def test_record_refuses_fields_its_init_does_not_support(body):
    # Annotations are strings here (this module's future import): dataclasses resolves them in this module.
    namespace = {"__name__": __name__, "record": record, "Record": Record, "field": field}
    with pytest.raises(TypeError, match="not supported"):
        exec(f"@record\nclass Odd(Record):\n    {body}\n", namespace)


def test_the_signature_is_the_dataclass_one():
    import inspect

    assert str(inspect.signature(Shared)) == str(inspect.signature(Generated))
    assert list(inspect.signature(Metrics).parameters) == [item.name for item in dataclasses.fields(Metrics)]


def test_post_init_runs_as_in_a_frozen_dataclass():
    @record
    class Derived(Record):
        values: tuple
        total: float = 0.0

        def __post_init__(self):
            object.__setattr__(self, "total", float(sum(self.values)))

    assert Derived((1, 2.5)).total == 3.5 and Derived(values=()).total == 0.0
    assert dataclasses.replace(Derived((1,)), values=(4, 4)).total == 8.0
