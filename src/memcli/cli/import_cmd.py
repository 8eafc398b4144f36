"""`memcli import`: read memories from a JSONL or JSON export (idempotent: known ids are skipped)."""

from __future__ import annotations

import json
import sys
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
        text = _read(file)
        header, records = parse_export(text)
        identity = (header or {}).get("embedder")
        with progress("Importing") as bar:
            res = st.client().import_records(records, progress=bar,
                                             vectors_identity=identity if isinstance(identity, dict) else None,
                                             **({"keep_secrets": True} if keep_secrets else {}))
        emit({"ok": True, **res}, st.json, lambda d: out.print(
            f"[green]Imported[/green] {d['added']} of {d['read']} memories ({d['skipped']} already present)"))


def _read(file: str) -> str:
    if file == "-":
        data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
        where = "stdin"
    else:
        path = Path(file).expanduser()
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ValidationError(f"no such file: {file}") from None
        except IsADirectoryError:
            raise ValidationError(f"{file} is a directory, not an export file") from None
        except OSError as exc:
            raise ValidationError(f"cannot read {file}: {exc.strerror}") from None
        where = file
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
