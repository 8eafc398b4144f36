"""Parameter conversion without pydantic, for the plain option types memcli uses.

Recent typer releases convert every option value through a pydantic ``TypeAdapter``; importing pydantic
costs ~110 ms here — more than a whole ``memcli recall`` answered by the warm server. For ``str``, ``int``,
``float``, ``bool``, ``Path``, their ``Optional`` forms and lists of them (and no min/max/parser), the
conversion below gives the same values and turns bad input into the same usage error (exit 2); anything else
keeps typer's own conversion. On a typer without this machinery nothing is changed.
``tests/test_cli_coerce.py`` checks the equivalence against the installed typer.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Converter = Callable[[Any], Any]


def _to_int(value: Any) -> int:
    """pydantic's lax int: "7", " 7 ", "+7", "1_000", "3.0" (not "3.5", "1e3" or non-ASCII digits)."""
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("not an integer")
        return int(value)
    text = str(value).strip()
    whole, dot, frac = text.partition(".")
    if not text.isascii() or (dot and frac.strip("0")):
        raise ValueError("not an integer")
    return int(whole)


def _to_float(value: Any) -> float:
    if isinstance(value, str):
        if not value.isascii():
            raise ValueError("not a number")
        return float(value.strip())
    return float(value)


_TRUE = {"1", "true", "t", "yes", "y", "on"}
_FALSE = {"0", "false", "f", "no", "n", "off", ""}


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError("not a boolean")


def _to_str(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


class _PathError(ValueError):
    pass


def _path_converter(info: Any) -> Converter:
    """``Path(value)``, then typer's checks of an existing path (file/dir allowed, readable, writable)."""
    import os
    import stat

    def convert(value: Any) -> Path:
        rv = value if isinstance(value, Path) else Path(value)
        try:
            st = os.stat(rv)
        except OSError:
            return rv  # `exists` is not asked for (checked in light_param)
        if not getattr(info, "file_okay", True) and stat.S_ISREG(st.st_mode):
            raise _PathError(f"{str(value)!r} is a file")
        if not getattr(info, "dir_okay", True) and stat.S_ISDIR(st.st_mode):
            raise _PathError(f"{str(value)!r} is a directory")
        if getattr(info, "readable", True) and not os.access(rv, os.R_OK):
            raise _PathError(f"{str(value)!r} is not readable")
        if getattr(info, "writable", False) and not os.access(rv, os.W_OK):
            raise _PathError(f"{str(value)!r} is not writable")
        return rv

    return convert


_LEAVES: dict[Any, tuple[Converter, str]] = {
    str: (_to_str, "text"), int: (_to_int, "an integer"), float: (_to_float, "a number"),
    bool: (_to_bool, "true or false"),
}


def _strip_optional(annotation: Any) -> Any:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


class LightParam:
    """Duck-types typer's runtime parameter: ``coerce(value, param=, ctx=)``."""

    def __init__(self, convert: Converter, what: str, many: bool) -> None:
        self.convert, self.what, self.many = convert, what, many

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        from typer import BadParameter

        multi = param.multiple or param.nargs == -1
        if value is None:
            return () if multi else None
        if multi and isinstance(value, str):
            raise BadParameter("Value must be an iterable.", ctx=ctx, param=param)
        try:
            if self.many or multi:
                items = value if isinstance(value, (list, tuple)) else [value]
                return [self.convert(v) for v in items]
            return self.convert(value)
        except _PathError as exc:
            raise BadParameter(f"Path {exc}.", ctx=ctx, param=param) from None
        except (TypeError, ValueError):
            raise BadParameter(f"{value!r} is not {self.what}.", ctx=ctx, param=param) from None


def light_param(descriptor: Any) -> LightParam | None:
    """A pydantic-free converter for this typer type descriptor, or None when typer's own is needed."""
    info = getattr(descriptor, "parameter_info", None)
    if info is None or getattr(descriptor, "file_annotation", None) is not None:
        return None
    if any(getattr(info, k, None) is not None for k in ("parser", "min", "max", "formats")):
        return None
    if getattr(info, "clamp", False) or getattr(info, "path_type", None) is not None:
        return None
    annotation = _strip_optional(descriptor.annotation)
    many = typing.get_origin(annotation) is list
    if many:
        (annotation,) = typing.get_args(annotation) or (str,)
        annotation = _strip_optional(annotation)
    if annotation is Path:
        if any(getattr(info, k, False) for k in ("exists", "resolve_path", "allow_dash")):
            return None
        return LightParam(_path_converter(info), "a path", many)
    leaf = _LEAVES.get(annotation)
    if leaf is None:
        return None
    return LightParam(leaf[0], leaf[1], many)


def lighten(params: Iterable[Any]) -> int:
    """Give these (typer) click parameters the light converter where it applies; returns how many."""
    n = 0
    for p in params:
        if not hasattr(p, "_runtime_param") or not hasattr(p, "type_descriptor"):
            continue  # not a typer parameter with pydantic conversion (an older typer)
        if getattr(p, "_runtime_param", None) is not None:
            continue
        light = light_param(p.type_descriptor)
        if light is not None:
            p._runtime_param = light
            n += 1
    return n
