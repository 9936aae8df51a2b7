"""A local Cloud Storage stand-in that TensorFlow's own gs:// file system talks to.

TensorFlow's gs:// client has no endpoint setting: it always calls
https://www.googleapis.com and https://storage.googleapis.com. It does honour, through
its libcurl, `https_proxy` and `CURL_CA_BUNDLE`, and it takes a fixed bearer token from
`GOOGLE_AUTH_TOKEN_FOR_TESTING`. So the stand-in is two local processes:

  - gcp-storage-emulator (PyPI), an in-memory Cloud Storage JSON API on plain HTTP;
  - the proxy below: it answers CONNECT for those two hosts only, ends TLS with a
    throw-away certificate (made here with `openssl`, trusted through CURL_CA_BUNDLE)
    and passes each request on to the emulator.

The proxy also fills three gaps between TensorFlow 2.21's client and the emulator: it
de-chunks request bodies (TensorFlow sends `Transfer-Encoding: chunked` together with a
`Content-Length`, and the emulator reads `Content-Length` bytes, i.e. the chunk framing);
it turns an empty `uploadType=media` upload (a directory marker, which the emulator fails
on) into an empty resumable upload; and it answers `GET b/<bucket>/storageLayout` (no
hierarchical namespace), which TensorFlow asks before it renames a directory and which the
emulator does not serve.

Use `stand_in(directory, bucket)`: a context manager that yields the environment
variables that send this process's (or a child's) gs:// traffic to the stand-in.
Run as a script, this file is the proxy.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import http.server
import importlib.util
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from typing import Dict, Iterator

HOSTS = ("www.googleapis.com", "storage.googleapis.com")
EMULATOR = "gcp-storage-emulator==2026.7.19"


def _proxy(upstream: str, cert: str, key: str) -> None:
    up_host, up_port = upstream.rsplit(":", 1)
    upstream_url = f"http://{upstream}"
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    log = os.environ.get("GCS_STAND_IN_LOG")  # a file to which each request and its status are appended

    def send(method, path, body, headers):
        conn = http.client.HTTPConnection(up_host, int(up_port), timeout=60)
        try:
            conn.request(method, path, body=body, headers={**headers, "Content-Length": str(len(body))})
            resp = conn.getresponse()
            return resp.status, resp.reason, resp.getheaders(), resp.read()
        finally:
            conn.close()

    class Forward(http.server.BaseHTTPRequestHandler):
        """One TLS connection from TensorFlow: each request goes to the emulator."""

        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _body(self) -> bytes:
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                body = b""
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline().strip():  # trailers
                            pass
                        return body
                    body += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _forward(self):
            body = self._body()
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("host", "expect", "transfer-encoding", "content-length", "connection")}
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            layout = re.fullmatch(r"/storage/v1/b/([^/?]+)/storageLayout", urllib.parse.urlsplit(self.path).path)
            if self.command == "GET" and layout:
                status, reason, out_headers, data = send("GET", f"/storage/v1/b/{layout.group(1)}", b"", headers)
                if status == 200:
                    data = json.dumps({"kind": "storage#storageLayout", "bucket": layout.group(1),
                                       "hierarchicalNamespace": {"enabled": False}}).encode()
                    out_headers = [("Content-Type", "application/json")]
            elif self.command == "POST" and query.get("uploadType") == ["media"] and not body:
                status, reason, out_headers, data = send(
                    "POST", self.path.replace("uploadType=media", "uploadType=resumable"), b"", headers)
                location = {k.lower(): v for k, v in out_headers}.get("location", "")
                if status == 200 and location:
                    status, reason, out_headers, data = send("PUT", location.removeprefix(upstream_url), b"", {})
            else:
                status, reason, out_headers, data = send(self.command, self.path, body, headers)
            if log:
                with open(log, "a") as f:
                    f.write(f"{self.command} {self.path} -> {status}\n")
            self.send_response_only(status, reason)
            for k, v in out_headers:
                if k.lower() in ("transfer-encoding", "content-length", "connection", "server", "date"):
                    continue
                if k.lower() == "location":
                    v = v.replace(upstream_url, "https://www.googleapis.com")
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward

    class Connect(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_CONNECT(self):
            if self.path.rsplit(":", 1)[0] not in HOSTS:
                self.send_error(403, f"This proxy serves only {', '.join(HOSTS)}")
                return
            self.send_response(200, "Connection established")
            self.end_headers()
            Forward(tls.wrap_socket(self.connection, server_side=True), self.client_address, self.server)
            self.close_connection = True

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Connect)
    print(server.server_address[1], flush=True)
    server.serve_forever()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def missing() -> str:
    """Why the stand-in cannot start here, or "" if it can."""
    if importlib.util.find_spec("gcp_storage_emulator") is None:
        return f"the Cloud Storage emulator is not installed: pip install {EMULATOR}"
    if shutil.which("openssl") is None:
        return "openssl (which makes the stand-in's TLS certificate) is not on PATH"
    return ""


@contextlib.contextmanager
def stand_in(directory: str, bucket: str) -> Iterator[Dict[str, str]]:
    """Starts the emulator (with `bucket`) and the proxy; yields the environment that routes gs:// to them."""
    os.makedirs(directory, exist_ok=True)
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-keyout", key,
                    "-out", cert, "-subj", f"/CN={HOSTS[0]}",
                    "-addext", "subjectAltName=" + ",".join(f"DNS:{h}" for h in HOSTS)],
                   check=True, capture_output=True)
    port = _free_port()
    processes = []
    try:
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "gcp_storage_emulator", "start", "--host=127.0.0.1", f"--port={port}",
             "--in-memory", f"--default-bucket={bucket}", "--quiet"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=directory))
        deadline = time.time() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
                break
            except OSError:
                if time.time() > deadline or processes[0].poll() is not None:
                    raise RuntimeError("The Cloud Storage emulator did not start.")
                time.sleep(0.1)
        proxy = subprocess.Popen([sys.executable, os.path.abspath(__file__), f"--upstream=127.0.0.1:{port}",
                                  f"--cert={cert}", f"--key={key}"], stdout=subprocess.PIPE, text=True)
        processes.append(proxy)
        proxy_port = int(proxy.stdout.readline())
        proxy_url = f"http://127.0.0.1:{proxy_port}"
        # libcurl reads the lower-case name first, so both are set (a real proxy in the caller's
        # environment must not take the traffic); no_proxy must not exempt the Google hosts.
        yield {"https_proxy": proxy_url, "HTTPS_PROXY": proxy_url, "no_proxy": "", "NO_PROXY": "",
               "CURL_CA_BUNDLE": cert, "GOOGLE_AUTH_TOKEN_FOR_TESTING": "stand-in", "NO_GCE_CHECK": "true"}
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", required=True, help="host:port of the emulator")
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    _proxy(args.upstream, args.cert, args.key)
