"""The one integer check every entry point uses on its arguments and records.

An integer argument arrives as a Python or numpy int from code, or as whatever a
config or JSON file holds: ``True`` is an ``int`` to Python but never a count, and
``2.0`` or ``"3"`` is no count either. :func:`integer` refuses both kinds in one
line naming the argument. Standard library only (numpy's integers are recognised
without importing numpy).
"""

from __future__ import annotations

import numbers


class IntegerError(TypeError, ValueError):
    """Not an integer: a wrong type and a wrong value at once, so callers that catch either
    (a builder's ``TypeError``, a data reader's ``ValueError``) catch it."""


def integer(name: str, value, minimum: int | None = 0, maximum: int | None = None) -> int:
    """``value`` as an int if it is an integer (Python's or numpy's, not a bool) in
    ``minimum..maximum`` (``None``: unbounded); :class:`IntegerError` or ``ValueError`` naming
    ``name`` otherwise."""
    kind = ("an integer" if minimum is None else "a positive integer" if minimum == 1 and maximum is None
            else "a non-negative integer" if minimum == 0 and maximum is None
            else f"an integer from {minimum} to {maximum}" if maximum is not None else f"an integer >= {minimum}")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise IntegerError(f"{name} must be {kind}, got {value!r}")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ValueError(f"{name} must be {kind}, got {value!r}")
    return int(value)


def problem(name: str, value, minimum: int | None = 0, maximum: int | None = None) -> str | None:
    """:func:`integer`'s message for ``value``, or ``None`` if it passes (for readers that
    collect a row's problems)."""
    try:
        integer(name, value, minimum, maximum)
    except ValueError as err:
        return str(err)
    return None
