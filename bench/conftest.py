"""Benchmark fixtures: a temporary COMPOZY_HOME and workspace, a real daemon, and shared helpers.

These files are not part of the test suite (`python3 -m pytest -q` collects `tests/` only).
Run them with `python3 -m pytest bench -q -s`. Files are named bench_*.py; the hook below
collects them without touching the repository's pytest configuration.

Nothing here asserts a wall-clock limit: every figure is printed next to its target and stored
in `benchmark.extra_info`, and every comparison is a ratio against a baseline measured in the
same run (the VM is noisy; see bench/README.md for the spread between runs).
"""

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Daemons and agents start like an installed product, from compiled bytecode: this environment may
# set PYTHONDONTWRITEBYTECODE (every start would compile every module again: ~0.5 s of a boot).
# The bytecode goes to a cache outside the checkout.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(tempfile.gettempdir(), "compozy-bench-pycache"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.harness.api import path_of  # noqa: E402
from tests.harness.daemon import DaemonProcess  # noqa: E402
from tests.harness.fixtures import daemon, home, workspace  # noqa: E402,F401 (fixtures by name)


def pytest_collect_file(file_path, parent):
    """Collect bench_*.py here (setup.cfg's python_files stays test_*.py for the suite)."""
    if file_path.suffix != ".py" or not file_path.name.startswith("bench_"):
        return None
    if parent.session.isinitpath(file_path):
        return None  # named on the command line: pytest's python plugin collects it already
    return pytest.Module.from_parent(parent, path=file_path)


# -- homes and daemons ---------------------------------------------------------------------------


@pytest.fixture
def client(daemon):
    return daemon.client()


def start_daemon(home):
    """A DaemonProcess on an existing home (for module-scoped fixtures that prepare it first)."""
    return DaemonProcess(home).start()


def populate(home, workspace, count):
    """Create `count` sessions in-process with SessionManager on `home` (no daemon may be running).

    1.5-3 ms each with os.fsync stubbed by the caller; the daemon started afterwards indexes them.
    """
    from compozy.config import load as load_config
    from compozy.manager import SessionManager
    from compozy.paths import Home

    home = Home(home)
    manager = SessionManager(home, load_config(home.config_file)).start()
    try:
        for _ in range(count):
            manager.create_session({"workspace_path": str(workspace)})
    finally:
        manager.shutdown()


# -- timing helpers ------------------------------------------------------------------------------


def ms(seconds):
    return seconds * 1000.0


def percentile(values, fraction):
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def summary(seconds):
    """p50/p95/min/max in milliseconds."""
    return {"n": len(seconds), "p50_ms": ms(statistics.median(seconds)), "p95_ms": ms(percentile(seconds, 0.95)),
            "min_ms": ms(min(seconds)), "max_ms": ms(max(seconds))}


def raw_timings(benchmark):
    """The per-round timings pytest-benchmark recorded (seconds)."""
    return list(benchmark.stats.stats.data)


def table(title, header, rows):
    """Print a small fixed-width table (visible with -s)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    line = "  ".join("{:<%d}" % w for w in widths)
    print(f"\n{title}")
    print(line.format(*header))
    print(line.format(*("-" * w for w in widths)))
    for row in rows:
        print(line.format(*row))


def verdict(value, target):
    """Lower is better for every figure here."""
    return "meets target" if value <= target else "MISSES target"


# -- talking to the daemon -----------------------------------------------------------------------


def create_session(client, workspace, **extra):
    _, document = client.call("POST", "/api/sessions", {"workspace_path": str(workspace), **extra})
    return document["session"]


def prompt_path(session):
    return path_of("api", "workspaces", session["workspace_id"], "sessions", session["id"], "prompt")


def stream_prompt(client, session, message):
    """POST a prompt with Accept: text/event-stream and follow it to its terminal event.

    Returns (post_to_admission, admission_to_terminal, terminal_type, frames) in seconds; the
    admission instant is when the `prompt` frame (the admission answer) reached this client.
    """
    start = time.perf_counter()
    admitted = None
    frames = 0
    terminal = None
    events = client.stream("POST", prompt_path(session), {"message": message}, timeout=120)
    try:
        for event, _data in events:
            frames += 1
            if event == "prompt":
                admitted = time.perf_counter()
            elif event in ("done", "error"):
                terminal = event
                break
    finally:
        events.close()
    end = time.perf_counter()
    if admitted is None or terminal is None:
        raise RuntimeError(f"stream ended without admission or terminal event (got {frames} frames)")
    return admitted - start, end - admitted, terminal, frames


# -- the reference agent without the daemon ----------------------------------------------------


class DirectAgent:
    """The reference agent on pipes, driven with newline-delimited JSON-RPC like the daemon does."""

    def __init__(self, cwd, state_dir, log_path):
        env = dict(os.environ)
        env["COMPOZY_REFERENCE_STATE"] = str(state_dir)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen([sys.executable, "-m", "compozy.agents.reference"], cwd=str(cwd), env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log,
                                        start_new_session=True)
        self._ids = iter(range(1, 1 << 30))
        self.session_id = None

    def call(self, method, params):
        """Send a request; return (result, updates seen before the response)."""
        request_id = next(self._ids)
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n"
        self.process.stdin.write(line.encode())
        self.process.stdin.flush()
        updates = 0
        while True:
            raw = self.process.stdout.readline()
            if not raw:
                raise RuntimeError(f"reference agent closed stdout during {method}")
            message = json.loads(raw)
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method} failed: {message['error']}")
                return message["result"], updates
            if message.get("method") == "session/update":
                updates += 1

    def open(self, cwd):
        self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {
            "fs": {"readTextFile": True, "writeTextFile": True}}})
        result, _ = self.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        self.session_id = result["sessionId"]
        return self

    def prompt(self, text):
        start = time.perf_counter()
        result, updates = self.call("session/prompt", {"sessionId": self.session_id,
                                                        "prompt": [{"type": "text", "text": text}]})
        elapsed = time.perf_counter() - start
        assert result.get("stopReason") == "end_turn" and updates >= 1
        return elapsed

    def close(self):
        try:
            self.process.stdin.close()
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()  # only the process this benchmark started
            self.process.wait(10)
        finally:
            self.process.stdout.close()
            self._log.close()


@pytest.fixture
def direct_agent(workspace, tmp_path):
    agent = DirectAgent(workspace, tmp_path / "direct-agent-state", tmp_path / "direct-agent.err").open(workspace)
    yield agent
    agent.close()


# -- shared by the budget benchmarks -------------------------------------------------------------


FULL = os.environ.get("COMPOZY_BENCH_FULL") == "1"  # full-size runs of the heavy budgets


def sized(default, full):
    """The default size keeps `python3 -m pytest bench -q` under 10 minutes; COMPOZY_BENCH_FULL=1 runs the budget's size."""
    return full if FULL else default


def session_path(session, *rest):
    return path_of("api", "workspaces", session["workspace_id"], "sessions", session["id"], *rest)


def rss_mib(pid):
    """Resident set size of one process (children excluded), MiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError(f"no VmRSS for pid {pid}")


def store_bytes(home, session_id):
    """events.db with its WAL, on disk."""
    base = Path(home) / "sessions" / session_id / "events.db"
    return sum(p.stat().st_size for p in (base, base.with_name("events.db-wal")) if p.exists())


def checkpointed_store(home, session_id):
    """(bytes, events, content bytes) of a session's store as it would be checkpointed: a copy is
    measured, because the daemon keeps the store open (and its WAL holds up to 1,000 pages)."""
    import sqlite3
    source = Path(home) / "sessions" / session_id / "events.db"
    copy = source.with_name("probe.db")
    try:
        with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as reader, sqlite3.connect(copy) as target:
            reader.backup(target)
        with sqlite3.connect(copy) as con:
            events, content = con.execute("SELECT count(*), sum(length(content)) FROM events").fetchone()
        return copy.stat().st_size, events, content
    finally:
        copy.unlink(missing_ok=True)
