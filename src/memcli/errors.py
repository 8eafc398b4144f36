"""Errors the core raises. Every face turns a MemcliError into a message and an exit/status code."""

from __future__ import annotations

import re


class MemcliError(Exception):
    """Base error: a clear message for the user. ``exit_code`` is what the CLI exits with."""

    exit_code = 1
    http_status = 400
    code = "error"

    def __init__(self, message: str) -> None:
        message = clean_message(message)  # engine text quoted in a message: never its Rust source locations
        super().__init__(message)
        self.message = message


class ValidationError(MemcliError):
    """Input that can never be valid (empty text, importance out of range...)."""

    code = "invalid_input"
    http_status = 422


class NotFoundError(MemcliError):
    """No memory has that id (or prefix)."""

    code = "not_found"
    http_status = 404


class AmbiguousIdError(MemcliError):
    """An id prefix matches more than one memory."""

    code = "ambiguous_id"
    http_status = 409


class VersionConflictError(MemcliError):
    """An update named an expected version that is no longer current."""

    code = "version_conflict"
    http_status = 412

    def __init__(self, message: str, current_version: int | None = None) -> None:
        super().__init__(message)
        self.current_version = current_version  # what a client re-reads and retries from (None: not known)


class EmbedderMismatchError(MemcliError):
    """The store was built with another embedder; vectors would be garbage."""

    code = "embedder_mismatch"
    http_status = 409


class EmbedderError(MemcliError):
    """The embedder failed (network, API error, bad response). Nothing was written."""

    code = "embedder_error"
    http_status = 502


class StoreError(MemcliError):
    """The store is missing, corrupt or unwritable."""

    code = "store_error"
    http_status = 500


class DamagedStoreError(StoreError):
    """A table of the store exists but cannot be read (its versions are gone or garbled): memcli writes
    nothing over it. ``problem`` says what is wrong, ``remedy`` the way out (`memcli doctor` shows both)."""

    def __init__(self, problem: str, remedy: str) -> None:
        super().__init__(f"{problem}. {remedy}")
        self.problem, self.remedy = clean_message(problem), remedy


class ConfigError(MemcliError):
    """The configuration file or an environment variable is invalid."""

    code = "config_error"


class ConflictError(MemcliError):
    """The current state forbids the change (a board transition that is not allowed, a job already running)."""

    code = "conflict"
    http_status = 409


class TransitionError(ConflictError):
    """A board card cannot move from its column to the one asked for."""

    code = "invalid_transition"


class ForbiddenError(MemcliError):
    """The caller may not do this (a space token on an admin route or operation)."""

    code = "forbidden"
    http_status = 403


class UnreachableError(MemcliError):
    """The configured memcli server (MEMCLI_API_URL) could not be reached or refused us."""

    code = "unreachable"
    http_status = 502

    @classmethod
    def change_unanswered(cls, verb: str, detail: str) -> "UnreachableError":
        """A change sent to this home's server that got no answer: it may or may not have been made (the CLI
        does not make it a second time in-process)."""
        return cls(f"this home's server stopped answering during `{verb}` ({detail}); the change may or may not "
                   "have been made: check with `memcli list` or `memcli get ID`")


_SOURCE_LOCATION = re.compile(r",?\s*(?:[A-Za-z]:)?[/\\][^\s,;:'\"]+\.(?:rs|py|c|cc|cpp|h):\d+(?::\d+)?")
# lance/lancedb quote where in their Rust code an error arose: "…, /root/.cargo/registry/src/…/lance-io-13.0.0/
# src/utils.rs:224:20", "…, /rustc/<hash>/library/core/src/ops/function.rs:250:5", "…, location: Location {
# file: "…", line: 653, column: 26 }"; relative ones too ("lance-table/src/io/commit.rs:653:26").
_RUST_LOCATION = re.compile(r",?[ \t]*[^\s,;'\"()]*\.rs:\d+(?::\d+)?")
_LOCATION_BLOCK = re.compile(r",?\s*location:\s*Location\s*\{[^{}]*\}")
_ABS_PATH = re.compile(r"(?<![\w.:/])(?:/[\w.@+\-]+){2,}/?")


def clean_message(message: str) -> str:
    """``message`` without the source locations a library quotes (Rust files of the cargo registry or of the
    toolchain, Location blocks): they help no user and tell a client where things are installed."""
    if ".rs:" not in message and "Location" not in message:
        return message
    return _RUST_LOCATION.sub("", _LOCATION_BLOCK.sub("", message)).rstrip(", ")


def public_message(message: str, status: int) -> str:
    """An error message fit for a client: never a source location of a library (``…/planner.rs:967:13``),
    and in a server error (5xx) no path of the server's machine either."""
    message = _SOURCE_LOCATION.sub("", clean_message(message))
    return _ABS_PATH.sub("<path>", message) if status >= 500 else message
