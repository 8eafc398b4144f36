"""The store on object storage (MEMCLI_STORE_URI=s3://…) against a real S3-compatible server (moto's server
mode, started here): the service's CRUD and recall, two `memcli serve` replicas writing at the same time, and
the conditional-PUT check that keeps replicas from losing each other's commits."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from _memcli_server import MEMCLI, ServerProc, free_port, start_server
from _moto import MotoServer, StripIfNoneMatchProxy, moto_missing, s3_env

from memcli.config import load_config
from memcli.errors import ConfigError
from memcli.memory.service import MemoryService

pytestmark = pytest.mark.slow

BUCKET = "memcli-test"

# each replica: SINGLES single writes and BATCHES batches of 10 at once (bench/s3.py runs bigger ones)
SINGLES, BATCHES = 20, 4
TOTAL = 2 * (SINGLES + BATCHES * 10)


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    why = moto_missing()
    if why:
        pytest.skip(why)
    srv = MotoServer(tmp_path_factory.mktemp("moto") / "moto.log")
    srv.create_bucket(BUCKET)
    yield srv
    srv.stop()


def _uri() -> str:
    return f"s3://{BUCKET}/t-{uuid.uuid4().hex[:10]}"


def _env(tmp: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMCLI_", "AWS_"))}
    env.update(MEMCLI_EMBEDDER="hash", HOME=str(tmp / "user-home"), MEMCLI_AUTOSTART="0", **extra)
    return env


# ------------------------------------------------------------------------------------------------ config
def test_store_uri_config(tmp_path: Path) -> None:
    env = s3_env("http://127.0.0.1:9000", "s3://team-bucket/memories/")
    cfg = load_config(tmp_path, env=env)
    assert cfg.data_uri == "s3://team-bucket/memories"
    assert cfg.storage_options == {"aws_access_key_id": "memcli-test-key", "aws_secret_access_key": "memcli-test-secret",
                                   "aws_region": "us-east-1", "aws_endpoint": "http://127.0.0.1:9000",
                                   "allow_http": "true"}
    # the home stays local: only the data moves
    assert cfg.log_dir == tmp_path / "logs"
    (tmp_path / "config.toml").write_text('store_uri = "s3://other/p"\n')
    assert load_config(tmp_path, env={}).data_uri == "s3://other/p"
    for bad in ("s3://", "http://bucket/p", "ftp://x/y"):
        with pytest.raises(ConfigError, match="s3://"):
            load_config(tmp_path, env={"MEMCLI_STORE_URI": bad})


def test_probe_without_a_key_pair() -> None:
    """Credentials from a profile or an instance role cannot sign the probe: AWS itself is trusted (it honours
    conditional PUT) and says so; an S3-compatible endpoint is refused with what to do."""
    from memcli.errors import StoreError
    from memcli.memory.objectstore import check_conditional_put

    assert "not probed" in check_conditional_put("s3://bucket/p", {"aws_region": "eu-west-1"})
    with pytest.raises(StoreError, match="--single-writer"):
        check_conditional_put("s3://bucket/p", {"aws_endpoint": "http://127.0.0.1:9"})
    assert "not checked" in check_conditional_put("s3+ddb://bucket/p?ddbTableName=t", {})


def test_probe_signature_matches_botocore() -> None:
    """The probe's hand-made SigV4 signature is the one AWS's own SDK computes (moto does not verify it)."""
    import datetime as dt
    from unittest import mock

    botocore_auth = pytest.importorskip("botocore.auth")
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    from memcli.memory.objectstore import S3Client

    now = dt.datetime(2026, 3, 4, 5, 6, 7, tzinfo=dt.timezone.utc)
    client = S3Client({"aws_access_key_id": "AKID", "aws_secret_access_key": "SECRET", "aws_session_token": "TOK",
                       "aws_region": "eu-west-1"})
    url, headers = client.sign("PUT", "my-bucket", "team a/_memcli/probe+1", b"x", {"if-none-match": "*"}, now=now)
    assert url == "https://s3.eu-west-1.amazonaws.com/my-bucket/team%20a/_memcli/probe%2B1"
    req = AWSRequest(method="PUT", url=url, data=b"x", headers={"If-None-Match": "*"})
    with mock.patch.object(botocore_auth, "get_current_datetime", return_value=now.replace(tzinfo=None)):
        botocore_auth.S3SigV4Auth(Credentials("AKID", "SECRET", "TOK"), "s3", "eu-west-1").add_auth(req)
    assert headers["authorization"] == req.headers["Authorization"]


# ------------------------------------------------------------------------------------------------ the service
def test_remember_many_on_s3_reports_what_each_memory_duplicates(moto: MotoServer, tmp_path: Path) -> None:
    """A batch's neighbour searches (memcli.memory.lookups.neighbours) on s3: each memory still gets its own
    duplicates and relations, as on a local store."""
    from memcli.memory.service import NewMemory

    base = "alpha beta gamma delta epsilon zeta eta theta"
    port = "the gateway service listens on port 8080 behind the load balancer"
    batch = ["fyi " + base, "the gateway service listens on port 8081 behind the load balancer",
             "an unrelated note about the weekly retro", base + " iota"]
    seen = []
    for name, extra in (("s3", s3_env(moto.endpoint, _uri())), ("local", {})):
        svc = MemoryService.open(load_config(tmp_path / name, env={"MEMCLI_EMBEDDER": "hash", **extra}))
        try:
            ids = {svc.remember(base).memory_id: "base", svc.remember(port).memory_id: "port"}
            res = svc.remember_many([NewMemory(content=c) for c in batch], source="api")
            seen.append([([ids[d] for d in r.duplicate_of], sorted((ids.get(x["memory_id"], "batch"), x["relation"])
                          for x in r.related)) for r in res])
        finally:
            svc.close()
    assert seen[0] == seen[1]
    assert seen[0][0][0] == ["base"] and seen[0][2] == ([], [])
    assert ("port", "conflict") in seen[0][1][1]


def test_import_on_s3_links_a_few_records_and_leaves_the_rest_to_distill(moto: MotoServer, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Linking an imported record against the store is a vector search; on s3 that is S3 requests (61 ms each
    on moto), so an import into an s3 store that held memories links the first LINK_IMPORTED_REMOTE records and
    reports the rest unlinked; into an empty one (the import's own records, searched in memory) or locally all."""
    from memcli.memory import records

    monkeypatch.setattr(records, "LINK_IMPORTED_REMOTE", 2)
    recs = [{"content": f"the release checklist step {i} needs the cache key k{i * 7919} and a canary"}
            for i in range(5)]
    s3 = load_config(tmp_path / "s3", env={"MEMCLI_EMBEDDER": "hash", **s3_env(moto.endpoint, _uri())})
    local = load_config(tmp_path / "local", env={"MEMCLI_EMBEDDER": "hash"})
    empty_s3 = load_config(tmp_path / "s3-empty", env={"MEMCLI_EMBEDDER": "hash", **s3_env(moto.endpoint, _uri())})
    for cfg, unlinked, before in ((s3, 3, 1), (empty_s3, None, 0), (local, None, 1)):
        svc = MemoryService.open(cfg)
        try:
            if before:
                svc.remember("The release checklist lives in the wiki.")
            res = svc.import_records([dict(r) for r in recs])
            assert res["added"] == 5 and res.get("unlinked") == unlinked, (cfg.data_uri, res)
            assert svc.stats()["total"] == 5 + before
        finally:
            svc.close()


def test_service_crud_and_recall_on_s3(moto: MotoServer, tmp_path: Path) -> None:
    cfg = load_config(tmp_path / "home", env={"MEMCLI_EMBEDDER": "hash", **s3_env(moto.endpoint, _uri())})
    svc = MemoryService.open(cfg)
    try:
        a = svc.remember("The billing service stores invoices in PostgreSQL 16", tags=["db"])
        b = svc.remember("数据库选型项目采用 TiDB 作为主库", tags=["db"])
        c = svc.remember("Deploys run from the ops-runner host every Tuesday", tags=["ops"])
        assert svc.get(a.memory_id[-8:]).content.startswith("The billing service")
        svc.update(c.memory_id, content="Deploys run from the ops-runner host every Thursday")
        assert "Thursday" in svc.get(c.memory_id).content and svc.get(c.memory_id).version == 2
        for mode in ("vector", "text", "hybrid"):
            hits = svc.recall("PostgreSQL invoices", mode=mode)
            assert hits and hits[0].memory.id == a.memory_id, mode
        assert svc.recall("数据库", mode="text")[0].memory.id == b.memory_id  # ICU keyword search on s3://
        assert svc.recall("Thursday deploys")[0].memory.id == c.memory_id
        svc.forget(b.memory_id)
        assert {m.id for m in svc.list()} == {a.memory_id, c.memory_id}
        assert [e.action for e in svc.history(c.memory_id)] == ["remember", "update"]  # the audit table too
        st = svc.stats()
        assert st["store"] == cfg.data_uri and st["total"] == 2 and st["size_bytes"] > 0
        assert svc.compact()["compacted"] is True  # under the S3 lease, not an flock
        assert svc.recall("PostgreSQL invoices")[0].memory.id == a.memory_id
    finally:
        svc.close()
    assert not (tmp_path / "home" / "data").exists()  # nothing went to the local disk
    # the CLI of another machine (another home) sees the same store
    env = _env(tmp_path, {"MEMCLI_HOME": str(tmp_path / "home2"), **s3_env(moto.endpoint, cfg.data_uri)})
    out = subprocess.run([MEMCLI, "recall", "PostgreSQL", "--json"], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert a.memory_id in out.stdout
    doctor = subprocess.run([MEMCLI, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert '"object storage"' in doctor.stdout and "conditional PUT honoured" in doctor.stdout, doctor.stdout


# ------------------------------------------------------------------------------------------------ two replicas
@pytest.fixture(scope="module")
def replicas(moto: MotoServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ServerProc]]:
    from concurrent.futures import ThreadPoolExecutor

    tmp = tmp_path_factory.mktemp("replicas")
    env = _env(tmp, s3_env(moto.endpoint, _uri()))
    # two homes (two machines), only the store shared, started at once on a fresh prefix: they race to
    # create its tables
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(start_server, MEMCLI, env, tmp / f"home-{name}") for name in ("a", "b")]
    servers = [f.result() for f in futures if f.exception() is None]
    try:
        assert len(servers) == 2, [str(f.exception()) for f in futures]
        for s in servers:
            s.store_env = env  # type: ignore[attr-defined]
        yield servers
    finally:
        for s in servers:
            s.stop()


def test_two_replicas_write_concurrently_and_lose_nothing(replicas: list[ServerProc]) -> None:
    ns = "team-" + uuid.uuid4().hex[:8]
    acked: dict[str, str] = {}
    errors: list[str] = []
    lock = threading.Lock()

    def record(resp: httpx.Response, contents: list[str]) -> None:
        if resp.status_code not in (200, 201):
            with lock:
                errors.append(f"{resp.status_code} {resp.text[:200]}")
            return
        body = resp.json()
        ids = [r["memory_id"] for r in body["results"]] if "results" in body else [body["memory_id"]]
        with lock:
            acked.update(zip(ids, contents))

    def singles(srv: ServerProc, tag: str, n: int) -> None:
        with srv.client(timeout=240) as c:
            for i in range(n):
                text = f"replica {tag} single {i}: the service {tag}{i} listens on port {10000 + i}"
                record(c.post("/api/memories", json={"content": text, "namespace": ns}), [text])

    def batches(srv: ServerProc, tag: str, n: int, size: int) -> None:
        with srv.client(timeout=240) as c:
            for j in range(n):
                texts = [f"replica {tag} batch {j} item {k}: cache {tag}{j}x{k} expires after {k + 1} hours"
                         for k in range(size)]
                record(c.post("/api/memories/batch", json=[{"content": t, "namespace": ns} for t in texts]), texts)

    threads = []
    for srv, tag in zip(replicas, "ab"):
        threads.append(threading.Thread(target=singles, args=(srv, tag, SINGLES)))
        threads.append(threading.Thread(target=batches, args=(srv, tag, BATCHES, 10)))
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    elapsed = time.monotonic() - started
    assert not errors, errors
    assert len(acked) == TOTAL, f"{len(acked)} acknowledged in {elapsed:.1f}s"
    for srv in replicas:  # every acknowledged write, exactly once, from either replica
        with srv.client(timeout=60) as c:
            items = c.get("/api/memories", params={"namespace": ns, "limit": 1000}).json()
        ids = [it["memory_id"] for it in items]
        assert len(ids) == len(set(ids)) == TOTAL
        assert {it["memory_id"]: it["content"] for it in items} == acked
    # the audit log (its own table on the store) kept every event of those concurrent writes too
    with replicas[1].client(timeout=60) as c:
        events = c.get(f"/api/memories/{next(iter(acked))}/history", params={"namespace": ns}).json()
        assert [e["action"] for e in events] == ["remember"], events
    svc = MemoryService.open(load_config(replicas[0].home.parent / "reader",
                                         env=replicas[0].store_env))  # type: ignore[attr-defined]
    try:
        audited = [r["memory_id"] for r in svc.store.audit.table().to_arrow().to_pylist()]
    finally:
        svc.close()
    assert sorted(audited) == sorted(acked)
    # a memory written through one replica is found by keyword through the other
    mid, text = next((k, v) for k, v in acked.items() if v.startswith("replica a single 7:"))
    with replicas[1].client(timeout=60) as c:
        hits = c.get("/api/search", params={"q": "a7 port 10007", "namespace": ns}).json()
    assert hits and hits[0]["memory_id"] == mid


def test_two_replicas_given_the_same_texts_at_once_store_each_once(replicas: list[ServerProc]) -> None:
    """Replicas share no lock file: the same texts posted to both at the same moment (a retry sent to another
    replica, two agents saying the same thing) are stored once each (a write lease per content), and every
    writer is told the stored copy's id."""
    from concurrent.futures import ThreadPoolExecutor

    ns = "same-" + uuid.uuid4().hex[:8]
    for srv in replicas:  # both warm (their first write in this namespace is not slower than the other's)
        with srv.client(timeout=240) as c:
            assert c.post("/api/memories", json={"content": f"warm up {srv.port}", "namespace": ns}).status_code == 201
    told: list[tuple[str, str]] = []
    texts: list[str] = []
    for rnd in range(3):
        batch = [f"round {rnd}: the flag --dry-run-{i} keeps job j{i} from touching production" for i in range(8)]
        texts += batch
        go = threading.Event()

        def post(srv: ServerProc, text: str) -> str:
            with srv.client(timeout=240) as c:
                go.wait(30)
                r = c.post("/api/memories", json={"content": text, "namespace": ns})
                assert r.status_code in (200, 201), r.text
                return str(r.json()["memory_id"])

        with ThreadPoolExecutor(2 * len(batch)) as pool:
            futures = [(t, pool.submit(post, srv, t)) for t in batch for srv in replicas]
            time.sleep(0.3)  # every client connected
            go.set()
            told += [(t, f.result(timeout=300)) for t, f in futures]
    with replicas[1].client(timeout=60) as c:
        items = c.get("/api/memories", params={"namespace": ns, "limit": 1000}).json()
    stored: dict[str, list[str]] = {}
    for it in items:
        stored.setdefault(it["content"], []).append(it["memory_id"])
    assert {t: len(ids) for t, ids in stored.items() if len(ids) > 1} == {}, "stored more than once"
    assert set(stored) == set(texts) | {f"warm up {srv.port}" for srv in replicas}
    assert all([mid] == stored[t] for t, mid in told)


# ------------------------------------------------------------------------------------------------ conditional PUT
def test_serve_refuses_a_store_without_conditional_put(moto: MotoServer, tmp_path: Path) -> None:
    proxy = StripIfNoneMatchProxy(moto.port)
    try:
        env = _env(tmp_path, {"MEMCLI_HOME": str(tmp_path / "home"), **s3_env(proxy.endpoint, _uri())})
        port = free_port()
        run = subprocess.run([MEMCLI, "serve", "--port", str(port)], env=env, capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 1
        assert "does not honour conditional PUT" in run.stderr and "--single-writer" in run.stderr, run.stderr
        assert "lost" in run.stderr and "s3+ddb://" in run.stderr
        assert proxy.stripped >= 2
        # knowingly one writer: it starts, with a warning, and works
        srv = start_server(MEMCLI, env, tmp_path / "home", "--single-writer")
        try:
            assert "conditional PUT not checked" in srv.log.read_text()
            with srv.client(timeout=60) as c:
                r = c.post("/api/memories", json={"content": "one writer on a store without conditional PUT"})
                assert r.status_code == 201, r.text
                assert c.get(f"/api/memories/{r.json()['memory_id']}").status_code == 200
        finally:
            srv.stop()
    finally:
        proxy.stop()


def test_serve_names_a_missing_bucket(moto: MotoServer, tmp_path: Path) -> None:
    env = _env(tmp_path, {"MEMCLI_HOME": str(tmp_path / "home"),
                          **s3_env(moto.endpoint, "s3://no-such-bucket-memcli/x")})
    run = subprocess.run([MEMCLI, "serve", "--port", str(free_port())], env=env, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 1 and "NoSuchBucket" in run.stderr, run.stderr


def test_compaction_lease_is_one_at_a_time_across_processes(moto: MotoServer) -> None:
    """Replicas on other machines share no flock: the lease object on the bucket lets one compactor in, and a
    lease left by a dead compactor is taken over once stale."""
    import json

    from memcli.memory.objectstore import (
        LEASE_KEY,
        LEASE_STALE_SECONDS,
        CompactionLease,
        S3Client,
        S3Location,
    )

    uri = _uri()
    opts = load_config(Path("/nonexistent"), env=s3_env(moto.endpoint, uri)).storage_options
    first, second = CompactionLease(uri, opts), CompactionLease(uri, opts)
    with first.hold(blocking=False) as a:
        with second.hold(blocking=False) as b:
            assert a is True and b is False
    with second.hold(blocking=False) as b:
        assert b is True  # released
    loc = S3Location.parse(uri)
    dead = json.dumps({"host": "gone", "pid": 1, "at": time.time() - LEASE_STALE_SECONDS - 5}).encode()
    assert S3Client(opts).request("PUT", loc.bucket, loc.key(LEASE_KEY), dead)[0] == 200
    with first.hold(blocking=False) as a:
        assert a is True


def test_write_leases_wait_for_a_live_holder_and_take_over_a_dead_ones(moto: MotoServer) -> None:
    """The same content's writers on two machines take turns; a lease its holder left behind (it died) holds up
    that content's writes only until it is stale, never forever."""
    import json

    from memcli.memory.objectstore import (
        DEDUP_DIR,
        DEDUP_STALE_SECONDS,
        DedupLeases,
        S3Client,
        S3Location,
    )

    uri = _uri()
    opts = load_config(Path("/nonexistent"), env=s3_env(moto.endpoint, uri)).storage_options
    first, second = DedupLeases(uri, opts), DedupLeases(uri, opts)
    entered: list[float] = []

    def other() -> None:
        with second.hold(["same"]):
            entered.append(time.monotonic())

    with first.hold(["same", "another"]):
        t = threading.Thread(target=other)
        t.start()
        time.sleep(0.5)
        assert not entered  # it waits
        released = time.monotonic()
    t.join(30)
    assert entered and entered[0] >= released
    with second.hold(["another"]):  # released: taken at once
        pass
    loc = S3Location.parse(uri)
    dead = json.dumps({"host": "gone", "pid": 1, "at": time.time() - DEDUP_STALE_SECONDS - 5}).encode()
    assert S3Client(opts).request("PUT", loc.bucket, loc.key(f"{DEDUP_DIR}/left"), dead)[0] == 200
    started = time.monotonic()
    with first.hold(["left"]):
        assert time.monotonic() - started < 5
    assert S3Client(opts).request("GET", loc.bucket, loc.key(f"{DEDUP_DIR}/left"))[0] == 404  # and released
