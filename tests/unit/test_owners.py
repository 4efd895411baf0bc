"""Every background thread, process, clock read and JSON-RPC message of the daemon has one owner
(issue 23 item 4): compozy/threads.py starts the threads, compozy/proc.py starts and signals the
processes, compozy/clock.py reads the time and compozy/jsonrpc.py frames JSON-RPC. An ast walk over
the daemon's modules finds any other place doing it; the reference agent (compozy/agents/, a process
of its own) and the CLI (compozy/cli/, the client's process) are not the daemon.

The Threads owner itself is tested beside: named, counted, joined at shutdown.
"""

import ast
import threading
from pathlib import Path

from compozy.threads import Threads
from tests.harness.api import wait_for

PACKAGE = Path(__file__).resolve().parents[2] / "compozy"
NOT_THE_DAEMON = ("agents/", "cli/")
# The deferred fsync of meta.json is one thread for the whole process (every daemon of it shares it and
# atexit flushes it), started once: no daemon owns it.
PROCESS_WIDE_THREADS = {"store/flusher.py"}
THREAD_CALLS = {"threading.Thread", "threading.Timer", "Thread", "Timer"}
# A child the daemon keeps running (and must stop by the ladder); a command run to its end in the
# foreground (subprocess.run: a login in the terminal, a registry install) leaves nothing to own.
PROCESS_CALLS = {"subprocess.Popen", "os.killpg", "os.kill", "os.fork", "PopenSpawn"}
# A ULID's milliseconds order IDs; nobody reads them as a time (compozy/ids.py).
CLOCK_OWNERS = {"clock.py", "ids.py"}
CLOCK_CALLS = {"time.time", "time.monotonic", "time.time_ns", "time.monotonic_ns", "datetime.now", "datetime.utcnow"}


def daemon_modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if not relative.startswith(NOT_THE_DAEMON):
            yield relative, ast.parse(path.read_text(encoding="utf-8"))


def dotted(node):
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    return node.id if isinstance(node, ast.Name) else ""


def calls_outside(owners, names):
    return [f"{relative}:{node.lineno}: {dotted(node.func)}" for relative, tree in daemon_modules()
            if relative not in owners for node in ast.walk(tree)
            if isinstance(node, ast.Call) and dotted(node.func) in names]


def test_only_the_threads_owner_starts_a_thread():
    assert calls_outside({"threads.py"} | PROCESS_WIDE_THREADS, THREAD_CALLS) == []


def test_only_the_process_seam_starts_or_signals_a_process():
    assert calls_outside({"proc.py"}, PROCESS_CALLS) == []


def test_only_the_clock_reads_the_time():
    assert calls_outside(CLOCK_OWNERS, CLOCK_CALLS) == []


def test_only_the_framing_leaf_spells_the_json_rpc_envelope():
    spelled = [f"{relative}:{node.lineno}" for relative, tree in daemon_modules() if relative != "jsonrpc.py"
               for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value == "jsonrpc"]
    assert spelled == []


def test_threads_are_named_counted_and_leave_the_running_set_when_they_end():
    threads, release = Threads(), threading.Event()
    threads.start("wake-s1", release.wait)
    threads.start("stop-s2", lambda: None)
    wait_for(lambda: threads.running() == ["wake-s1"], what="the finished thread leaves the running set")
    assert threads.view("s1") == {"started": 2, "running": 1, "named": ["wake-s1"]}
    release.set()
    assert threads.join(5.0) == []
    assert threads.view() == {"started": 2, "running": 0, "named": []}


def test_join_names_what_is_still_running_and_leaves_the_serving_loops_be():
    threads, release = Threads(), threading.Event()
    threads.start("stuck", release.wait)
    threads.start("waitress", release.wait, serving=True)
    assert threads.join(0.2) == ["stuck"]
    release.set()
    assert threads.join(5.0) == []


def test_after_runs_later_unless_canceled_and_the_shutdown_cancels_it():
    threads, ran = Threads(), []
    threads.after("ttl-ran", 0.0, ran.append, "ran")
    wait_for(lambda: ran == ["ran"], what="a delay of zero runs at once")
    canceled = threads.after("ttl-canceled", 60.0, ran.append, "canceled")
    canceled.set()
    threads.after("ttl-at-shutdown", 60.0, ran.append, "shutdown")
    assert threads.join(5.0) == []
    assert ran == ["ran"]
