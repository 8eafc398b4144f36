"""Object storage for the LanceDB data: ``s3://bucket/prefix`` URIs, their credentials, and the checks that make
several ``memcli serve`` replicas on one dataset safe.

Lance commits a new table version by writing its manifest with a conditional PUT (``If-None-Match: *``): of
two writers racing for version N+1 one wins, the other gets 412, rebases and retries. A store that ignores
the header lets the second writer overwrite the first one's manifest, and that commit is lost without any
error (72–74% of concurrent commits in a proxy simulation here). So a multi-writer process checks the store
first (:func:`check_conditional_put`): put one probe key twice with ``If-None-Match: *``, expect 412.

The probe is a single SigV4-signed request made with the standard library and httpx (both already
dependencies): boto3 is not, and neither lance nor pyarrow exposes a conditional PUT. Only the probe and the
compaction lease use it; every data access goes through lance with the options :func:`memcli.config.storage_options_from_env` reads (with the store URI's check).

Nothing here reads the environment by itself: entry points pass it in.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote as _urlquote
from urllib.parse import urlsplit

from memcli.errors import StoreError

log = logging.getLogger("memcli.memory.objectstore")

PROBE_DIR = "_memcli/probes"
LEASE_KEY = "_memcli/compact.lease"
CREATE_LEASE_KEY = "_memcli/create.lease"
LEASE_STALE_SECONDS = 600.0  # a compactor that died holding the lease frees it after this long
DEDUP_DIR = "_memcli/dedup"
DEDUP_STALE_SECONDS = 60.0  # a write lease older than this is taken over (a write takes well under a second)
_EMPTY_SHA = hashlib.sha256(b"").hexdigest()


class ConditionalPutUnsupported(StoreError):
    """The object store overwrote an existing key despite ``If-None-Match: *``: concurrent commits would be
    lost silently."""

    code = "conditional_put_unsupported"


@dataclass
class S3Location:
    bucket: str
    prefix: str  # no leading or trailing slash; may be empty

    @classmethod
    def parse(cls, uri: str) -> "S3Location":
        parts = urlsplit(uri)
        return cls(bucket=parts.netloc, prefix=parts.path.strip("/"))

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name


# ---------------------------------------------------------------------------------------------- a tiny S3 client
class S3Client:
    """Signed (AWS SigV4) single-object requests: enough for the probe and the lease, nothing more."""

    def __init__(self, options: Mapping[str, str], timeout: float = 10.0) -> None:
        self.access_key = options.get("aws_access_key_id")
        self.secret_key = options.get("aws_secret_access_key")
        self.token = options.get("aws_session_token")
        self.region = options.get("aws_region") or "us-east-1"
        self.endpoint = (options.get("aws_endpoint") or f"https://s3.{self.region}.amazonaws.com").rstrip("/")
        self.timeout = timeout
        self._http: Any = None  # one connection pool: a new httpx client per request cost ~200 ms (its TLS setup)
        self._http_lock = threading.Lock()
        if not (self.access_key and self.secret_key):
            raise StoreError("checking the object store needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the "
                             "environment (the store itself may use a profile or an instance role, the check "
                             "cannot); set them, or start with --single-writer to skip the check")

    def sign(self, method: str, bucket: str, key: str, body: bytes = b"",
             headers: Mapping[str, str] | None = None,
             now: "_dt.datetime | None" = None) -> "tuple[str, dict[str, str]]":
        """The URL (path-style, like lance's object store) and the SigV4-signed headers of one request."""
        path = "/" + _urlquote(bucket, safe="") + "/" + _urlquote(key, safe="/-_.~")
        url = self.endpoint + path
        now = now or _dt.datetime.now(_dt.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        payload_hash = hashlib.sha256(body).hexdigest() if body else _EMPTY_SHA
        hdrs = {"host": urlsplit(url).netloc, "x-amz-content-sha256": payload_hash, "x-amz-date": amz_date}
        if self.token:
            hdrs["x-amz-security-token"] = self.token
        for k, v in (headers or {}).items():
            hdrs[k.lower()] = v
        signed = ";".join(sorted(hdrs))
        canonical = "\n".join([method, path, "", *(f"{k}:{hdrs[k].strip()}" for k in sorted(hdrs)), "", signed,
                               payload_hash])
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key_ = ("AWS4" + str(self.secret_key)).encode()
        for part in (day, self.region, "s3", "aws4_request"):
            key_ = hmac.new(key_, part.encode(), hashlib.sha256).digest()
        sig = hmac.new(key_, to_sign.encode(), hashlib.sha256).hexdigest()
        hdrs["authorization"] = (f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, SignedHeaders={signed}, "
                                 f"Signature={sig}")
        return url, hdrs

    def request(self, method: str, bucket: str, key: str, body: bytes = b"",
                headers: Mapping[str, str] | None = None) -> "tuple[int, bytes]":
        """One signed request. Returns (status, body)."""
        import httpx

        url, hdrs = self.sign(method, bucket, key, body, headers)
        del hdrs["host"]  # httpx sends the same one
        with self._http_lock:
            if self._http is None:
                self._http = httpx.Client(timeout=self.timeout)
        try:
            resp = self._http.request(method, url, content=body, headers=hdrs)
        except httpx.HTTPError as exc:
            raise StoreError(f"cannot reach the object store at {self.endpoint}: {exc}") from exc
        return resp.status_code, resp.content


def _error_code(body: bytes) -> str:
    text = body.decode("utf-8", "replace")
    start = text.find("<Code>")
    return text[start + 6: text.find("</Code>")] if start >= 0 else text[:120]


# ---------------------------------------------------------------------------------------------- the probe
def check_conditional_put(uri: str, options: Mapping[str, str]) -> str:
    """Make sure the store refuses to overwrite a key under ``If-None-Match: *`` (what Lance's s3:// commits
    rely on). Returns what was checked; raises :class:`ConditionalPutUnsupported` (or StoreError when the
    bucket cannot be written at all)."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme != "s3":
        # s3+ddb: DynamoDB orders the commits; gs/az: lance uses their native preconditions
        return f"{scheme}:// commits do not depend on S3 conditional PUT: not checked"
    loc = S3Location.parse(uri)
    if not (options.get("aws_access_key_id") and options.get("aws_secret_access_key")) and not options.get(
            "aws_endpoint"):
        # AWS itself with a profile or an instance role (which only lance's credential chain resolves): AWS S3
        # has honoured If-None-Match since August 2024, and the probe could not sign its request anyway
        return ("AWS S3 honours conditional PUT; not probed (no AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY in the "
                "environment to sign the probe)")
    client = S3Client(options)
    key = loc.key(f"{PROBE_DIR}/{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex}")
    body = b"memcli conditional-put probe\n"
    status, resp = client.request("PUT", loc.bucket, key, body, {"if-none-match": "*"})
    try:
        if status not in (200, 201):
            code = _error_code(resp)
            if status == 501 or code == "NotImplemented":
                raise ConditionalPutUnsupported(_unsupported(uri, f"it answered {status} {code} to If-None-Match"))
            raise StoreError(f"cannot write to {uri} (s3://{loc.bucket}/{key}): HTTP {status} {code}. Check the "
                             "bucket, the credentials (AWS_ACCESS_KEY_ID…) and AWS_ENDPOINT_URL / AWS_REGION")
        status2, resp2 = client.request("PUT", loc.bucket, key, body, {"if-none-match": "*"})
        if status2 in (412, 409):  # 409: ConditionalRequestConflict (a racing put) also refuses the overwrite
            return f"conditional PUT honoured by {client.endpoint} (second put: {status2})"
        raise ConditionalPutUnsupported(_unsupported(
            uri, f"a second PUT of the same key with If-None-Match: * answered {status2} instead of 412"))
    finally:
        try:
            client.request("DELETE", loc.bucket, key)
        except StoreError:
            pass


def _unsupported(uri: str, what: str) -> str:
    return (f"the object store behind {uri} does not honour conditional PUT ({what}). Lance commits each table "
            "version with a conditional PUT; without it, replicas writing at the same time overwrite each other's "
            "commits and those memories are lost without an error. Use a store with conditional PUT (AWS S3 "
            "since 2024, MinIO, Cloudflare R2, moto), or a DynamoDB commit store "
            "(MEMCLI_STORE_URI=s3+ddb://BUCKET/PREFIX?ddbTableName=TABLE), or run exactly one server with "
            "`memcli serve --single-writer` (config: [server] single_writer = true)")


# ---------------------------------------------------------------------------------------------- compaction lease
class CompactionLease:
    """One compactor at a time across replicas: a lease object created with ``If-None-Match: *`` (the
    flock of a local store cannot reach other machines). A lease older than LEASE_STALE_SECONDS is taken
    over (its holder died). Without usable credentials or conditional PUT it grants the lease (compaction
    commits are retried on conflicts, so racing compactors cost time, not data)."""

    def __init__(self, uri: str, options: Mapping[str, str], name: str = LEASE_KEY) -> None:
        self.loc = S3Location.parse(uri)
        self.key = self.loc.key(name)
        try:
            self.client: S3Client | None = S3Client(options)
        except StoreError:
            self.client = None

    def _try(self) -> bool:
        assert self.client is not None
        body = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "at": time.time()}).encode()
        status, _ = self.client.request("PUT", self.loc.bucket, self.key, body, {"if-none-match": "*"})
        if status in (200, 201):
            return True
        if status not in (409, 412):
            return True  # the lease cannot work here: behave as without one
        got, held = self.client.request("GET", self.loc.bucket, self.key)
        try:
            at = float(json.loads(held).get("at", 0)) if got == 200 else 0.0
        except ValueError:
            at = 0.0
        if got == 404 or time.time() - at > LEASE_STALE_SECONDS:
            self.client.request("DELETE", self.loc.bucket, self.key)
            status, _ = self.client.request("PUT", self.loc.bucket, self.key, body, {"if-none-match": "*"})
            return status in (200, 201)
        return False

    @contextmanager
    def hold(self, blocking: bool, wait_seconds: float = 300.0) -> Iterator[bool]:
        if self.client is None:
            yield True
            return
        deadline = time.monotonic() + wait_seconds
        try:
            owner = self._try()
            while not owner and blocking and time.monotonic() < deadline:
                time.sleep(1.0)
                owner = self._try()
        except StoreError as exc:
            log.warning("compaction lease unavailable (%s): compacting without it", exc)
            yield True
            return
        if not owner:
            yield False
            return
        try:
            yield True
        finally:
            try:
                self.client.request("DELETE", self.loc.bucket, self.key)
            except StoreError as exc:  # it goes stale and is taken over later
                log.warning("releasing the compaction lease: %s", exc)


class DedupLeases:
    """Leases on content identities (memcli.memory.writelock): replicas remembering the same text at once take turns
    to look for it and write it. A lease is an object ``_memcli/dedup/<name>`` created with ``If-None-Match: *``
    and deleted after the write; one older than DEDUP_STALE_SECONDS is taken over (its holder died, or a
    write took that long). A writer takes every lease of its batch at once or none (it gives back what it got
    and tries again), so two batches never wait for each other in a circle; after ``wait_seconds`` it fails
    as a busy store does. Without usable credentials or conditional PUT it writes without them (logged)."""

    def __init__(self, uri: str, options: Mapping[str, str]) -> None:
        self.loc = S3Location.parse(uri)
        self._warned = False  # "writing without leases" is logged once, not on every write
        try:
            self.client: S3Client | None = S3Client(options, timeout=5.0)
        except StoreError:
            self.client = None

    def _take(self, key: str) -> str:
        """One lease: "taken", "busy" (another writer holds it) or "unusable" (this store cannot lease)."""
        try:
            return self._try_take(key)
        except StoreError as exc:
            self._unusable(str(exc))
            return "unusable"

    def _unusable(self, why: str) -> None:
        (log.debug if self._warned else log.warning)("write lease unavailable (%s): writing without it", why)
        self._warned = True

    def _try_take(self, key: str) -> str:
        assert self.client is not None
        body = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "at": time.time()}).encode()
        status, _ = self.client.request("PUT", self.loc.bucket, key, body, {"if-none-match": "*"})
        if status in (200, 201):
            return "taken"
        if status not in (409, 412):
            self._unusable(f"HTTP {status}")
            return "unusable"
        got, held = self.client.request("GET", self.loc.bucket, key)
        try:
            at = float(json.loads(held).get("at", 0)) if got == 200 else 0.0
        except (ValueError, AttributeError):
            at = 0.0
        if got == 404 or time.time() - at > DEDUP_STALE_SECONDS:
            if got != 404:
                self.client.request("DELETE", self.loc.bucket, key)
            status, _ = self.client.request("PUT", self.loc.bucket, key, body, {"if-none-match": "*"})
            return "taken" if status in (200, 201) else "busy"
        return "busy"

    def _release(self, keys: list[str]) -> None:
        assert self.client is not None
        for key in keys:
            try:
                self.client.request("DELETE", self.loc.bucket, key)
            except StoreError as exc:  # it goes stale and is taken over later
                log.warning("releasing a write lease: %s", exc)

    @contextmanager
    def hold(self, names: list[str], wait_seconds: float = 180.0) -> Iterator[None]:
        if self.client is None or not names:
            yield
            return
        from concurrent.futures import ThreadPoolExecutor

        keys = [self.loc.key(f"{DEDUP_DIR}/{n}") for n in names]
        held: list[str] = []
        deadline = time.monotonic() + wait_seconds
        delay = 0.02
        with ThreadPoolExecutor(max_workers=min(16, len(keys)), thread_name_prefix="memcli-lease") as pool:
            while True:
                outcomes = list(pool.map(self._take, keys)) if len(keys) > 1 else [self._take(keys[0])]
                held = [k for k, o in zip(keys, outcomes) if o == "taken"]
                if "busy" not in outcomes or "unusable" in outcomes:
                    break
                self._release(held)
                held = []
                if time.monotonic() > deadline:
                    raise StoreError(f"writing to the store failed: the store is busy (other writers held the "
                                     f"same memories' write leases for {wait_seconds:.0f} s); nothing was "
                                     "written, try again")
                time.sleep(delay * (0.5 + random.random()))  # jittered: two writers must not retry in lockstep
                delay = min(delay * 2, 0.5)
            try:
                yield
            finally:
                self._release(held)


def creation_guard(uri: str, options: Mapping[str, str]) -> "AbstractContextManager[bool]":
    """One table creator at a time on an s3:// store. Two replicas creating the same table at once (a fresh
    prefix, both starting or writing their first audit event) raced here: one's create became an Overwrite
    after the other's first append, which then failed as incompatible; creating under a lease, after
    checking again that the table is still missing, leaves one creator."""
    if not uri.lower().startswith("s3://"):
        return nullcontext(True)
    return CompactionLease(uri, options, CREATE_LEASE_KEY).hold(blocking=True, wait_seconds=60.0)
