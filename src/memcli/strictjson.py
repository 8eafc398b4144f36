"""JSON read strictly, the same way on every face (REST bodies, ``--metadata``, import files).

Python's ``json`` accepts ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON: a stored one makes every later
JSON answer that includes it fail), turns ``1e999`` into infinity, raises a bare ``ValueError`` for an integer
of more than 4,300 digits and a ``RecursionError`` for deep nesting. :func:`loads` refuses each of them with a
:class:`~memcli.errors.ValidationError` that says what is wrong; broken syntax stays a
``json.JSONDecodeError``. Export records are read with ``finite=False``: NaN there is left to the record's
check, which refuses it in every field it stores and re-embeds a vector that holds one. :func:`check_tree`
applies the nesting and number rules to a value that arrived already parsed (an MCP tool's arguments, a
library caller's dict).
"""

from __future__ import annotations

import json
import math
from typing import Any

from memcli.errors import ValidationError

MAX_NUMBER_CHARS = 100  # no memory field needs a longer number; Python's int() gives up at 4,300 digits
MAX_DEPTH = 64  # a request body: an envelope around metadata of at most models.MAX_METADATA_DEPTH levels
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1  # the widest integers JSON readers of other languages hold exactly


class NestingError(ValidationError):
    """JSON nested deeper than allowed (a face reading a request body answers it like broken JSON)."""


def _constant(name: str) -> Any:
    raise ValidationError(f"{name} is not a JSON number: numbers must be finite (send a number, a string or null)")


def _number(text: str) -> None:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValidationError(f"a number of {len(text):,} characters: numbers are at most {MAX_NUMBER_CHARS} "
                              "characters (send a longer one as a string)")


def _int(text: str) -> int:
    _number(text)
    return int(text)


def _float(text: str) -> float:
    _number(text)
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise ValidationError(f"the number {text} is out of range: numbers must be finite")
    return value


def _any_float(text: str) -> float:
    """A float (1e999 reads as infinity: finite=False leaves it to the record's check)."""
    _number(text)
    return float(text)


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH, what: str = "the JSON", finite: bool = True) -> Any:
    """``json.loads`` that refuses NaN/Infinity, out-of-range or over-long numbers and nesting deeper than
    ``max_depth`` (ValidationError; :class:`NestingError` for the nesting). ``finite=False`` reads NaN and
    Infinity as floats, for export records: the core refuses them in every field it stores, and re-embeds
    a vector that holds one."""
    hooks: dict[str, Any] = {"parse_int": _int, "parse_float": _float if finite else _any_float}
    if finite:
        hooks["parse_constant"] = _constant
    try:
        value = json.loads(text, **hooks)
    except RecursionError:
        raise NestingError(f"{what} is nested too deeply (more than {max_depth} levels)") from None
    except ValidationError as exc:
        raise ValidationError(f"{what}: {exc.message}") from None
    check_tree(value, max_depth=max_depth, what=what)
    return value


def check_tree(value: Any, *, max_depth: int, what: str, numbers: bool = False) -> None:
    """Refuse ``value`` when lists/objects nest deeper than ``max_depth`` (:class:`NestingError`) or, with
    ``numbers``, when it holds a non-finite float or an integer outside 64 bits. Iterative: a value nested
    thousands deep is refused, not a RecursionError."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, (list, tuple)):
            children = node
        else:
            if numbers:
                _check_number(node, what)
            continue
        if depth >= max_depth:
            raise NestingError(f"{what} is nested too deeply (more than {max_depth} levels)")
        for child in children:
            if isinstance(child, (dict, list, tuple)):
                stack.append((child, depth + 1))
            elif numbers:
                _check_number(child, what)


def _check_number(value: Any, what: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        name = "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
        raise ValidationError(f"{what} holds {name}, which is not a JSON number: numbers must be finite")
    if isinstance(value, int) and not isinstance(value, bool) and not INT_MIN <= value <= INT_MAX:
        raise ValidationError(f"{what} holds an integer beyond 64 bits: send a number that long as a string")
