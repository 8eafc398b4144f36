"""REST routes of memcli distill (:mod:`memcli.distill.distiller`), mounted by :mod:`memcli.server.app`.

Every route needs the server's token (``Authorization: Bearer <token>``, like all of ``/api``). Errors use
the API's error shape ``{"ok": false, "error": "...", "code": "..."}``.

``GET /api/distill/plan`` (optional ``?namespace=NS``, ``threshold=0.9``, ``llm=true|false``) — the plan;
nothing changes::

    {"plan": {"archive": [id, ...],                  # expired: status becomes "archived"
              "merge": [{"keep": id, "merge": [id, ...], "content": "...", "namespace": "...",
                         "scope": "global" | "agent:x", "tags": [...], "importance": 0.7,
                         "similarity": 0.93, "condense": false,
                         "why": {id: "the same fact: ..." | "confirmed by the LLM ..."}}, ...],
              "promote": [id, ...],                  # scope becomes "global"
              "reasons": {id: "held by 2 agents" | "importance ≥ 0.8" | ...},
              "conflicts": [{"ids": [newer, older], "authors": ["agent:x", "cli"], "reason": "...",
                             "differences": [["30 minutes", "30 seconds"]], "namespace", "similarity",
                             "created_at"}, ...],    # the same subject, other values: listed, never merged,
                                                     # and listed again after an apply until settled
              "outdated": {older id: newer id},      # the older side of a conflict: never promoted
              "compact": true,                       # apply compacts the table afterwards
              "memories": {id: {"content": "... (≤ 300 chars)", "scope", "namespace", "importance",
                                "created_at", "source"}}},  # every id named above, as the plan read it
     "counts": {"scanned": n, "archive": n, "merge": n, "supersede": n, "promote": n, "conflict": n}}

``POST /api/distill/apply`` (optional JSON body ``{"namespace", "threshold", "llm"}``) — plans again and
applies, after tagging the table's version::

    {"ok": true, "tag": "distill-20261201T081530Z" | null (nothing to do), "counts": {...}, "condensed": n}

A memory changed by another writer meanwhile → 412 ``version_conflict`` and nothing changed: apply again.

``POST /api/distill/undo`` body ``{"tag": "distill-...", "dry_run": false}`` (or ``{}``/no body: the latest) —
reverses exactly what that run changed: each field goes back unless written again since (then kept and
listed); a row untouched since goes back to its version and updated_at too; memories written after the run,
in any namespace, are never touched. ``dry_run``: only say::

    {"ok": true, "restored": "distill-...", "changed": n, "dry_run": false,
     "changes": [{"memory_id", "namespace", "version", "changes": {field: [now, back to]}}, ...],
     "kept": [{"memory_id", "fields": [...], "version"}, ...], "gone": [id forgotten since, ...]}

An unknown tag, or nothing to undo → 404 ``not_found``.

``GET /api/distill/explain?a=ID&b=ID`` — why two memories would or would not merge: ``{"would_merge",
"similarity", "threshold", "relation", "reason", "differences", "explanation", ...}``.

``GET /api/distill/tags`` — newest first::

    {"tags": [{"tag": "distill-...", "version": 12, "created_at": <epoch ms>}, ...]}

A memory's own status is in every memory item: ``"status"`` (``active`` | ``superseded`` | ``archived``),
``"merged_from"`` (ids) and ``"superseded_by"`` (id or null); ``GET /api/memories`` and ``/api/search`` return
superseded and archived memories only with ``include_archived=true``; ``GET /api/memories/{id}`` always.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memcli.errors import ValidationError
from memcli.server.http import bool_param, read_json

if TYPE_CHECKING:
    from memcli.config import Config

Call = Callable[..., Awaitable[Any]]
MAX_BODY = 64 << 10
_APPLY_FIELDS = {"namespace", "threshold", "llm"}


def distill_routes(call: Call, config: "Config") -> list[BaseRoute]:
    """The four distill routes; ``call(method, ...)`` runs a service method in the thread pool."""
    def options(values: dict[str, Any]) -> Any:
        from memcli.distill.distiller import DistillOptions

        threshold = values.get("threshold")
        if threshold is not None:
            try:
                threshold = float(threshold)
            except (TypeError, ValueError):
                raise ValidationError(f"threshold must be a number in (0, 1], got {threshold!r}") from None
        llm = values.get("llm")
        if llm is not None and not isinstance(llm, bool):
            llm = str(llm).lower() in ("1", "true", "yes", "on")
        ns = values.get("namespace")
        if ns is not None and not isinstance(ns, str):
            raise ValidationError("namespace must be a string")
        opts = DistillOptions.from_config(config, llm=llm, threshold=threshold, namespace=ns or None)
        opts.check()
        return opts

    async def body(request: Request, allowed: set[str]) -> dict[str, Any]:
        raw = await request.body()
        if not raw.strip():
            return {}
        data = await read_json(request, MAX_BODY)
        if not isinstance(data, dict):
            raise ValidationError("the body must be a JSON object")
        unknown = sorted(set(data) - allowed)
        if unknown:
            raise ValidationError(f"unknown field(s): {', '.join(unknown)}; allowed: {', '.join(sorted(allowed))}")
        return data

    async def plan(request: Request) -> Response:
        q = request.query_params
        values: dict[str, Any] = {k: q.get(k) for k in ("namespace", "threshold") if q.get(k)}
        if "llm" in q:
            values["llm"] = bool_param(q, "llm")
        result = await call("plan", options(values))
        return JSONResponse(result.to_dict())

    async def apply(request: Request) -> Response:
        opts = options(await body(request, _APPLY_FIELDS))
        return JSONResponse(await call("apply", opts))

    async def undo(request: Request) -> Response:
        d = await body(request, {"tag", "dry_run"})
        tag = d.get("tag")
        if tag is not None and (not isinstance(tag, str) or not tag.strip()):
            raise ValidationError("tag must be a distill tag name, like distill-20261201T081530Z")
        if not isinstance(d.get("dry_run", False), bool):
            raise ValidationError("dry_run must be true or false")
        return JSONResponse(await call("undo", tag.strip() if tag else None,
                                       dry_run=bool(d.get("dry_run"))))

    async def explain(request: Request) -> Response:
        q = request.query_params
        if not q.get("a") or not q.get("b"):
            raise ValidationError("give two memory ids: /api/distill/explain?a=ID&b=ID")
        values: dict[str, Any] = {"threshold": q.get("threshold")} if q.get("threshold") else {}
        return JSONResponse(await call("explain", q["a"], q["b"], options(values)))

    async def tags(request: Request) -> Response:
        return JSONResponse({"tags": await call("tags")})

    return [
        Route("/api/distill/plan", plan, methods=["GET"]),
        Route("/api/distill/apply", apply, methods=["POST"]),
        Route("/api/distill/undo", undo, methods=["POST"]),
        Route("/api/distill/tags", tags, methods=["GET"]),
        Route("/api/distill/explain", explain, methods=["GET"]),
    ]
