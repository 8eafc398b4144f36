"""REST for the task board, under ``/api/board`` (same token, Guard and error shape as ``/api/memories``).

GET /api/board · GET/POST /api/board/tasks · GET/PATCH /api/board/tasks/{id} · POST /api/board/tasks/{id}/move
· POST /api/board/tasks/{id}/jobs/{name} · GET /api/board/jobs. A stale ``expected_version`` (or ``If-Match``)
is 412 ``version_conflict``; a move the rule forbids is 409 ``invalid_transition``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from memcli.errors import ValidationError
from memcli.server.http import (
    MAX_BODY,
    etag,
    if_match,
    is_int,
    json_object,
    read_json,
    write_source,
)

if TYPE_CHECKING:
    from memcli.server.holder import ServiceHolder

CREATE_FIELDS = {"title", "description", "status", "assignee", "labels", "memory_ids", "agent", "namespace"}
PATCH_FIELDS = {"title", "description", "assignee", "labels", "memory_ids", "add_memory_ids", "expected_version",
                "namespace"}
MOVE_FIELDS = {"to_status", "status", "reason", "expected_version", "agent", "namespace"}
JOB_FIELDS = {"agent", "namespace"}


def board_routes(holder: "ServiceHolder") -> list[BaseRoute]:
    """The board's routes, calling the BoardService of ``holder``'s shared service."""
    async def call(method: str, /, *args: Any, **kwargs: Any) -> Any:
        def go() -> Any:
            from memcli.board.service import board_of

            with holder.use() as svc:
                return getattr(board_of(svc, holder.config), method)(*args, **kwargs)

        return await run_in_threadpool(go)

    async def body(request: Request, allowed: set[str], what: str, *, optional: bool = False) -> dict[str, Any]:
        length = request.headers.get("content-length", "").strip()
        if optional and length in ("", "0") and "chunked" not in request.headers.get("transfer-encoding", ""):
            return {}  # no body at all: nothing to parse
        d = json_object(await read_json(request, MAX_BODY), allowed, what)
        ns = request.query_params.get("namespace")
        return {**d, "namespace": d.get("namespace", ns)} if ns is not None or "namespace" in d else d

    def expected(request: Request, d: dict[str, Any]) -> int | None:
        """If-Match, else the body's expected_version (an integer)."""
        version = if_match(request)
        if version is None and d.get("expected_version") is not None:
            version = d["expected_version"]
            if not is_int(version):
                raise ValidationError("expected_version must be an integer (the version you read)")
        return version

    async def get_board(request: Request) -> Response:
        return JSONResponse(await call("board", namespace=request.query_params.get("namespace")))

    async def list_tasks(request: Request) -> Response:
        q = request.query_params
        tasks = await call("list_tasks", status=q.get("status"), assignee=q.get("assignee"), label=q.get("label"),
                           namespace=q.get("namespace"))
        return JSONResponse([t.item() for t in tasks])

    async def create_task(request: Request) -> Response:
        d = await body(request, CREATE_FIELDS, "the task")
        if "title" not in d:
            raise ValidationError("the task has no title")
        task = await call("create_task", d.pop("title"), **d)
        return JSONResponse({"ok": True, "task_id": task.id, "task": task.item()}, status_code=201,
                            headers=etag(task.version))

    async def get_task(request: Request) -> Response:
        detail = await call("task_detail", request.path_params["task_id"],
                            namespace=request.query_params.get("namespace"))
        return JSONResponse(detail, headers=etag(detail["version"]))

    async def patch_task(request: Request) -> Response:
        d = await body(request, PATCH_FIELDS, "the update")
        version = expected(request, d)
        d.pop("expected_version", None)
        task = await call("update", request.path_params["task_id"], expected_version=version, **d)
        return JSONResponse(task.item(), headers=etag(task.version))

    async def move(request: Request) -> Response:
        d = await body(request, MOVE_FIELDS, "the move")
        target = d.pop("to_status", None) or d.pop("status", None)
        if target is None:
            raise ValidationError("the move has no to_status (the column to move the card to)")
        d.pop("status", None)
        version = expected(request, d)
        d.pop("expected_version", None)
        res = await call("move", request.path_params["task_id"], target, expected_version=version,
                         source=write_source(request), **d)
        return JSONResponse(res.item(), headers=etag(res.task.version))

    async def trigger_job(request: Request) -> Response:
        d = await body(request, JOB_FIELDS, "the job request", optional=True)
        if "namespace" not in d and request.query_params.get("namespace") is not None:
            d["namespace"] = request.query_params["namespace"]
        run = await call("trigger_job", request.path_params["task_id"], request.path_params["job"], **d)
        return JSONResponse({"ok": True, "run": run.item()}, status_code=202)

    async def list_jobs(request: Request) -> Response:
        return JSONResponse(await call("list_jobs"))

    return [
        Route("/api/board", get_board, methods=["GET"]),
        Route("/api/board/jobs", list_jobs, methods=["GET"]),
        Route("/api/board/tasks", list_tasks, methods=["GET"]),
        Route("/api/board/tasks", create_task, methods=["POST"]),
        Route("/api/board/tasks/{task_id}", get_task, methods=["GET"]),
        Route("/api/board/tasks/{task_id}", patch_task, methods=["PATCH"]),
        Route("/api/board/tasks/{task_id}/move", move, methods=["POST"]),
        Route("/api/board/tasks/{task_id}/jobs/{job}", trigger_job, methods=["POST"]),
    ]
