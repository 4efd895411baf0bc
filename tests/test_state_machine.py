"""A Hypothesis RuleBasedStateMachine over the in-process surface (issue 9): random sequences of create,
prompt, queue, steer, interrupt, cancel, stop, archive, unarchive, remove and daemon restart against a
real SessionManager and the reference agent, interleaved with the runtime's own transitions (issue 20):
agents that crash mid-turn (recovery's backoff and replay, or its exhaustion), agents killed from
outside, and idle release (after 500 ms idle) with the rebind that follows. After every step: every
state change the daemon made was an edge of the state tables (compozy/states.py, recorded where each
table checks its edges), every answer is one /api/openapi.json documents (the surface checks it), no
answer is a 5xx, sequences are dense, no turn ended twice, no message ran twice, a transitional
runtime status always has a turn (or a stop) owning it and is never flagged stuck, and a restart
leaves no turn open.

COMPOZY_LONG=1 runs more and longer sequences.
"""

import os
import shutil
import signal
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, invariant, rule

from compozy import states
from compozy.errors import ERRORS
from tests.harness.runner import kill_marked, read_events
from tests.harness.surfaces import InProcess

LONG = os.environ.get("COMPOZY_LONG") == "1"
MESSAGES = ("[chunks 2] hi", "[hold g] held", "[chunks 1] [sleep 0.3] slow", "[tool t] [chunks 1] tool",
            "[chunks 1] [crash 1 once] recovers", "[crash 1] never recovers")
CONFIG = '[session.supervision]\nidle_release_after = "500ms"\n\n[session.stop]\ncooperative_grace = "1s"\n'
TRANSITIONAL = ("binding", "reconfiguring", "recovering")
TERMINALS = ("done", "error")


class EdgeLog:
    """Every Machine.check the daemon makes, wherever it runs (a turn's worker thread included)."""

    def __init__(self):
        self.taken, self.illegal, self.lock = [], [], threading.Lock()
        self.original = states.Machine.check

    def install(self):
        log, original = self, self.original

        def check(machine, current, new, repair=False):
            try:
                result = original(machine, current, new, repair)
            except AssertionError as error:
                with log.lock:
                    log.illegal.append(str(error))
                raise
            with log.lock:
                log.taken.append(machine.edge_name((machine.states(current), result), repair)
                                 if machine.states(current) != result else None)
            return result
        states.Machine.check = check

    def uninstall(self):
        states.Machine.check = self.original


class SessionMachine(RuleBasedStateMachine):
    sessions = Bundle("sessions")

    def __init__(self):
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="compozy-fsm-"))
        self.workspace = self.root / "workspace"
        self.workspace.mkdir()
        (self.root / "home").mkdir()
        (self.root / "home" / "config.toml").write_text(CONFIG)
        self.surface = InProcess(self.root / "home").start()
        self.known, self.numbers = set(), iter(range(10**6))

    def call(self, op, **args):
        outcome = self.surface.call(op, args)
        if outcome.error is not None:
            assert ERRORS[outcome.error].status < 500, f"{op}: {outcome.error}: {outcome.message}"
        return outcome

    # -- rules -------------------------------------------------------------------------------------

    @initialize(target=sessions)
    def first_session(self):
        return self.create()

    @rule(target=sessions)
    def create(self):
        outcome = self.call("session.create", workspace_path=str(self.workspace))
        self.known.add(outcome.result["id"])
        return outcome.result["id"]

    @rule(session=sessions, message=st.sampled_from(MESSAGES),
          mode=st.sampled_from([None, "queue", "steer", "interrupt"]))
    def prompt(self, session, message, mode):
        number = next(self.numbers)
        args = {"message": message, "message_id": f"m{number}", "idempotency_key": f"k{number}"}
        self.call("session.prompt", session=session, **args, **({"mode": mode} if mode else {}))

    @rule(session=sessions)
    def cancel(self, session):
        self.call("session.cancel", session=session)

    @rule(session=sessions, wait=st.booleans())
    def stop(self, session, wait):
        self.call("session.stop", session=session, wait=wait)

    @rule(session=sessions, stop=st.booleans())
    def archive(self, session, stop):
        self.call("session.archive", session=session, stop=stop)

    @rule(session=sessions)
    def unarchive(self, session):
        self.call("session.unarchive", session=session)

    @rule(session=consumes(sessions))
    def remove(self, session):
        if not self.call("session.remove", session=session).error:
            self.known.discard(session)

    @rule(session=sessions)
    def kill_agent(self, session):
        """The agent dies from outside: mid-turn, recovery replaces it; idle, the session records the loss."""
        live = self.surface.manager.live.get(session)
        runtime = live.runtime if live is not None else None
        identity = runtime.process.identity if runtime is not None else None
        if identity is not None:
            try:
                os.killpg(identity.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    @rule(session=sessions, crash=st.sampled_from(["[chunks 1] [crash 1 once] recovers", "[crash 1] never recovers"]),
          delay=st.sampled_from([0.0, 0.3, 1.2]), then=st.sampled_from([None, "queue", "steer", "interrupt", "cancel"]))
    def crash_then_input(self, session, crash, delay, then):
        """An agent that crashes mid-turn, and input racing its recovery: at once, in the first backoff, or
        while the replacement binds and replays."""
        self.prompt(session, crash, None)
        time.sleep(delay)
        if then == "cancel":
            self.cancel(session)
        else:
            self.prompt(session, "[chunks 1] after the crash", then)

    @rule(session=sessions, mode=st.sampled_from([None, "queue", "interrupt"]))
    def prompt_after_release(self, session, mode):
        """Idle long enough for the agent to be released (500 ms), then a prompt: it rebinds (or meets the
        release still stopping the agent)."""
        time.sleep(0.6)
        self.prompt(session, "[chunks 1] after the release", mode)

    @rule(seconds=st.sampled_from([0.2, 0.7, 1.5]))
    def let_time_pass(self, seconds):
        """Long enough for idle release (500 ms), recovery's first backoff (1 s) or its replay to happen."""
        time.sleep(seconds)

    @rule()
    def open_gate(self):
        gates = self.workspace / ".compozy-gates"
        gates.mkdir(exist_ok=True)
        (gates / "g").write_text("open\n")

    @rule()
    def close_gate(self):
        (self.workspace / ".compozy-gates" / "g").unlink(missing_ok=True)

    @rule()
    def restart(self):
        self.surface.restart()
        for session_id in self.known:  # a graceful restart ends every turn it interrupted
            ends = {}
            for event in read_events(self.surface.served.home.root, session_id):
                if event["type"] == "user_message" and not event["content"].get("steer"):
                    ends.setdefault(event["turn_id"], 0)
                elif event["type"] in TERMINALS:
                    ends[event["turn_id"]] = ends.get(event["turn_id"], 0) + 1
            assert all(count == 1 for count in ends.values()), f"{session_id}: turns left open {ends}"

    # -- invariants --------------------------------------------------------------------------------

    @invariant()
    def every_change_was_an_edge(self):
        assert EDGES.illegal == [], EDGES.illegal

    @invariant()
    def logs_are_dense_and_nothing_ran_twice(self):
        for session_id in self.known:
            events = read_events(self.surface.served.home.root, session_id)
            assert [e["sequence"] for e in events] == list(range(1, len(events) + 1)), session_id
            messages, ends = set(), {}
            for event in events:
                if event["type"] == "user_message" and not event["content"].get("steer"):
                    message_id = event["content"].get("message_id")
                    assert message_id not in messages, f"{session_id}: {message_id} ran twice"
                    messages.add(message_id)
                elif event["type"] in TERMINALS:
                    ends[event["turn_id"]] = ends.get(event["turn_id"], 0) + 1
            assert all(count == 1 for count in ends.values()), f"{session_id}: a turn ended twice {ends}"

    @invariant()
    def a_transitional_runtime_has_an_owner_and_is_never_stuck(self):
        for session_id in self.known:
            read = self.call("session.get", session=session_id).result
            if read["runtime"]["status"] in TRANSITIONAL:
                owned = read["activity"]["turn_in_flight"] or read["state"] in ("stopping", "starting")
                assert owned, f"{session_id}: runtime {read['runtime']['status']} with no turn: {read['runtime']}"
            assert read.get("attention") != "runtime_stuck", read["supervision"]

    @invariant()
    def every_session_reads_in_a_known_state(self):
        for session_id in self.known:
            read = self.call("session.get", session=session_id).result
            assert read["state"] in {s.value for s in states.SessionState}, read

    def teardown(self):
        self.open_gate()
        self.surface.close()
        shutil.rmtree(self.root, ignore_errors=True)


EDGES = EdgeLog()


@pytest.fixture
def edges(monkeypatch):
    marker = f"compozy-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("COMPOZY_TEST_MARK", marker)
    monkeypatch.setenv("COMPOZY_REFERENCE_CHUNK_DELAY", "0.02")
    EDGES.taken.clear()
    EDGES.illegal.clear()
    EDGES.install()
    try:
        yield EDGES
    finally:
        EDGES.uninstall()
    assert kill_marked(marker) == [], "processes outlived the state machine's daemons"


@pytest.mark.slow
def test_random_sequences_keep_the_invariants_and_take_only_table_edges(edges):
    run = settings(max_examples=40 if LONG else 8, stateful_step_count=40 if LONG else 25, deadline=None,
                   derandomize=not LONG, suppress_health_check=list(HealthCheck))(SessionMachine)
    run.TestCase().runTest()
    taken = {edge for edge in edges.taken if edge}
    assert edges.illegal == [] and "active->stopping" in taken, sorted(taken)
    print("edges taken:", sorted(taken))
