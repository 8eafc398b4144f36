"""HTTP plumbing shared by every route module of ``memcli serve``: the JSON error shape, reading a JSON body
within a size limit, query-parameter parsing, and ETag/If-Match. It imports no route module, so route
modules and :mod:`memcli.server.app` all depend on it and never on each other."""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from memcli.errors import ValidationError, public_message
from memcli.models import parse_time_ms
from memcli.strictjson import NestingError, loads

MAX_BODY = 1 << 20  # 1 MiB for one memory
MAX_BATCH_BODY = 10 << 20  # 10 MiB for a batch
MAX_BATCH_ITEMS = 1000


class ApiError(Exception):
    """An HTTP-level error (bad JSON, body too large...) rendered as the JSON error shape."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


def error_response(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """memcli's JSON error shape: ``{"ok": false, "error": message, "code": code}`` (no internal paths)."""
    return JSONResponse({"ok": False, "error": public_message(message, status), "code": code}, status_code=status,
                        headers=headers)


async def read_json(request: Request, limit: int, *, finite: bool = True) -> Any:
    """The request body as JSON; 413 above ``limit`` bytes (checked while reading), 400 when broken or nested
    too deeply, 422 for a number too long to be one and, unless ``finite=False`` (export records, checked
    field by field), for NaN or Infinity (:func:`memcli.strictjson.loads`)."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, f"request body is larger than {limit:,} bytes", "payload_too_large")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, f"request body is larger than {limit:,} bytes", "payload_too_large")
    if not body.strip():
        raise ApiError(400, "the request body is empty: send a JSON object", "invalid_json")
    try:
        return loads(bytes(body).decode("utf-8"), what="the request body", finite=finite)
    except UnicodeDecodeError:
        raise ApiError(400, "the request body is not valid UTF-8", "invalid_json") from None
    except json.JSONDecodeError as exc:
        raise ApiError(400, f"the request body is not valid JSON: {exc.msg} (at character {exc.pos})",
                       "invalid_json") from None
    except NestingError as exc:
        raise ApiError(400, exc.message, "invalid_json") from None


def json_object(data: Any, allowed: set[str], what: str) -> dict[str, Any]:
    """``data`` as a JSON object with only ``allowed`` fields (else a 422 naming the unknown ones)."""
    if not isinstance(data, dict):
        raise ValidationError(f"{what} must be a JSON object")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ValidationError(f"unknown field(s) in {what}: {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
    return data


def is_int(value: Any) -> bool:
    """A JSON integer (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def int_param(params: Any, name: str, default: int | None = None) -> int | None:
    """An integer query parameter (absent or empty: ``default``)."""
    value = params.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValidationError(f"{name} must be an integer, got {value!r}") from None


def float_param(params: Any, name: str, default: float) -> float:
    """A number query parameter (absent or empty: ``default``)."""
    value = params.get(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except ValueError:
        raise ValidationError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise ValidationError(f"{name} must be a finite number, got {value!r}")
    return number


def time_param(params: Any, name: str) -> int | None:
    """``since=2d`` / an ISO date / epoch ms, or ``since_ms=<any integer>``: exact epoch milliseconds (what
    memcli's own client sends: a short or negative number would read as a duration otherwise)."""
    exact = int_param(params, f"{name}_ms")
    if exact is not None:
        return exact
    value = params.get(name)
    return parse_time_ms(value) if value else None


def tags_param(params: Any) -> list[str] | None:
    """`tag=a&tag=b` and/or `tags=a,b`."""
    tags = list(params.getlist("tag"))
    for t in params.getlist("tags"):
        tags += [x for x in (s.strip() for s in t.split(",")) if x]
    return tags or None


def bool_param(params: Any, name: str) -> bool:
    """A yes/no query parameter (``1``, ``true``, ``yes``, ``on`` are yes)."""
    return str(params.get(name, "")).lower() in ("1", "true", "yes", "on")


def if_match(request: Request) -> int | None:
    """The version an ``If-Match`` header names (``"3"``, ``W/"3"``); None when absent or ``*``."""
    value = request.headers.get("if-match")
    if value is None:
        return None
    v = value.strip()
    if v.startswith("W/"):
        v = v[2:]
    v = v.strip('"')
    if v == "*":
        return None
    try:
        return int(v)
    except ValueError:
        raise ValidationError(f"If-Match must be a memory version (an integer), got {value!r}") from None


def write_source(request: Request) -> str:
    """The face a write is recorded as: ``api``, or ``cli`` when the home's own CLI sends it through its warm
    server (header ``X-Memcli-Source: cli``, honoured for the home's token only; a space token writes ``api``)."""
    caller = request.scope.get("state", {}).get("memcli_caller")
    if request.headers.get("x-memcli-source") == "cli" and (caller is None or isinstance(caller, str)):
        return "cli"
    return "api"


def etag(version: int) -> dict[str, str]:
    """The ``ETag`` header of a memory (or card) at ``version``."""
    return {"ETag": f'"{version}"'}
