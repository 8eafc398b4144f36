"""A real S3-compatible server for tests and benches: moto's server mode as a subprocess, buckets, the AWS_*
environment that points memcli at it, and a proxy that drops ``If-None-Match`` (a store without conditional
PUT, to show what memcli does about one)."""

from __future__ import annotations

import http.client
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

KEY_ID, SECRET, REGION = "memcli-test-key", "memcli-test-secret", "us-east-1"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def moto_missing() -> str | None:
    """Why moto's server cannot run here (None: it can)."""
    try:
        import flask  # noqa: F401
        import moto  # noqa: F401
    except ImportError as exc:
        return f"moto[s3] is not installed ({exc}): pip install -e '.[test]'"
    if not _moto_bin():
        return "the moto_server script is missing: pip install 'moto[s3]'"
    return None


def _moto_bin() -> str | None:
    exe = Path(sys.executable).parent / "moto_server"
    return str(exe) if exe.exists() else shutil.which("moto_server")


class MotoServer:
    """``moto_server -H 127.0.0.1 -p PORT``, ready once GET /moto-api/ answers 200."""

    def __init__(self, log: Path) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log = open(log, "wb")
        bin_ = _moto_bin()
        assert bin_, moto_missing()
        self.proc = subprocess.Popen([bin_, "-H", "127.0.0.1", "-p", str(self.port)], stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto_server exited with {self.proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(self.endpoint + "/moto-api/", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("moto_server did not answer within 30 s")
            time.sleep(0.1)

    def create_bucket(self, name: str) -> None:
        import boto3

        boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY_ID, aws_secret_access_key=SECRET,
                     region_name=REGION).create_bucket(Bucket=name)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


def s3_env(endpoint: str, uri: str) -> dict[str, str]:
    """The variables a user sets to put a memcli store on this server."""
    return {"MEMCLI_STORE_URI": uri, "AWS_ACCESS_KEY_ID": KEY_ID, "AWS_SECRET_ACCESS_KEY": SECRET,
            "AWS_REGION": REGION, "AWS_ENDPOINT_URL": endpoint}


class StripIfNoneMatchProxy:
    """An HTTP proxy in front of an S3 server that drops ``If-None-Match``: an S3-compatible store that
    ignores conditional PUT (the signature still verifies on moto, which does not check it)."""

    def __init__(self, upstream_port: int) -> None:
        up = upstream_port
        self.stripped = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("if-none-match", "connection")}
                if "If-None-Match" in self.headers:
                    outer.stripped += 1
                conn = http.client.HTTPConnection("127.0.0.1", up, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    # a HEAD answer's length is the object's (lance reads sizes that way), not its empty body's
                    if k.lower() not in ("transfer-encoding", "connection") and (
                            k.lower() != "content-length" or self.command == "HEAD"):
                        self.send_header(k, v)
                if self.command != "HEAD":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
