"""The state tables: every machine's edges, its boot repairs, and the one check every change goes through."""

import itertools

import pytest

from compozy.states import (ADMISSION, DERIVATION, FIRST_PROMPT, MACHINES, NATIVE, QUEUE, REWIND, RUNTIME, SESSION,
                            TURN, AdmissionState, DerivationState, FirstPrompt, NativeState, QueueStatus, RewindState,
                            RuntimeStatus, SessionState, TurnPhase)

# Where each machine starts: new sessions are active, runtimes unbound, turns binding, entries
# queued; admissions are born binding (started prompts), queued, or completed (edit receipts).
INITIAL = {SESSION: {SessionState.ACTIVE}, RUNTIME: {RuntimeStatus.UNBOUND}, TURN: {TurnPhase.BINDING},
           QUEUE: {QueueStatus.QUEUED},
           ADMISSION: {AdmissionState.BINDING, AdmissionState.QUEUED, AdmissionState.COMPLETED},
           REWIND: {RewindState.PENDING}, DERIVATION: {DerivationState.CREATING},
           FIRST_PROMPT: {FirstPrompt.STAGED}, NATIVE: {NativeState.PENDING}}
# States nothing leaves once there.
FINAL = {SESSION: set(), RUNTIME: set(), TURN: {TurnPhase.DONE},
         QUEUE: {QueueStatus.FAILED, QueueStatus.CANCELED},
         ADMISSION: {AdmissionState.STARTED, AdmissionState.QUEUED, AdmissionState.COMPLETED,
                     AdmissionState.WITHDRAWN},
         REWIND: {RewindState.COMPLETED},
         DERIVATION: {DerivationState.CREATED, DerivationState.WITHDRAWN}, FIRST_PROMPT: {FirstPrompt.ADMITTED},
         NATIVE: {NativeState.LOADED, NativeState.FAILED}}
IDS = [m.name or "session" for m in MACHINES]


def _pairs(machine):
    return list(itertools.product(machine.states, repeat=2))


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_edges_join_two_different_states_of_the_machine(machine):
    for a, b in machine.edges | machine.repairs:
        assert isinstance(a, machine.states) and isinstance(b, machine.states) and a != b


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_every_state_is_reachable_from_where_the_machine_starts(machine):
    reached, frontier = set(INITIAL[machine]), list(INITIAL[machine])
    while frontier:
        state = frontier.pop()
        for a, b in machine.edges:
            if a == state and b not in reached:
                reached.add(b)
                frontier.append(b)
    assert reached == set(machine.states)


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_only_final_states_have_no_way_out(machine):
    stuck = {s for s in machine.states if not any(a == s for a, _ in machine.edges)}
    assert stuck == FINAL[machine]


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_check_takes_exactly_the_edges_and_staying_put(machine):
    for current, new in _pairs(machine):
        if current == new or (current, new) in machine.edges:
            assert machine.check(current.value, new.value) == new
        else:
            with pytest.raises(AssertionError, match=f"illegal .* transition {current} -> {new}"):
                machine.check(current, new)


@pytest.mark.parametrize("machine", MACHINES, ids=IDS)
def test_repair_takes_only_repair_edges(machine):
    for current, new in _pairs(machine):
        if current == new or (current, new) in machine.repairs:
            assert machine.check(current, new, repair=True) == new
        else:
            with pytest.raises(AssertionError, match="illegal .* repair"):
                machine.check(current, new, repair=True)


def test_boot_repair_leaves_every_live_state_at_rest():
    """After an unclean exit nothing is mid-flight: sessions stopped (or, when a recorded agent cannot be
    proven gone, left stopping for a stop to retry), runtimes unbound, entries settled, mid-bind admissions
    withdrawn."""
    assert {a for a, _ in SESSION.repairs} == {SessionState.STARTING, SessionState.ACTIVE, SessionState.STOPPING}
    assert {b for a, b in SESSION.repairs if a != SessionState.ACTIVE} == {SessionState.STOPPED}
    assert {b for a, b in SESSION.repairs if a == SessionState.ACTIVE} == {SessionState.STOPPED,
                                                                          SessionState.STOPPING}
    assert {b for _, b in RUNTIME.repairs} == {RuntimeStatus.UNBOUND}
    assert {a for a, _ in RUNTIME.repairs} == set(RuntimeStatus) - {RuntimeStatus.UNBOUND}
    assert {a for a, _ in QUEUE.repairs} == {QueueStatus.DISPATCHING}
    assert ADMISSION.repairs == {(AdmissionState.BINDING, AdmissionState.WITHDRAWN),
                                 (AdmissionState.BINDING, AdmissionState.STARTED)}  # by its user_message
    assert TURN.repairs == set()  # turns live in memory only
    assert REWIND.repairs == {(RewindState.PENDING, RewindState.COMPLETED)}
    assert {a for a, _ in DERIVATION.repairs} == {DerivationState.CREATING}
    assert FIRST_PROMPT.repairs == set()  # a staged prompt waits durably: a repeat with its key admits it


def test_active_to_stopped_is_a_repair_never_a_run_time_edge():
    """A running daemon stops a session only through stopping; boot repair names its own edge."""
    assert (SessionState.ACTIVE, SessionState.STOPPED) not in SESSION.edges
    assert (SessionState.ACTIVE, SessionState.STOPPED) in SESSION.repairs


def test_edge_names_are_distinct_across_machines():
    names = [name for machine in MACHINES for name in sorted(machine.edge_names())]
    assert len(names) == len(set(names))
    assert "active->stopping" in names and "boot:active->stopped" in names
    assert "turn:binding->prompting" in names and "boot:queue:dispatching->sent" in names
