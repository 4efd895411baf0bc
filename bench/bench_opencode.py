"""Side by side with opencode (optional): create, list and memory, both measured in this run.

Runs only when `opencode` (npm `opencode-ai`) is on PATH, or installed by the interop suite
(tests/interop, in $COMPOZY_INTEROP_DIR/adapters/opencode), and CI is not set; skipped otherwise, so it
never runs in CI. `opencode serve` starts here without a model. Each side gets the same client:
sequential POSTs with a new connection each, then one list, then the server's RSS (its own
process; compozy's agents are not started).
"""

import http.client
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.harness.daemon import auth_for  # our daemon's secret; opencode's port needs none
from conftest import ms, rss_mib, table

CREATES = 200
INTEROP = Path(os.environ.get("COMPOZY_INTEROP_DIR") or Path.home() / ".cache" / "compozy-interop")
INSTALLED = INTEROP / "adapters" / "opencode" / "node_modules" / ".bin" / "opencode"
OPENCODE = shutil.which("opencode") or (str(INSTALLED) if INSTALLED.exists() else None)

pytestmark = pytest.mark.skipif(OPENCODE is None or bool(os.environ.get("CI")),
                                reason="opencode is not installed (or this is CI)")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _request(port, method, path, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        headers = {**auth_for(port), **({"Content-Type": "application/json"} if payload else {})}
        connection.request(method, path, payload, headers)
        response = connection.getresponse()
        data = response.read()
        assert response.status < 300, (method, path, response.status, data[:200])
        return data
    finally:
        connection.close()


def _side(port, pid, create_path, create_body, list_path):
    times = []
    for _ in range(CREATES):
        start = time.perf_counter()
        _request(port, "POST", create_path, create_body)
        times.append(time.perf_counter() - start)
    start = time.perf_counter()
    _request(port, "GET", list_path)
    listed = time.perf_counter() - start
    return len(times) / sum(times), ms(sorted(times)[len(times) // 2]), ms(listed), rss_mib(pid)


def test_side_by_side(benchmark, daemon, workspace, tmp_path):
    port = _free_port()
    env = dict(os.environ, HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path / "data"),
               XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_STATE_HOME=str(tmp_path / "state"))
    opencode = subprocess.Popen([OPENCODE, "serve", "--port", str(port), "--hostname", "127.0.0.1"], cwd=workspace,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                _request(port, "GET", "/session")
                break
            except OSError:
                time.sleep(0.2)
        theirs = _side(port, opencode.pid, "/session", {}, "/session")
        ours_port = int(daemon.http_url.rsplit(":", 1)[1])
        ours = benchmark.pedantic(_side, args=(ours_port, daemon.process.pid, "/api/sessions",
                                               {"workspace_path": str(workspace)}, "/api/sessions?limit=1000"),
                                  rounds=1, iterations=1)
    finally:
        opencode.terminate()
        opencode.wait(30)
    rows = [(name, f"{rate:.0f}", f"{p50:.2f}", f"{listed:.1f}", f"{rss:.1f}")
            for name, (rate, p50, listed, rss) in (("compozy", ours), ("opencode", theirs))]
    table(f"side by side, {CREATES} creates each (new connection each), then one list",
          ("server", "creates/s", "create p50 ms", f"list {CREATES} ms", "RSS MiB"), rows)
    benchmark.extra_info.update(compozy=list(ours), opencode=list(theirs))
