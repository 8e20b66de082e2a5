"""The explorer's frozen dataclass records: `@record` over `Record`, methods shared; no I/O.

`@record` (value records: `==` and hash by field) or `@record(eq=False)` (records holding arrays: identity) is
`dataclass(init=False, repr=False, eq=False)`: the fields work with `dataclasses`, and `__init__`, immutability,
repr, `==` and hash behave as `@dataclass(frozen=True)`'s but are written once here, because Python 3.11
compiles every generated method at every start (40 ms of a Qwen-size analyze). `init=False`, keyword-only and
`InitVar` fields are refused.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError, dataclass, field, fields
from typing import Any, TypeVar, dataclass_transform, overload

RecordType = TypeVar("RecordType", bound=type)


class _Factory:
    """The default shown in a record's signature for a field with a default factory (as dataclasses shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


class _Signature:
    """`Name.__signature__`, built on first use from the fields (what `help()` and Jupyter's `Name?` show)."""

    def __get__(self, _instance: object, owner: type) -> inspect.Signature:
        parameters = [
            inspect.Parameter(
                item.name,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=item.type,
                default=_Factory()
                if item.default_factory is not MISSING
                else inspect.Parameter.empty
                if item.default is MISSING
                else item.default,
            )
            for item in fields(owner)
        ]
        return inspect.Signature(parameters, return_annotation=None)


class Record:
    """Base of the records: `__init__`, frozen, the dataclass repr, field-wise `==` and hash, shared."""

    __slots__ = ()
    __signature__ = _Signature()
    __record_parameters__: tuple[tuple[str, ...], dict[str, Callable[[], Any] | None]]  # set by record()
    __record_post_init__: bool  # set by record()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        names, defaults = self.__record_parameters__
        made = type(self).__qualname__
        if len(args) > len(names):
            raise TypeError(f"{made}() takes {len(names)} arguments but {len(args)} were given")
        values = dict(zip(names[: len(args)], args, strict=True))
        for name, value in kwargs.items():
            if name not in defaults:
                raise TypeError(f"{made}() got an unexpected keyword argument {name!r}")
            if name in values:
                raise TypeError(f"{made}() got multiple values for argument {name!r}")
            values[name] = value
        if len(values) < len(names):
            for name in names:
                if name not in values:
                    if defaults[name] is None:
                        raise TypeError(f"{made}() missing required argument {name!r}")
                    values[name] = defaults[name]()
            values = {name: values[name] for name in names}
        self.__dict__.update(values)
        if self.__record_post_init__:
            self.__post_init__()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{item.name}={getattr(self, item.name)!r}" for item in fields(self) if item.repr)
        return f"{type(self).__qualname__}({shown})"

    def _compared(self) -> tuple:
        return tuple(getattr(self, item.name) for item in fields(self) if item.compare)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._compared() == other._compared()

    def __hash__(self) -> int:
        return hash(self._compared())


def _default(item: Any) -> Callable[[], Any] | None:
    """What makes a field's value when no argument gives it: its factory, its default, or None (required)."""
    if item.default_factory is not MISSING:
        return item.default_factory
    if item.default is not MISSING:
        value = item.default
        return lambda: value
    return None


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
        cls = dataclass(cls, init=False, repr=False, eq=False)
        declared = fields(cls)
        init_only = [
            name
            for name, item in cls.__dataclass_fields__.items()
            if item not in declared and "ClassVar" not in str(item.type)
        ]  # InitVar pseudo-fields
        unsupported = init_only + [item.name for item in declared if not item.init or item.kw_only is True]
        if unsupported:
            raise TypeError(
                f"{cls.__qualname__}: init=False, keyword-only and InitVar fields are not supported "
                f"by record: {', '.join(unsupported)}"
            )
        cls.__record_post_init__ = hasattr(cls, "__post_init__")  # called as the dataclass __init__ would
        cls.__record_parameters__ = (
            tuple(item.name for item in declared),
            {item.name: _default(item) for item in declared},
        )
        if not eq:
            cls.__eq__, cls.__hash__ = object.__eq__, object.__hash__
        return cls

    return made if cls is None else made(cls)
