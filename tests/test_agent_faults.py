"""Agent faults (issue 9): an agent SIGKILLed at random points of a turn, one that exits 0 mid-turn,
never answers initialize, writes a 10 MiB line, floods stdout with lines that are not JSON, floods
stderr, answers under wrong ids, ignores cancel and SIGTERM while forking grandchildren, or moves a
child into a process group of its own. Each time the daemon keeps answering, the turn ends exactly
once and says what happened, and nothing of the agent survives a stop.

The daemon runs in this process (a real SessionManager, real agent subprocesses, real signals) so a
test can read its processes directly; tests/harness/fault_agent.py is the scripted misbehaving agent
and the reference agent's directives give the rest. Faults already pinned elsewhere (garbage lines:
spec/prompts/prompt-garbage-output-survives.yaml; a crash resumed once: spec/recovery/; the stubborn
stop without cancel: tests/test_stop_and_recovery.py) are not repeated.
"""

import os
import random
import signal
import sys
import time
import uuid
from pathlib import Path

import pytest

from compozy import proc
from compozy.config import from_document
from compozy.errors import CompozyError
from compozy.manager import SessionManager
from compozy.paths import Home

FAULT_AGENT = str(Path(__file__).resolve().parent / "harness" / "fault_agent.py")
WITHIN = 60.0
SEED = int(os.environ.get("COMPOZY_FAULT_SEED", "9"))
KILLS = 40 if os.environ.get("COMPOZY_LONG") == "1" else 4


@pytest.fixture
def marker(monkeypatch):
    value = f"compozy-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("COMPOZY_TEST_MARK", value)
    return f"COMPOZY_TEST_MARK={value}"


@pytest.fixture
def daemon(home, workspace, marker):
    """start(fault=None, **settings) -> (manager, session_id); every manager is shut down at teardown and
    no process of the test may survive it."""
    managers = []

    def start(fault=None, settings=None):
        document = {"session": {"stop": {"cooperative_grace": "1s"}, **(settings or {})}}
        if fault is not None:
            document["providers"] = {"fault": {"command": [sys.executable, FAULT_AGENT], "env": {"FAULT": fault},
                                               "handshake_timeout": "2s"}}
            document["agents"] = {"general": {"provider": "fault"}}
        manager = SessionManager(Home(home), from_document(document)).start()
        managers.append(manager)
        return manager, manager.create_session({"workspace_path": str(workspace)})["session"]["id"]

    yield start
    for manager in managers:
        manager.shutdown()
    leaked = proc.find_marked(marker)
    for identity in leaked:
        proc.send_signal(identity, signal.SIGKILL)
    assert leaked == [], f"processes outlived the daemon: {leaked}"


def _events(manager, session_id, **query):
    return manager.events(session_id, None, {"limit": "1000", **query})["events"]


def _wait(predicate, what, within=WITHIN):
    deadline = time.monotonic() + within
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"{what} not reached within {within}s"
        time.sleep(0.05)
    return value


def _ends(manager, session_id, turn_id):
    return _events(manager, session_id, turn_id=turn_id, type="done,error")


def _prompt(manager, session_id, message):
    return manager.prompt(session_id, None, {"message": message})["prompt"]["turn_id"]


def _ended_once(manager, session_id, turn_id):
    """The turn's one terminal event, once it has one; a second one would be a lie."""
    ends = _wait(lambda: _ends(manager, session_id, turn_id), f"the end of turn {turn_id}")
    time.sleep(0.2)
    ends = _ends(manager, session_id, turn_id)
    assert len(ends) == 1, f"turn {turn_id} ended {len(ends)} times: {ends}"
    return ends[0]


def _stopped_clean(manager, session_id, marker):
    """A stop leaves nothing of the agent; the daemon still answers."""
    outcome = manager.stop_session(session_id, None, {"wait": True})
    assert outcome["state"] == "stopped" and outcome["verified"] is True, outcome
    assert proc.find_marked(marker) == [], "part of the agent survived the stop"
    assert manager.health()["status"] == "ok"
    return outcome


def _agent(manager, session_id):
    """The agent's identity from the session's read (pid and start time), or None while unbound."""
    process = manager.get_session(session_id)["session"]["runtime"].get("process")
    identity = proc.identify(process["pid"]) if process else None
    return identity if identity is not None and identity.start_time == process["start_time"] else None


# -- the reference agent, killed or exiting -----------------------------------------------------------


def test_an_agent_sigkilled_at_random_points_of_turns_ends_each_turn_once(daemon, marker, monkeypatch):
    monkeypatch.setenv("COMPOZY_REFERENCE_CHUNK_DELAY", "0.03")
    manager, session_id = daemon()
    rng, endings = random.Random(SEED), []
    for number in range(KILLS):
        turn_id = _prompt(manager, session_id, f"[chunks 30] turn {number}")
        agent = _wait(lambda: _agent(manager, session_id), "a bound agent")
        time.sleep(rng.uniform(0.0, 1.2))  # before, during or after its stream
        proc.send_signal(agent, signal.SIGKILL)
        end = _ended_once(manager, session_id, turn_id)
        endings.append(end["type"] if end["type"] == "error" else end["content"]["stop_reason"])
        read = manager.get_session(session_id)["session"]
        if read["state"] == "stopped":  # recovery exhausted or refused: it says so
            assert read["stop_reason"] == "agent_crashed" and read["failure"]["kind"], read
    assert manager.health()["status"] == "ok"
    _stopped_clean(manager, session_id, marker)


def test_an_agent_that_exits_0_mid_turn_ends_the_turn_and_is_not_success(daemon, marker):
    manager, session_id = daemon()
    turn_id = _prompt(manager, session_id, "[chunks 2] [exit 0] bye")  # every recovery attempt exits again
    end = _ended_once(manager, session_id, turn_id)
    assert end["type"] == "error" and end["content"]["failure"]["kind"] == "process_exit", end
    read = manager.get_session(session_id)["session"]
    assert (read["state"], read["stop_reason"], read["failure"]["kind"]) == ("stopped", "agent_crashed", "process_exit")
    assert "exited with status 0" in read["failure"]["summary"]
    assert proc.find_marked(marker) == [] and manager.health()["status"] == "ok"


def test_a_stderr_flood_neither_blocks_the_turn_nor_the_daemon(daemon, marker):
    manager, session_id = daemon()
    turn_id = _prompt(manager, session_id, "[stderr 32768] [chunks 2] loud")  # 32 MiB on stderr
    end = _ended_once(manager, session_id, turn_id)
    assert end["type"] == "done" and end["content"]["stop_reason"] == "end_turn", end
    _stopped_clean(manager, session_id, marker)


def test_an_agent_ignoring_cancel_and_sigterm_with_grandchildren_leaves_nothing(daemon, marker, workspace):
    manager, session_id = daemon()
    turn_id = _prompt(manager, session_id, "[ignore-term] [grandchild] [grandchild setsid] [hang] stubborn")
    _wait(lambda: len((workspace / ".compozy-pids" / "grandchildren").read_text().split()) == 2
          if (workspace / ".compozy-pids" / "grandchildren").exists() else None, "two grandchildren")
    manager.cancel_turn(session_id, None, {})
    end = _ended_once(manager, session_id, turn_id)
    assert end["type"] in ("done", "error"), end
    _stopped_clean(manager, session_id, marker)


# -- a scripted agent misbehaving on the wire ------------------------------------------------------------


@pytest.mark.parametrize("fault", ["silent-init", "wrong-ids"])
def test_an_agent_that_never_answers_initialize_is_refused_and_the_daemon_answers(daemon, marker, fault):
    manager, session_id = daemon(fault)
    with pytest.raises(CompozyError) as refused:
        _prompt(manager, session_id, "hello")
    assert refused.value.code == "provider_unavailable" and "initialize" in refused.value.message, refused.value
    read = manager.get_session(session_id)["session"]
    assert (read["state"], read["runtime"]["status"], read["runtime"].get("process")) == ("active", "unbound", None)
    assert not [e for e in _events(manager, session_id) if e["type"] == "user_message"], "a refused bind ran nothing"
    assert proc.find_marked(marker) == [], "the refused agent was left running"
    assert manager.health()["status"] == "ok"


@pytest.mark.parametrize("fault", ["big-line", "big-chunk", "stdout-flood"])
def test_oversized_and_flooded_output_ends_the_turn_truthfully(daemon, marker, fault):
    manager, session_id = daemon(fault)
    turn_id = _prompt(manager, session_id, "go")
    end = _ended_once(manager, session_id, turn_id)
    texts = "".join(e["content"].get("text", "") for e in _events(manager, session_id, turn_id=turn_id,
                                                                     type="agent_message"))
    # Skipped (a line that is not JSON) or stored (a chunk within the line limit), then the turn goes on.
    assert end["type"] == "done" and end["content"]["stop_reason"] == "end_turn", end
    assert texts.endswith("after the fault ") and (fault != "big-chunk" or len(texts) > 10 * 1024 * 1024)
    assert manager.health()["status"] == "ok"
    _stopped_clean(manager, session_id, marker)


def test_a_prompt_answered_under_a_wrong_id_ends_at_the_prompt_deadline(daemon, marker):
    manager, session_id = daemon("wrong-prompt-id", {"supervision": {"prompt_deadline": "3s"}})
    turn_id = _prompt(manager, session_id, "go")
    end = _ended_once(manager, session_id, turn_id)
    assert end["type"] == "done" and end["content"] == {"stop_reason": "cancelled", "forced": True}, end
    kinds = [e["content"]["marker"]["kind"] for e in _events(manager, session_id, turn_id=turn_id,
                                                              type="transcript_marker.created")]
    assert kinds == ["prompt_timeout", "prompt_cancel"], kinds  # the deadline, then the forced cancel
    _stopped_clean(manager, session_id, marker)


def test_a_child_that_changes_its_process_group_does_not_survive_a_stop(daemon, marker):
    manager, session_id = daemon("regroup")
    turn_id = _prompt(manager, session_id, "go")
    _wait(lambda: [e for e in _events(manager, session_id, turn_id=turn_id, type="agent_message")], "the chunk")
    agent = _agent(manager, session_id)
    _wait(lambda: len(proc.find_related(agent)) == 2, "the regrouped child and its child")
    assert {i.pgid for i in proc.find_related(agent)} != {agent.pgid}, "the child left the agent's group"
    outcome = _stopped_clean(manager, session_id, marker)
    assert outcome["escalated"] is True, outcome
    assert len(_ends(manager, session_id, turn_id)) == 1
