"""`memcli import`: read memories from a JSONL or JSON export (idempotent: known ids are skipped).

A JSONL file is streamed: read once to check every line (a bad one imports nothing, naming its line), then
again as the records go to the store chunk by chunk, so memory stays flat in the file's size (stdin is spooled
to a temporary file first). A JSON document (an export with ``--format json``, a JSON array) is read whole.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from memcli.cli.context import use_json
from memcli.cli.output import emit, out, progress
from memcli.errors import ValidationError
from memcli.strictjson import loads


def register(app: typer.Typer) -> None:
    @app.command("import")
    def import_(
        ctx: typer.Context,
        file: str = typer.Argument(..., metavar="FILE", help="A `memcli export` file (JSONL or JSON), or - for stdin."),
        keep_secrets: bool = typer.Option(
            False, "--keep-secrets", help="Store the records exactly as given (by default API keys, tokens, "
            "passwords and private keys are replaced by [REDACTED:kind]); noted in the audit log."),
        json_: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> None:
        """Import memories from an export. Importing the same file twice adds nothing; vectors are reused
        when the file was exported with the same embedder, else re-embedded.

        Example: memcli import memories.jsonl
        """
        st = use_json(ctx, json_)
        with _source(file) as (path, where):
            stream = _jsonl_stream(path, where)
            if stream is None:  # one JSON document: read whole
                header, records = parse_export(_decode(path.read_bytes(), where))
                total: int | None = len(records)
                items: Any = records
            else:
                header, total, items = stream
            identity = (header or {}).get("embedder")
            with progress("Importing") as bar:
                res = st.client().import_records(items, progress=bar, total=total,
                                                 vectors_identity=identity if isinstance(identity, dict) else None,
                                                 **({"keep_secrets": True} if keep_secrets else {}))
        emit({"ok": True, **res}, st.json, lambda d: out.print(
            f"[green]Imported[/green] {d['added']} of {d['read']} memories ({d['skipped']} already present)"))


class _source:
    """The file to import as a path (stdin spooled to a temporary file, removed afterwards) and its name."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.tmp: str | None = None

    def __enter__(self) -> tuple[Path, str]:
        if self.file == "-":
            fd, self.tmp = tempfile.mkstemp(prefix="memcli-import-", suffix=".jsonl")
            with os.fdopen(fd, "wb") as fh:
                src = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None
                if src is not None:
                    shutil.copyfileobj(src, fh, 1 << 20)
                else:
                    fh.write(sys.stdin.read().encode())
            return Path(self.tmp), "stdin"
        path = Path(self.file).expanduser()
        if not path.exists():
            raise ValidationError(f"no such file: {self.file}")
        if path.is_dir():
            raise ValidationError(f"{self.file} is a directory, not an export file")
        try:
            with path.open("rb"):
                pass
        except OSError as exc:
            raise ValidationError(f"cannot read {self.file}: {exc.strerror}") from None
        return path, self.file

    def __exit__(self, *exc: Any) -> None:
        if self.tmp:
            Path(self.tmp).unlink(missing_ok=True)


def _lines(path: Path, where: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of every non-blank line, decoded as UTF-8 (a BOM dropped)."""
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, 1):
            if n == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValidationError(f"{where} is not valid UTF-8 (line {n}, byte {exc.start + 1}); "
                                      "nothing was imported") from None
            if line.strip():
                yield n, line


def _jsonl_stream(path: Path, where: str) -> "tuple[dict[str, Any] | None, int, _Records] | None":
    """A JSONL export checked line by line without holding it: (header, records, the records again as a
    stream); None when the file is one JSON document instead (its first line is not a JSON object alone, or
    it is the only line and holds a whole export)."""
    from memcli.memory.records import record_number, record_to_memory

    first = next(_lines(path, where), None)
    if first is None:
        raise ValidationError("the import file is empty")
    try:
        head = loads(first[1], what=f"line {first[0]}", finite=False)
    except (json.JSONDecodeError, ValidationError):
        return None
    if not isinstance(head, dict) or "memories" in head:
        return None
    header = None
    count = 0
    for n, line in _lines(path, where):
        obj = _line(n, line)
        if count == 0 and header is None and isinstance(obj, dict) and "memcli_export" in obj:
            header = _check_header(obj)
            continue
        with record_number(count, obj) as r:  # as the store would check it: a bad record imports nothing
            try:
                record_to_memory(r)
            except ValidationError as exc:
                raise ValidationError(f"{exc.message}; nothing was imported") from None
        count += 1

    return header, count, _Records(path, where, skip_first=header is not None)


class _Records:
    """A checked JSONL file's records, read again from the file each time it is iterated (a call that falls
    back from the server to the store opened here starts over: nothing is skipped)."""

    def __init__(self, path: Path, where: str, *, skip_first: bool) -> None:
        self.path, self.where, self.skip_first = path, where, skip_first

    def __iter__(self) -> Iterator[Any]:
        skip = self.skip_first
        for n, line in _lines(self.path, self.where):
            if skip:
                skip = False
                continue
            yield _line(n, line)


def _line(n: int, line: str) -> Any:
    try:
        return loads(line, what=f"line {n}", finite=False)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"line {n} is not valid JSON: {exc.msg} (column {exc.colno}); nothing was imported") from None
    except ValidationError as exc:
        raise ValidationError(f"{exc.message}; nothing was imported") from None


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{where} is not valid UTF-8 (byte {exc.start}); nothing was imported") from None


def parse_export(text: str) -> tuple[dict[str, Any] | None, list[Any]]:
    """(header, records) from a JSONL export, a JSON export (`{"memcli_export": 1, "memories": [...]}`),
    a JSON array of records (e.g. `memcli list --json`) or a single JSON record. A number too long to be one
    and deep nesting are refused, naming the line (:func:`memcli.strictjson.loads`); NaN and Infinity are
    read, and refused by the record's check (a vector that holds one is re-embedded)."""
    stripped = text.strip()
    if not stripped:
        raise ValidationError("the import file is empty")
    refused: ValidationError | None = None
    try:
        doc = loads(stripped, what="the import file", finite=False)
    except json.JSONDecodeError:
        doc = None  # not one JSON document: JSONL
    except ValidationError as exc:
        doc, refused = None, exc  # JSONL (its lines say which one), or one document that this refusal is about
    else:
        if isinstance(doc, list):
            return None, doc
        if isinstance(doc, dict):
            if "memcli_export" in doc:
                mems = doc.get("memories", [])
                if not isinstance(mems, list):
                    raise ValidationError("the export's \"memories\" must be a list")
                header = _check_header({k: v for k, v in doc.items() if k != "memories"})
                return header, mems
            return None, [doc]
        raise ValidationError("the import file must hold JSON objects (memories)")
    header: dict[str, Any] | None = None
    records: list[Any] = []
    for n, line in enumerate(stripped.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = loads(line, what=f"line {n}", finite=False)
        except json.JSONDecodeError as exc:
            if refused is not None:
                raise ValidationError(f"{refused.message}; nothing was imported") from None
            raise ValidationError(f"line {n} is not valid JSON: {exc.msg} (column {exc.colno}); nothing was imported") from None
        except ValidationError as exc:
            raise ValidationError(f"{exc.message}; nothing was imported") from None
        if n == 1 and isinstance(obj, dict) and "memcli_export" in obj:
            header = _check_header(obj)
            continue
        records.append(obj)
    return header, records


def _check_header(header: dict[str, Any]) -> dict[str, Any]:
    from memcli.cli.export import EXPORT_VERSION

    version = header.get("memcli_export")
    if not isinstance(version, int) or version < 1:
        raise ValidationError(f"invalid export header: memcli_export must be a version number, got {version!r}")
    if version > EXPORT_VERSION:
        raise ValidationError(f"this file was exported by a newer memcli (format {version}); upgrade memcli to import it")
    return header
