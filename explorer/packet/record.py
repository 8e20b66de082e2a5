"""The explorer's frozen dataclass records: `@record` over `Record`, methods shared instead of generated; no I/O, no numerics.

Every record is declared

    @record                 # value record: == and hash compare the fields
    class Name(Record): ...

or `@record(eq=False)` for a record holding numpy arrays (directly or in a field):
`==` is then identity, as for the arrays' own truth value, and the record hashes
by identity (field-wise equality could only raise on an array).

`record` is `dataclass(repr=False, eq=False)`: the dataclass generates and compiles
only `__init__`. Immutability, the repr (`Name(field=value, ...)`), `==` and hash
are the ones `@dataclass(frozen=True)` would generate, written once here: Python
3.11 compiles each generated method at every process start, and a command defines
35 to 50 records (about 0.3 ms per method, 15 to 20 ms of a Qwen-size analyze).
A record is immutable once `__init__` has set its fields: assigning or deleting any
attribute raises `dataclasses.FrozenInstanceError`, as for a frozen dataclass.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, field, fields
from typing import Any, Callable, TypeVar, dataclass_transform, overload

RecordType = TypeVar("RecordType", bound=type)


class Record:
    """Base of the records: frozen after `__init__`, the dataclass repr, field-wise `==` and hash, shared."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        # The generated __init__ sets each field once; nothing else may set anything.
        if name in self.__dict__ or name not in self.__dataclass_fields__:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{field.name}={getattr(self, field.name)!r}" for field in fields(self) if field.repr)
        return f"{type(self).__qualname__}({shown})"

    def _compared(self) -> tuple:
        return tuple(getattr(self, field.name) for field in fields(self) if field.compare)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())


@overload
def record(cls: RecordType, /) -> RecordType: ...
@overload
def record(*, eq: bool = True) -> Callable[[RecordType], RecordType]: ...


@dataclass_transform(eq_default=True, field_specifiers=(field,))
def record(cls=None, /, *, eq=True):
    """Make a `Record` subclass a frozen dataclass record; `eq=False`: identity `==` and hash (arrays inside)."""

    def made(cls: RecordType) -> RecordType:
        if not issubclass(cls, Record):
            raise TypeError(f"{cls.__qualname__} must derive from Record")
        cls = dataclass(cls, repr=False, eq=False)
        if not eq:
            cls.__eq__, cls.__hash__ = object.__eq__, object.__hash__
        return cls

    return made if cls is None else made(cls)
