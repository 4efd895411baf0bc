"""Where the time goes: per-function timing of the benchmarked paths, for diagnosis (not a benchmark).

    python3 bench/breakdown.py create|list|prompt|chunks|all

Names imported with `from x import y` are wrapped where they are used (e.g. eventlog.new_id).
Runs the real Flask app on a real waitress server inside this process (so every thread is
visible), wraps the functions listed in SPANS with timers (compozy/ is patched at runtime,
never edited), drives the same requests the benchmarks send, and prints, per function:
calls per operation, median duration and total time per operation. Nested spans overlap
(a caller's time includes its callees'); times are wall-clock, so they include waiting for
the GIL and for other threads. The wrappers cost a few microseconds per call.
"""

import collections
import functools
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from compozy.cli.client import Client  # noqa: E402
from compozy.config import load as load_config  # noqa: E402
from compozy.daemon import listen  # noqa: E402
from compozy.http import app as http_app  # noqa: E402
from compozy.manager import SessionManager  # noqa: E402
from compozy.http.auth import Auth  # noqa: E402
from compozy.paths import Home, ensure_auth_token  # noqa: E402
from conftest import create_session, stream_prompt  # noqa: E402

SPANS = {  # module path -> (owner attribute path, ...)
    "waitress.task": ("WSGITask.execute",),
    "flask": ("Flask.full_dispatch_request",),
    "compozy.http.app": ("jsonify",),
    "compozy.http.sse": ("frame",),
    "os": ("fsync",),
    "compozy.paths": ("write_private_file",),
    "compozy.manager": ("SessionManager.create_session", "SessionManager.list_sessions", "SessionManager._list_row",
                        "SessionManager.prompt_stream", "SessionManager._session"),
    "compozy.serialize": ("session_resource",),
    "compozy.session.records.store": ("SessionStore.create", "SessionStore.save"),
    "compozy.session.records.workspaces": ("Workspaces.for_path",),
    "compozy.store.catalog": ("Catalog.workspace_by", "Catalog.upsert_sessions", "Catalog.list_sessions",
                              "Catalog.admission", "Catalog.admission_by_message", "Catalog.add_admission",
                              "Catalog.update_admission", "Catalog.entries"),
    "compozy.store.eventlog": ("EventLog.create", "EventLog.append", "new_id"),
    "compozy.session.turns.admission": ("Admission.prompt",),
    "compozy.session.turns.queue": ("InputQueue.started",),
    "compozy.session.turns.binding": ("Binder.bind",),
    "compozy.session.turns.runner": ("Runner._send_prompt", "Runner._finish"),
    "compozy.session.records.live": ("LiveSession.append_event", "RuntimeEvents.output"),
    "compozy.acp.client": ("AgentClient.on_updates",),
    "compozy.acp.protocol": ("parse_line",),
}

spans = collections.defaultdict(list)


def _wrap(owner, name, label):
    original = getattr(owner, name, None)
    if original is None:
        return  # renamed since this script was written: skip rather than fail

    @functools.wraps(original)
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spans[label].append(time.perf_counter() - start)
    setattr(owner, name, timed)


def install():
    import importlib
    for module_name, names in SPANS.items():
        module = importlib.import_module(module_name)
        for dotted in names:
            owner, _, name = dotted.rpartition(".")
            target = getattr(module, owner, None) if owner else module
            if target is not None:
                _wrap(target, name, f"{module_name.rsplit('.', 1)[-1]}.{dotted}")


def report(title, operations, elapsed):
    print(f"\n== {title}: {operations} operations, client-side p50 {statistics.median(elapsed) * 1e3:.2f} ms")
    print(f"   {'function':48s} {'calls/op':>9s} {'p50 ms':>9s} {'total ms/op':>12s}")
    for label, values in sorted(spans.items(), key=lambda item: -sum(item[1])):
        print(f"   {label:48s} {len(values) / operations:9.1f} {statistics.median(values) * 1e3:9.3f} "
              f"{sum(values) / operations * 1e3:12.2f}")
    spans.clear()


class InProcessDaemon:
    def __init__(self, root):
        self.home = Home(root / "home").ensure()
        self.manager = SessionManager(self.home, load_config(self.home.config_file)).start()
        sock = listen.bind_tcp("127.0.0.1", 0)
        port = sock.getsockname()[1]
        secret = ensure_auth_token(self.home)
        self.servers = listen.serve(http_app.create_app(self.manager, port, auth=Auth(secret, port)), [sock],
                                    listen.resource.RLIM_INFINITY)
        threading.Thread(target=self.servers[0].run, daemon=True).start()
        self.client = Client(f"http://127.0.0.1:{port}", token=secret)

    def close(self):
        self.manager.shutdown()
        for srv in self.servers:
            srv.close()


def timed(operation, count, pause=0.0):
    elapsed = []
    for _ in range(count):
        start = time.perf_counter()
        operation()
        elapsed.append(time.perf_counter() - start)
        time.sleep(pause)
    return elapsed


def run_create(daemon, workspace):
    for _ in range(10):
        create_session(daemon.client, workspace)
    spans.clear()
    report("POST /api/sessions", 200, timed(lambda: create_session(daemon.client, workspace), 200))


def run_list(daemon, workspace):
    with mock.patch("os.fsync", lambda fd: None):
        while len(daemon.manager.catalog.session_ids()) < 1000:
            daemon.manager.create_session({"workspace_path": str(workspace)})
    daemon.client.call("GET", "/api/sessions", query={"limit": 1000})
    spans.clear()
    report("GET /api/sessions?limit=1000 (1,000 sessions)", 20,
           timed(lambda: daemon.client.call("GET", "/api/sessions", query={"limit": 1000}), 20))


def run_prompt(daemon, workspace, message="hello", count=30, pause=0.05):
    session = create_session(daemon.client, workspace)
    for _ in range(3):
        stream_prompt(daemon.client, session, message)
    spans.clear()
    phases = []
    elapsed = timed(lambda: phases.append(stream_prompt(daemon.client, session, message)), count, pause)
    admission = statistics.median(p[0] for p in phases) * 1e3
    to_done = statistics.median(p[1] for p in phases) * 1e3
    report(f"warm prompt {message!r} (POST->admission p50 {admission:.2f} ms, admission->done p50 {to_done:.2f} ms)",
           count, elapsed)


def main(argv):
    which = argv[1] if len(argv) > 1 else "all"
    install()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        workspace = root / "workspace"
        workspace.mkdir()
        os.environ["COMPOZY_HOME"] = str(root / "home")
        daemon = InProcessDaemon(root)
        try:
            if which in ("create", "all"):
                run_create(daemon, workspace)
            if which in ("prompt", "all"):
                run_prompt(daemon, workspace)
            if which in ("chunks", "all"):
                run_prompt(daemon, workspace, "[chunks 5000] x", count=3, pause=0.2)
            if which in ("list", "all"):
                run_list(daemon, workspace)
        finally:
            daemon.close()


if __name__ == "__main__":
    main(sys.argv)
