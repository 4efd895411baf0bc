"""Pure parts of the agents surface: wake text, title cleaning, the reference agent's title, the permission
narrowing of governed children, spawn TTLs and the hook event names."""

import json
from dataclasses import replace

import pytest

from compozy.agents.directives import TITLE_PASS_PREFIX, title_of
from compozy.config import HOOK_EVENTS, from_document
from compozy.errors import CompozyError
from compozy.session.lifecycle.children import _ttl
from compozy.session.lifecycle.hooks import EVENT_TYPES
from compozy.session.records.governed import narrowest, permission_mode, refuse_user_action
from compozy.session.records.record import SessionRecord
from compozy.session.turns.messaging import ReplyWatch, Wake, wake_message
from compozy.session.turns.titles import PROMPT, clean_title


def record(session_type="user", spawn=None):
    document = {"id": "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "type": session_type, "agent_name": "general",
                "workspace_id": "ws_1", "cwd": "/w", "created_at": "t", "updated_at": "t"}
    if spawn is not None:
        document["spawn"] = spawn
    return SessionRecord.from_dict(document)


def test_the_wake_names_who_answered_how_and_what():
    wake = Wake(session_id="sess_x", agent_name="general", turn_id="turn_y", end="done", how="done (end_turn)",
                text="echo: hi", truncated=False)
    assert wake_message(wake) == ("Reply from session sess_x (agent general): turn turn_y ended done (end_turn)."
                                  "\n\necho: hi")
    assert wake_message(replace(wake, truncated=True)).endswith("echo: hi [truncated]")


def test_a_reply_watch_reads_back_what_it_wrote_and_its_wake_stays_typed():
    wake = Wake("sess_x", "general", "turn_y", end="error", text="", truncated=False, how="error (agent_lost)")
    watch = ReplyWatch("w1", "sess_a", "sess_x", "turn_y", created_at="t0", expires_at="t1", wake=wake)
    assert ReplyWatch.from_row(json.loads(json.dumps(watch.to_row()))) == watch
    assert ReplyWatch.from_row({**watch.to_row(), "wake": None}).wake is None


@pytest.mark.parametrize("answer, title", [
    ("Plan the garden\nmore", "Plan the garden"),
    ('\n  "Quoted title"  ', "Quoted title"),
    ("Title: Billing cleanup", "Billing cleanup"),
    ("a\x1b]0;x", "a\\x1b]0;x"),
    ("x" * 200, "x" * 80),
    ("   \n  ", None),
])
def test_a_title_is_one_clean_bounded_line(answer, title):
    assert clean_title(answer) == title


def test_the_reference_agent_titles_from_the_first_user_line_without_directives():
    prompt = PROMPT.format(user="[hold g1] plan the spring garden beds with tomatoes", assistant="echo: ...")
    assert prompt.startswith(TITLE_PASS_PREFIX)
    assert title_of(prompt) == "Plan the spring garden beds with"
    assert title_of(PROMPT.format(user="", assistant="")) == "Untitled conversation"


def test_a_child_never_runs_wider_than_its_recorded_mode():
    assert narrowest("approve-all", "deny-all").value == "deny-all"
    assert narrowest("approve-reads", None).value == "approve-reads"
    config = from_document({})
    assert permission_mode(config, record()) == "approve-all"
    child = record("spawned", {"permissions": {"mode": "approve-reads", "parent_mode": "approve-reads"}})
    assert permission_mode(config, child) == "approve-reads"
    assert permission_mode(from_document({"permissions": {"mode": "deny-all"}}), child) == "deny-all"


def test_users_take_no_lifecycle_action_on_daemon_managed_sessions():
    refuse_user_action(record("user"), "stopped")
    for session_type in ("spawned", "system", "coordinator"):
        with pytest.raises(CompozyError) as refused:
            refuse_user_action(record(session_type), "stopped")
        assert refused.value.code == "session_daemon_managed"


@pytest.mark.parametrize("ttl, seconds", [(None, 1800.0), ("1s", 1.0), ("24h", 86400.0)])
def test_spawn_ttls(ttl, seconds):
    assert _ttl(ttl)[1] == seconds


@pytest.mark.parametrize("ttl", ["0", "25h", "forever", "10"])
def test_bad_spawn_ttls_are_invalid(ttl):
    with pytest.raises(CompozyError) as refused:
        _ttl(ttl)
    assert refused.value.code == "invalid_request" and refused.value.details["field"] == "spawn.ttl"


def test_every_event_type_a_hook_follows_is_a_configurable_hook_event():
    assert set(EVENT_TYPES.values()) <= set(HOOK_EVENTS)
