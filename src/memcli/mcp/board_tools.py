"""The task board's MCP tools (the seed's names): get_board, get_task, create_task, move_card, trigger_job,
list_tasks_by_status. Registered on memcli's MCP server by :func:`register_board_tools`; every call goes to
the shared service's :class:`memcli.board.service.BoardService`, and a MemcliError becomes a tool error."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from memcli.errors import MemcliError
from memcli.mcp.results import json_result

if TYPE_CHECKING:
    from memcli.server.holder import ServiceHolder

TaskId = Annotated[str, Field(description="The card's id, like T-12 (its number alone works too).")]
Agent = Annotated[str | None, Field(description="Who you are (your agent name, e.g. codex): the move's memory "
                                                "goes to your scope. Default: the configured agent.")]
Namespace = Annotated[str | None, Field(description="Whose board (a namespace). Default: the configured one.")]

_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def register_board_tools(mcp: MCPServer, holder: "ServiceHolder") -> None:
    """Add the six board tools to ``mcp``."""
    def run(method: str, /, *args: Any, **kwargs: Any) -> Any:
        """One BoardService call on the holder's service, tracked like a memory call."""
        from memcli.board.service import board_of

        try:
            with holder.use() as svc:
                return getattr(board_of(svc, holder.config), method)(*args, **kwargs)
        except MemcliError as exc:
            raise ToolError(exc.message) from None

    @mcp.tool(name="get_board", title="Get the task board", annotations=_READ)
    def get_board(namespace: Namespace = None) -> CallToolResult:
        """The shared task board: every column in order (default backlog → todo → doing → review → done) with
        its cards ({"task_id", "title", "status", "assignee", "labels", "version", "job", ...}), and the names
        of the jobs you may trigger. Look here before picking up work another agent may already be doing."""
        return json_result(run("board", namespace=namespace))

    @mcp.tool(name="get_task", title="Get a task", annotations=_READ)
    def get_task(task_id: TaskId, namespace: Namespace = None) -> CallToolResult:
        """One card in full, with the memories linked to it (explicit links and memories tagged with its id,
        such as the record of each move and its reason) and its job runs (status, exit code, log path).
        Its `version` is what move_card's expected_version wants."""
        return json_result(run("task_detail", task_id, namespace=namespace))

    @mcp.tool(name="create_task", title="Create a task", annotations=_WRITE)
    def create_task(
        title: Annotated[str, Field(description="What is to be done, one line (≤ 200 characters).")],
        description: Annotated[str | None, Field(description="Details, acceptance criteria.")] = None,
        status: Annotated[str | None, Field(description="Column to put it in; default the first (backlog).")] = None,
        assignee: Annotated[str | None, Field(description="The agent who should do it.")] = None,
        labels: Annotated[list[str] | None, Field(description="Free labels, e.g. [\"bug\"].")] = None,
        memory_ids: Annotated[list[str] | None, Field(description="Memories this task is about (ids).")] = None,
        agent: Agent = None,
        namespace: Namespace = None,
    ) -> CallToolResult:
        """Add a card to the shared board; it gets the board's next id (T-1, T-2, …). Returns
        {"ok", "task_id", "task"}."""
        task = run("create_task", title, description=description, status=status, assignee=assignee, labels=labels,
                   memory_ids=memory_ids, agent=agent, namespace=namespace)
        return json_result({"ok": True, "task_id": task.id, "task": task.item()})

    @mcp.tool(name="move_card", title="Move a card", annotations=_WRITE)
    def move_card(
        task_id: TaskId,
        to_status: Annotated[str, Field(description="The column to move it to.")],
        reason: Annotated[str | None, Field(description="Why (kept in memory with the move).")] = None,
        expected_version: Annotated[int | None, Field(description="The version you read (get_task/get_board): "
                                                      "if the card changed since, the move is refused so you "
                                                      "can re-read it instead of overriding another agent.")] = None,
        agent: Agent = None,
        namespace: Namespace = None,
    ) -> CallToolResult:
        """Move a card forward one column (backlog → todo → doing → review → done, no skipping) or back to any
        earlier column (rework; reopening a done card). The move and its reason are remembered in your scope
        ("codex moved T-12 doing → review: tests pass"). Returns {"ok", "task_id", "from", "to", "version",
        "memory_id", "task"}."""
        res = run("move", task_id, to_status, reason=reason, expected_version=expected_version, agent=agent,
                  namespace=namespace, source="mcp")
        return json_result(res.item())

    @mcp.tool(name="trigger_job", title="Run a configured job", annotations=_WRITE)
    def trigger_job(
        task_id: TaskId,
        job: Annotated[str, Field(description="The NAME of a job the user configured (get_board lists them). "
                                              "Not a command: commands come only from the user's config.")],
        agent: Agent = None,
        namespace: Namespace = None,
    ) -> CallToolResult:
        """Start a job the user configured (e.g. "test", "deploy-preview") for a card, in the background. Its
        status (running, succeeded, failed, timed-out), exit code and log path show on the card: poll get_task.
        Returns {"ok", "run": {"run_id", "job", "status", "log_path", ...}}."""
        r = run("trigger_job", task_id, job, agent=agent, namespace=namespace)
        return json_result({"ok": True, "run": r.item()})

    @mcp.tool(name="list_tasks_by_status", title="List tasks in a column", annotations=_READ)
    def list_tasks_by_status(
        status: Annotated[str, Field(description="A column, e.g. todo or doing.")],
        namespace: Namespace = None,
    ) -> CallToolResult:
        """The cards in one column, by number (long descriptions clipped: get_task has them in full). Returns
        a list of task objects."""
        return json_result([t.item(brief=True) for t in run("list_tasks", status=status, namespace=namespace)])
