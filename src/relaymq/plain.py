"""Plain records: classes with their own ``__init__`` that are equal by their fields and shown
by them, as a dataclass is, without being one.

Why: the compiled group (``relaymq.native_build``) makes its classes native, and a dataclass's
generated ``__init__`` stays interpreted on a native class (``slots=True`` crashes one), so the
records built for every message (the codec's packets, the store's records: issue 16,
bench/compare row 3) are plain classes whose construction is native. A subclass names its
fields in ``FIELDS``, in the order ``repr`` shows them; equality holds between instances of the
same class only, and an instance is unhashable (it can change), as a dataclass's is.
"""

from __future__ import annotations

from typing import ClassVar


class Plain:  # noqa: PLW1641 - unhashable, as a dataclass is
    __slots__ = ()
    FIELDS: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.FIELDS)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.FIELDS)
        return f"{type(self).__name__}({shown})"
