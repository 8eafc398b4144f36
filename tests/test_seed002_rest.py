"""Seed 002's (mem9 / mnemo-server) REST calls, as its design doc writes them, run with curl against a real
`memcli serve` with a space token: create a space ({"name", "agent_name", "agent_type"}), remember with a key
(an upsert), search and filter ``GET /api/memories?q=&tags=&source=&key=&limit=&offset=``, get, ``PUT`` with
``If-Match``, bulk, delete, add a token, the space's info. Also what memcli adds to those shapes: ``offset`` on
``/api/search``, the ``lww`` space policy, ``Idempotency-Key`` on writes.

The one change to the seed's calls: creating a space needs the server's admin token (memcli never lets an
anonymous caller mint tokens); every memory call uses the space token it returned, exactly as the seed does.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _memcli_server import MEMCLI, ServerProc, hash_env, start_server

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")


class Curl:
    """``curl -s`` as the seed writes it, answering (status, JSON, headers)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __call__(self, *args: str) -> tuple[int, Any, dict[str, str]]:
        argv = ["curl", "-s", "-D", "-", *[a.replace("$URL", self.url) for a in args]]
        p = subprocess.run(argv, capture_output=True, timeout=60)  # bytes: text mode would eat the \r of \r\n
        assert p.returncode == 0, (argv, p.stderr)
        head, _, body = p.stdout.decode("utf-8").partition("\r\n\r\n")
        while head.startswith("HTTP/1.1 100"):
            head, _, body = body.partition("\r\n\r\n")
        lines = head.split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
        return int(lines[0].split()[1]), json.loads(body) if body.strip() else None, headers


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProc, Curl, str]]:
    if not Path(MEMCLI).exists():
        pytest.skip("memcli is not installed in this environment")
    tmp = tmp_path_factory.mktemp("seed002")
    srv = start_server(MEMCLI, hash_env(tmp), tmp / "server-home")
    curl = Curl(srv.url)
    # 2. Create space (the seed's call, plus the admin token memcli requires)
    status, d, _ = curl("-X", "POST", "$URL/api/spaces", "-H", f"Authorization: Bearer {srv.token}",
                        "-d", '{"name":"backend-team","agent_name":"alice-claude","agent_type":"claude_code"}')
    assert status == 201, d
    assert d["ok"] is True and d["space_id"] == "backend-team" and d["api_token"].startswith("mnemo_")
    assert (d["agent"], d["agent_type"]) == ("alice-claude", "claude_code")
    yield srv, curl, d["api_token"]
    srv.stop()


def test_an_anonymous_space_creation_is_refused(seed: tuple[ServerProc, Curl, str]) -> None:
    _, curl, token = seed
    status, d, _ = curl("-X", "POST", "$URL/api/spaces",
                        "-d", '{"name":"backend-team","agent_name":"alice-claude","agent_type":"claude_code"}')
    assert status == 401 and d["ok"] is False
    status, _, _ = curl("-X", "POST", "$URL/api/spaces", "-H", f"Authorization: Bearer {token}",
                        "-d", '{"name":"other","agent_name":"x"}')
    assert status == 403  # a space token cannot mint spaces


def test_seed_memory_calls_as_written(seed: tuple[ServerProc, Curl, str]) -> None:
    srv, curl, token = seed
    auth = f"Authorization: Bearer {token}"
    status, made, _ = curl("-X", "POST", "$URL/api/memories", "-H", auth, "-d",
                           '{"content": "TiKV compaction: set level0-file-num to 4 for write-heavy loads", '
                           '"key": "tikv/compaction-tuning", "tags": ["tikv", "performance"], '
                           '"metadata": {"severity": "high"}}')
    assert status == 201, made
    mid = made["memory_id"]
    # the same key again: an upsert of that memory, not a second one
    status, again, _ = curl("-X", "POST", "$URL/api/memories", "-H", auth, "-d",
                            '{"content": "TiKV compaction: level0-file-num = 4 for write-heavy loads", '
                            '"key": "tikv/compaction-tuning", "tags": ["tikv", "performance"]}')
    assert status in (200, 201) and again["memory_id"] == mid
    curl("-X", "POST", "$URL/api/memories", "-H", auth, "-d",
         '{"content": "PD scheduling: raise region-schedule-limit during scale-out", "tags": ["pd"]}')

    # search / list, the seed's query string
    q = "$URL/api/memories?q=compaction&tags=tikv,performance&source=alice-claude&key=tikv/compaction-tuning" \
        "&limit=50&offset=0"
    status, hits, _ = curl(q, "-H", auth)
    assert status == 200 and [h["memory_id"] for h in hits] == [mid]
    assert 0 < hits[0]["score"] <= 1
    for other in ("source=bob-codex", "key=tikv/other"):  # each filter is applied, not ignored
        status, none, _ = curl(f"$URL/api/memories?q=compaction&{other}", "-H", auth)
        assert status == 200 and none == [], other
    status, pd, _ = curl("$URL/api/memories?q=compaction&tags=pd", "-H", auth)
    assert [h["tags"] for h in pd] == [["pd"]]
    for sql in ("key=x%27%20OR%20%271%27%3D%271", "source=x%27%20OR%20%271%27%3D%271"):  # values are data
        assert curl(f"$URL/api/memories?{sql}", "-H", auth)[1] == []
        assert curl(f"$URL/api/memories?q=compaction&{sql}", "-H", auth)[1] == []
    status, listed, _ = curl("$URL/api/memories?key=tikv/compaction-tuning", "-H", auth)
    assert [m["memory_id"] for m in listed] == [mid]
    status, by_agent, _ = curl("$URL/api/memories?source=alice-claude&limit=50&offset=0", "-H", auth)
    assert len(by_agent) == 2  # the writing agent, as mem9's source means it

    status, got, headers = curl(f"$URL/api/memories/{mid}", "-H", auth)
    assert status == 200 and got["key"] == "tikv/compaction-tuning"
    version = got["version"]
    assert headers["etag"] == f'"{version}"'

    # PUT: a full update, guarded by If-Match
    status, put, _ = curl("-X", "PUT", f"$URL/api/memories/{mid}", "-H", auth, "-H", f"If-Match: {version}",
                          "-d", '{"content": "updated: level0-file-num = 8", "tags": ["tikv"]}')
    assert status == 200, put
    assert (put["content"], put["tags"], put["metadata"], put["version"]) == (
        "updated: level0-file-num = 8", ["tikv"], {}, version + 1)
    status, stale, headers = curl("-X", "PUT", f"$URL/api/memories/{mid}", "-H", auth, "-H", f"If-Match: {version}",
                                  "-d", '{"content": "a stale write", "tags": []}')
    assert status == 412 and stale["current_version"] == version + 1  # a refuse space: nothing overwritten
    assert curl(f"$URL/api/memories/{mid}", "-H", auth)[1]["content"] == "updated: level0-file-num = 8"
    status, bad, _ = curl("-X", "PUT", f"$URL/api/memories/{mid}", "-H", auth, "-d", '{"tags": ["x"]}')
    assert status == 422 and "content" in bad["error"]

    # bulk
    status, bulk, _ = curl("-X", "POST", "$URL/api/memories/bulk", "-H", auth, "-d",
                           '{"memories": [{"content": "TiFlash replicas: 2 per table", "key": "tiflash/replicas", '
                           '"tags": ["tiflash"]}, {"content": "TTL jobs run at night", "tags": ["ttl"]}]}')
    assert status == 201 and len(bulk["results"]) == 2

    status, gone, _ = curl("-X", "DELETE", f"$URL/api/memories/{mid}", "-H", auth)
    assert status == 200 and gone["ok"] is True
    assert curl(f"$URL/api/memories/{mid}", "-H", auth)[0] == 404

    # add an agent to the space; the space's metadata (admin token)
    admin = f"Authorization: Bearer {srv.token}"
    status, added, _ = curl("-X", "POST", "$URL/api/spaces/backend-team/tokens", "-H", admin,
                            "-d", '{"agent_name": "sj-openclaw", "agent_type": "openclaw"}')
    assert status == 201 and added["agent"] == "sj-openclaw" and added["api_token"].startswith("mnemo_")
    status, info, _ = curl("$URL/api/spaces/backend-team/info", "-H", admin)
    assert status == 200 and info["space_id"] == "backend-team" and info["active_tokens"] == 2


def test_search_offset_pages_through_the_ranking(seed: tuple[ServerProc, Curl, str]) -> None:
    _, curl, token = seed
    auth = f"Authorization: Bearer {token}"
    for i in range(6):
        curl("-X", "POST", "$URL/api/memories", "-H", auth,
             "-d", json.dumps({"content": f"offset page test {i}: the heron cluster node {i} runs zone {i}"}))
    first4 = [h["memory_id"] for h in curl("$URL/api/search?q=heron+cluster+node&limit=4", "-H", auth)[1]]
    page2 = [h["memory_id"] for h in curl("$URL/api/search?q=heron+cluster+node&limit=2&offset=2", "-H", auth)[1]]
    assert len(first4) == 4 and page2 == first4[2:4]
    via_list = curl("$URL/api/memories?q=heron+cluster+node&limit=2&offset=2", "-H", auth)[1]
    assert [h["memory_id"] for h in via_list] == page2
    status, err, _ = curl("$URL/api/search?q=heron&limit=10&offset=995", "-H", auth)
    assert status == 422 and "offset" in err["error"]


def test_a_space_set_to_lww_lets_a_stale_update_win_and_history_says_so(seed: tuple[ServerProc, Curl, str]) -> None:
    srv, curl, _ = seed
    admin = f"Authorization: Bearer {srv.token}"
    status, d, _ = curl("-X", "POST", "$URL/api/spaces", "-H", admin,
                        "-d", '{"name":"lww-team","agent_name":"ana","conflict":"lww"}')
    assert status == 201 and d["conflict"] == "lww"
    auth = f"Authorization: Bearer {d['api_token']}"
    mid = curl("-X", "POST", "$URL/api/memories", "-H", auth, "-d", '{"content": "deploys freeze on Fridays"}')[1][
        "memory_id"]
    curl("-X", "PUT", f"$URL/api/memories/{mid}", "-H", auth, "-H", "If-Match: 1",
         "-d", '{"content": "deploys freeze on Fridays after 15:00"}')
    status, won, _ = curl("-X", "PUT", f"$URL/api/memories/{mid}", "-H", auth, "-H", "If-Match: 1",
                          "-d", '{"content": "deploys never freeze"}')
    assert status == 200 and won["content"] == "deploys never freeze" and won["version"] == 3
    status, events, _ = curl(f"$URL/api/memories/{mid}/history", "-H", auth)
    assert "last writer wins: based on v1, overwrote v2" in events[-1]["note"]
    assert events[-1]["actor"] == "agent:ana"
    # PATCH too; and the policy can be set back
    assert curl("-X", "PATCH", f"$URL/api/memories/{mid}", "-H", auth, "-H", "If-Match: 1",
                "-d", '{"importance": 0.9}')[0] == 200
    status, _, _ = curl("-X", "PATCH", "$URL/api/spaces/lww-team", "-H", admin, "-d", '{"conflict": "refuse"}')
    assert status == 200
    assert curl("-X", "PATCH", f"$URL/api/memories/{mid}", "-H", auth, "-H", "If-Match: 1",
                "-d", '{"importance": 0.1}')[0] == 412


def test_an_idempotency_key_makes_a_retried_write_answer_the_same_and_write_nothing(
        seed: tuple[ServerProc, Curl, str]) -> None:
    _, curl, token = seed
    auth = f"Authorization: Bearer {token}"
    body = '{"content": "retry-safe: the osprey queue drains every 5 minutes", "key": "osprey/drain"}'
    status, first, h1 = curl("-X", "POST", "$URL/api/memories", "-H", auth, "-H", "Idempotency-Key: req-7f3a",
                             "-d", body)
    assert status == 201 and "idempotent-replayed" not in h1
    version = curl(f"$URL/api/memories/{first['memory_id']}", "-H", auth)[1]["version"]
    status, again, h2 = curl("-X", "POST", "$URL/api/memories", "-H", auth, "-H", "Idempotency-Key: req-7f3a",
                             "-d", body)
    assert (status, again) == (201, first) and h2["idempotent-replayed"] == "true"
    after = curl(f"$URL/api/memories/{first['memory_id']}", "-H", auth)[1]
    assert after["version"] == version  # a key-upsert retried without the key would have been version + 1
    assert len(curl(f"$URL/api/memories/{first['memory_id']}/history", "-H", auth)[1]) == 1
    # the same key for another write is refused; a new key writes
    status, err, _ = curl("-X", "POST", "$URL/api/memories", "-H", auth, "-H", "Idempotency-Key: req-7f3a",
                          "-d", '{"content": "something else entirely"}')
    assert status == 422 and "Idempotency-Key" in err["error"]
    status, upsert, _ = curl("-X", "POST", "$URL/api/memories", "-H", auth, "-H", "Idempotency-Key: req-7f3b",
                             "-d", body)
    assert status == 200 and upsert["memory_id"] == first["memory_id"]
    # a batch too
    batch = '[{"content": "batch retry one: kestrel"}, {"content": "batch retry two: kestrel"}]'
    one = curl("-X", "POST", "$URL/api/memories/batch", "-H", auth, "-H", "Idempotency-Key: b-1", "-d", batch)
    two = curl("-X", "POST", "$URL/api/memories/batch", "-H", auth, "-H", "Idempotency-Key: b-1", "-d", batch)
    assert one[1] == two[1] and two[2]["idempotent-replayed"] == "true"


def test_the_answers_kept_for_retries_are_bounded() -> None:
    """Answers of keyed writes stay within their byte budget (a batch's answer is large), oldest out first;
    a key whose write failed may be tried again."""
    from memcli.memory.idempotency import IdempotencyKeys

    keys = IdempotencyKeys(max_bytes=2_000)
    for i in range(50):
        assert keys.begin("token:t1", f"k{i}", "same") == (False, None)
        keys.finish("token:t1", f"k{i}", ({"memory_id": f"m{i}", "pad": "x" * 300}, 201))
    assert keys.begin("token:t1", "k49", "same")[0] is True
    assert keys.begin("token:t1", "k0", "same") == (False, None)  # evicted: answered by the store's own rule
    assert keys.begin("token:t2", "k49", "same") == (False, None)  # another caller's key space
    keys.abandon("token:t2", "k49")
    assert keys.begin("token:t2", "k49", "same") == (False, None)
