"""The memory commands' route: this home's warm server first, the store opened in this process otherwise.
No typer and no rich here: the CLI's fast path (:mod:`memcli.cli.fast`) uses it too."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcli.memory.service import MemoryService
    from memcli.models import DuplicateCheck, Memory, RecallHit, RememberResult
    from memcli.team.remote import RemoteService

# Changes: when the server may have received one and no answer came, the CLI says so instead of making it again
# here (it would be made twice, or answered "already there" while the server may still be making it).
CHANGES = frozenset({"remember", "update", "forget", "import_records"})


class Client:
    """``MemoryService``'s memory API — same signatures and return types — asked of the home's server first;
    when it is unavailable (not running, not proven to be this home's, a 5xx, a dropped connection) the same
    call goes to the store, so the answer is never lost. A change the server may have received before the
    connection dropped is not made a second time here: the error says so."""

    def __init__(self, remote: "RemoteService | None", open_local: Callable[[], "MemoryService"]) -> None:
        self.remote = remote
        self.open_local = open_local
        self.server_gone = False  # server.json names a server, but nothing listens on its port any more

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.remote is not None:
            from memcli.team.remote import Unavailable

            try:
                return getattr(self.remote, method)(*args, **kwargs)
            except Unavailable as exc:
                self.server_gone = exc.refused
                if exc.sent and method in CHANGES:
                    from memcli.errors import UnreachableError

                    raise UnreachableError.change_unanswered(method.split("_")[0], str(exc)) from None
                self.remote = None  # and for the rest of this process
        return getattr(self.open_local(), method)(*args, **kwargs)

    def recall(self, query: str, **kwargs: Any) -> "list[RecallHit]":
        return self._call("recall", query, **kwargs)

    def list(self, **kwargs: Any) -> "list[Memory]":
        return self._call("list", **kwargs)

    def get(self, ref: str, **kwargs: Any) -> "Memory":
        return self._call("get", ref, **kwargs)

    def check_duplicate(self, content: str, **kwargs: Any) -> "DuplicateCheck":
        return self._call("check_duplicate", content, **kwargs)

    def stats(self) -> dict[str, Any]:
        return self._call("stats")

    def remember(self, content: str, **kwargs: Any) -> "RememberResult":
        return self._call("remember", content, **kwargs)

    def update(self, ref: str, **kwargs: Any) -> "Memory":
        return self._call("update", ref, **kwargs)

    def forget(self, refs: list[str], **kwargs: Any) -> list[str]:
        return self._call("forget", refs, **kwargs)

    def history(self, ref: str, **kwargs: Any) -> list[Any]:
        return self._call("history", ref, **kwargs)

    def import_records(self, records: Any, **kwargs: Any) -> dict[str, int]:
        return self._call("import_records", records, **kwargs)
