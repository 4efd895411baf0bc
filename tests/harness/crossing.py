"""One case of the cross product (tests/test_transition_windows.py): a session, its window, its input, and
the invariants checked after every case.

A case prepares a session, holds one runtime transition window open (tests/harness/windows.py), sends
one input into it (tests/harness/inputs.py), closes the window, and then checks: every request was
answered within its bound (2 s; a stop that waits, within its ladder), admitted or refused with a named
4xx code and never a 5xx or a hang; no transitional state outlived its bound; every admitted input ran or
was visibly refused by a stored event; every turn ended exactly once; a later plain prompt runs to done.
Requests go through the harness's surfaces (tests/harness/surfaces.py), over TCP and the Unix socket.
"""

import itertools
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from compozy.cli.client import Client
from compozy.errors import ERRORS
from tests.harness.ops import OPS
from tests.harness.surfaces import HttpSurface

ANSWER_WITHIN = 2.0
TRANSITIONAL = ("binding", "recovering", "reconfiguring")
TERMINALS = ("done", "error")
POLL = 0.05
_numbers = itertools.count()


class SocketSurface(HttpSurface):
    """The same requests over the daemon's Unix socket: a second client of the same daemon."""

    name = "socket"

    @property
    def client(self):
        return Client(self.daemon.socket_url, timeout=60)


@dataclass
class Answer:
    op: str
    surface: str
    elapsed: float
    status: int | None = None
    code: str | None = None
    result: object = None
    hung: str | None = None
    bound: float = ANSWER_WITHIN
    allowed: frozenset = frozenset()
    finished: float = 0.0  # wall-clock time of the answer

    @property
    def admitted(self):
        return self.hung is None and self.code is None

    def problem(self):
        """What breaks the answer invariant, or None."""
        if self.hung:
            return f"{self.op} over {self.surface} never answered: {self.hung}"
        if self.elapsed > self.bound:
            return f"{self.op} over {self.surface} answered after {self.elapsed:.2f}s (bound {self.bound:g}s)"
        if self.status is not None and self.status >= 500:
            return f"{self.op} over {self.surface} answered {self.status} {self.code}"
        if self.code is not None and (self.code not in self.allowed or ERRORS[self.code].status >= 500):
            return f"{self.op} over {self.surface} was refused with {self.code}, not one of {sorted(self.allowed)}"
        return None


@dataclass
class Expected:
    """An admitted prompt-like input: it must run (its user_message) or be dropped by a stored marker."""

    message_id: str
    entry_id: str | None = None
    what: str = ""


class Case:
    def __init__(self, daemon, workspace, window):
        self.daemon, self.window = daemon, window
        self.workspace = Path(workspace)
        self.surfaces = {"tcp": HttpSurface(daemon), "socket": SocketSurface(daemon)}
        self.session = None
        self.answers, self.expected, self.admitted_ops = [], [], []
        self.background = []  # the window's own requests (a prompt whose bind the window holds)
        self.tag = f"c{next(_numbers)}"
        self.survivors = []  # agent processes alive after a verified stop answered

    # -- requests ---------------------------------------------------------------------------------

    def call(self, op, surface="tcp", bound=ANSWER_WITHIN, allowed=(), record=True, **args):
        """The operation on the case's session (unless args name another), timed and recorded."""
        params = OPS[op].path_params
        if self.session is not None and "session_id" in params and "session" not in args:
            args = {"session": self.session["id"], **args}
            if "workspace" in params:
                args["workspace"] = self.session["workspace_id"]
        started = time.monotonic()
        answer = Answer(op, surface, 0.0, bound=bound, allowed=frozenset(allowed))
        try:
            outcome = self.surfaces[surface].call(op, args)
        except Exception as exc:  # noqa: BLE001 (a timeout or a cut connection is a hang for the invariant)
            answer.hung = f"{type(exc).__name__}: {exc}"
        else:
            answer.status, answer.code, answer.result = outcome.http_status, outcome.error, outcome.result
        answer.elapsed, answer.finished = time.monotonic() - started, time.time()
        if record:
            self.answers.append(answer)
        return answer

    def must(self, op, **args):
        """A request of the case's own set-up: it has to succeed (not an input under test)."""
        answer = self.call(op, record=False, bound=60, **args)
        assert answer.admitted, f"{op} failed in the set-up of {self.window.name}: {answer.code or answer.hung}"
        return answer.result

    def in_background(self, op, **args):
        """A request the window holds (a prompt waiting on its bind): answered once the window closes."""
        holder = {}
        thread = threading.Thread(target=lambda: holder.setdefault(
            "answer", self.call(op, record=False, bound=60, **args)), daemon=True)
        thread.start()
        self.background.append((thread, holder))

    def ids(self, label):
        number = next(_numbers)
        return {"message_id": f"m-{self.tag}-{label}-{number}", "idempotency_key": f"k-{self.tag}-{label}-{number}"}

    # -- reads and waits ---------------------------------------------------------------------------

    def read(self):
        return self.must("session.get")

    def events(self, **query):
        return self.must("session.events", **{"archive": "all", "limit": 1000, **query})["events"]

    def wait(self, predicate, what, within=20.0):
        deadline = time.monotonic() + within
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.window.name}: {what} not reached within {within}s")
            time.sleep(POLL)

    def wait_event(self, kind, within=20.0, **where):
        def found():
            return [e for e in self.events(type=kind) if all(e.get(k) == v for k, v in where.items())]
        return self.wait(found, f"a {kind} event", within)

    def gate(self, name, present=True):
        path = self.workspace / ".compozy-gates" / name
        path.parent.mkdir(exist_ok=True)
        if present:
            path.write_text("open\n")
        else:
            path.unlink(missing_ok=True)

    def run_turn(self, message, session=None):
        scope = {"session": session["id"], "workspace": session["workspace_id"]} if session else {}
        turn = self.must("session.prompt", message=message, **scope, **self.ids("setup"))["turn_id"]
        self.wait(lambda: self.must("session.events", turn_id=turn, type="done,error", **scope)["events"],
                  f"the end of {message!r}")
        return turn

    # -- the invariants --------------------------------------------------------------------------

    def check(self):
        problems = [p for p in (a.problem() for a in self.answers) if p]
        assert not problems, f"{self.window.name}: " + "; ".join(problems)
        assert not self.survivors, f"{self.window.name}: agents {self.survivors} alive after a verified stop"
        self._settles()
        self._background_answered()
        read = self._drained()
        self._later_prompt_runs(read)
        self._admitted_ran_or_refused()
        self._turns_end_once()
        self.checked = True

    def _settles(self):
        """No transitional state outlives its bound, counted from the moment the window closed."""
        bound = self.window.settle_within

        def settled():
            read = self.read()
            assert read.get("attention") != "runtime_stuck", f"{self.window.name}: stuck {read['supervision']}"
            return read if read["runtime"]["status"] not in TRANSITIONAL and read["state"] != "stopping" else None
        started = time.monotonic()
        self.wait(settled, "a runtime out of its transitional state", bound)
        self.settled_after = time.monotonic() - started

    def _background_answered(self):
        for thread, holder in self.background:
            thread.join(30)
            assert "answer" in holder, f"{self.window.name}: the window's own request never answered"
            answer = holder["answer"]
            assert answer.hung is None and (answer.status or 0) < 500, \
                f"{self.window.name}: the window's own {answer.op} answered {answer.status} {answer.code}"
            if answer.admitted and answer.op == "session.prompt":
                self.expected.append(Expected(answer.result["message_id"], answer.result.get("entry_id"), "trigger"))

    def _drained(self, within=40.0):
        def idle():
            read = self.read()
            if read["state"] in ("stopped",) or read["archived"]:
                return read
            busy = read["activity"]["turn_in_flight"] or self.must("session.input.list")["entries"]
            return None if busy else read
        return self.wait(idle, "an idle session (no turn, no queue)", within)

    def _later_prompt_runs(self, read):
        if read["archived"]:
            self.must("session.unarchive")
        turn = self.must("session.prompt", message="[recall] later", **self.ids("later"))["turn_id"]
        ended = self.wait_event("done,error", within=30, turn_id=turn)
        assert ended[0]["type"] == "done" and ended[0]["content"].get("stop_reason") == "end_turn", \
            f"{self.window.name}: the later prompt ended {ended}"
        self._drained()

    def _admitted_ran_or_refused(self):
        events = self.events()
        ran = {e["content"].get("message_id") for e in events if e["type"] == "user_message"}
        markers = [e["content"]["marker"] for e in events if e["type"] == "transcript_marker.created"]
        dropped = {(m.get("evidence") or {}).get(k) for m in markers if m["kind"] == "prompt_dropped"
                   for k in ("message_id", "entry_id")}
        lost = [x for x in self.expected if x.message_id not in ran and x.message_id not in dropped
                and (x.entry_id is None or x.entry_id not in dropped)]
        assert not lost, f"{self.window.name}: admitted input neither ran nor was refused: {lost}"

    def _turns_end_once(self):
        opened, ends = {}, {}
        for event in self.events():
            if event["type"] == "user_message" and not event["content"].get("steer"):
                opened.setdefault(event["turn_id"], event["sequence"])
            elif event["type"] in TERMINALS and event["turn_id"]:
                ends.setdefault(event["turn_id"], []).append(event["sequence"])
        wrong = {turn: ends.get(turn, []) for turn, start in opened.items()
                 if len(ends.get(turn, [])) != 1 or ends[turn][0] < start}
        twice = {turn: found for turn, found in ends.items() if len(found) > 1}
        assert not wrong and not twice, f"{self.window.name}: turns not ended exactly once: {wrong or twice}"
