"""Every background thread, process, clock read and JSON-RPC message of the daemon has one owner
(issue 23 item 4): compozy/threads.py starts the threads, compozy/proc.py starts and signals the
processes, compozy/clock.py reads the time and compozy/jsonrpc.py frames JSON-RPC. An ast walk over
the daemon's modules finds any other place doing it; the reference agent (compozy/agents/, a process
of its own) and the CLI (compozy/cli/, the client's process) are not the daemon.

LiveSession and Turn change only through their own methods: nothing outside their modules assigns,
deletes or mutates one of their attributes (nor sets or clears one of their events) through a
variable that holds one (`session`, `live`, `turn`, `current`, `self.session`, ...).

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


OWNERS = {"session/records/live.py": "LiveSession", "session/turns/turn.py": "Turn"}
OWNER_NAMES = {"session", "live", "turn", "current", "sender", "target", "child", "parent"}
MUTATORS = {"append", "pop", "update", "add", "discard", "remove", "setdefault", "extend", "popitem", "insert",
            "clear", "set"}


def owned_fields():
    """The attributes each owner class assigns on self (its state)."""
    fields = {}
    for relative, name in OWNERS.items():
        tree = ast.parse((PACKAGE / relative).read_text(encoding="utf-8"))
        owner = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name)
        fields[name] = {t.attr for n in ast.walk(owner) for t in _targets(n)
                        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return fields


def _targets(node):
    """What an assignment or deletion writes, tuples flattened."""
    if isinstance(node, ast.Assign):
        found = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        found = [node.target]
    elif isinstance(node, ast.Delete):
        found = list(node.targets)
    else:
        return []
    flat = []
    while found:
        target = found.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            found.extend(target.elts)
        else:
            flat.append(target)
    return flat


def _holds_an_owner(node):
    """`session`, `turn`, `self.session`, `watch.turn`: an expression named after an owner it holds."""
    return (isinstance(node, ast.Name) and node.id in OWNER_NAMES) or \
        (isinstance(node, ast.Attribute) and node.attr in OWNER_NAMES)


def _written_field(node):
    """The owner field an expression writes through (`session.runtime`, `turn.open_tools[k]`), or None."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute) and _holds_an_owner(node.value):
        return node.attr
    return None


def outside_writes():
    fields = owned_fields()
    found = []
    for relative, tree in daemon_modules():
        own = fields.get(OWNERS.get(relative), set())  # an owner's module writes its own state, not the other's
        others = set().union(*fields.values()) - own
        for node in ast.walk(tree):
            written = [_written_field(t) for t in _targets(node)]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                written.append(_written_field(node.func.value))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                    and len(node.args) > 1 and _holds_an_owner(node.args[0]) and isinstance(node.args[1], ast.Constant):
                written.append(node.args[1].value)
            found += [f"{relative}:{node.lineno}: {name}" for name in written if name in others]
    return found


def test_live_sessions_and_turns_change_only_through_their_own_methods():
    assert outside_writes() == []


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
