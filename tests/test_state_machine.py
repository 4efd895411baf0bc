"""A Hypothesis RuleBasedStateMachine over the in-process surface (issue 9): random sequences of create,
prompt, queue, steer, interrupt, cancel, stop, archive, unarchive, remove and daemon restart against a
real SessionManager and the reference agent. After every step: every state change the daemon made was
an edge of the state tables (compozy/states.py, recorded where each table checks its edges), every
answer is one /api/openapi.json documents (the surface checks it), no answer is a 5xx, sequences are
dense, no turn ended twice, no message ran twice, and a restart leaves no turn open.

COMPOZY_LONG=1 runs more and longer sequences.
"""

import os
import shutil
import tempfile
import threading
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

from compozy import states
from compozy.errors import ERRORS
from tests.harness.runner import kill_marked, read_events
from tests.harness.surfaces import InProcess

LONG = os.environ.get("COMPOZY_LONG") == "1"
MESSAGES = ("[chunks 2] hi", "[hold g] held", "[chunks 1] [sleep 0.3] slow", "[tool t] [chunks 1] tool")
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
        self.surface = InProcess(self.root / "home").start()
        self.known, self.numbers = set(), iter(range(10**6))

    def call(self, op, **args):
        outcome = self.surface.call(op, args)
        if outcome.error is not None:
            assert ERRORS[outcome.error].status < 500, f"{op}: {outcome.error}: {outcome.message}"
        return outcome

    # -- rules -------------------------------------------------------------------------------------

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
    run = settings(max_examples=40 if LONG else 5, stateful_step_count=40 if LONG else 20, deadline=None,
                   derandomize=not LONG, suppress_health_check=list(HealthCheck))(SessionMachine)
    run.TestCase().runTest()
    taken = {edge for edge in edges.taken if edge}
    assert edges.illegal == [] and "active->stopping" in taken, sorted(taken)
    print("edges taken:", sorted(taken))
