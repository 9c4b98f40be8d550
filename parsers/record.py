"""Value-type base classes: what `@dataclass` generates, without its import-time cost.

`@dataclass` compiles each generated method (`__init__`, `__repr__`, `__eq__`, `__hash__`,
frozen `__setattr__`/`__delattr__`) with `exec` when the class is created: about 0.5-1 ms per
class, and an isolated test's forked child, which must import the project afresh, pays it for
every class it imports (15 ms of a parse's first use before these bases). Here those methods are
written once, generically over the class's fields (its annotations, in order); each class writes
only its `__init__`, taking the fields in order. Same results as the dataclass methods:
field-wise `==` between instances of the same class (else `NotImplemented`), `repr` as
`Name(field=value, ...)`, hash of the fields for frozen ones (a mutable record is unhashable),
`FrozenInstanceError` on assignment. Public result types still add
`@dataclass(init=False, repr=False, eq=False)` (no method compiled) so `dataclasses.fields`,
`replace` and `asdict` keep working on them.
"""

from __future__ import annotations

import inspect
from dataclasses import FrozenInstanceError
from typing import Any, ClassVar


class Record:
    """Mutable record: field-wise `==` and `repr`, unhashable (a dataclass with `eq=True`)."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        notes = inspect.get_annotations(cls)  # this class's own, as written (strings)
        cls._fields = tuple(name for name, note in notes.items() if "ClassVar" not in note)
        setattr(cls, "__match_args__", cls._fields)  # noqa: B010  # mypy: no assigning it

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self._fields])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._values() == other._values()
        return NotImplemented

    def __repr__(self) -> str:
        fields = ", ".join([f"{name}={getattr(self, name)!r}" for name in self._fields])
        return f"{self.__class__.__qualname__}({fields})"

    def __reduce__(self) -> tuple[type[Record], tuple[Any, ...]]:
        # copy and pickle rebuild through `__init__` (the fields in order): the default would
        # restore slots by assignment, which a frozen record refuses.
        return self.__class__, self._values()


class Frozen(Record):
    """Immutable record (a dataclass with `frozen=True`): hashable by its fields; `__init__`
    sets fields with `object.__setattr__` (bound as `set_field`)."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._values())

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")


set_field = object.__setattr__
