"""Bounded replay and history folding: pure functions over event records."""

import json

from compozy.config import from_document
from compozy.session.records.replay import CarriedContext, bound, compose, fold_history, replay_prompt


def _event(sequence, kind, text, turn, **extra):
    return {"id": f"evt{sequence}", "sequence": sequence, "type": kind, "turn_id": turn,
            "content": {"text": text, **extra}, "timestamp": f"t{sequence}"}


def _conversation(turns, size=10):
    events, sequence = [], 0
    for number in range(turns):
        for kind, text in (("user_message", f"question {number} " + "q" * size),
                           ("agent_message", f"answer {number} " + "a" * size)):
            sequence += 1
            events.append(_event(sequence, kind, text, f"turn{number}"))
    return events


def test_history_folds_an_answer_s_chunks_into_one_message():
    events = [_event(1, "user_message", "hi", "t1", message_id="m1"), _event(2, "agent_message", "he", "t1"),
              _event(3, "agent_message", "llo", "t1"), _event(4, "done", "", "t1")]
    messages = fold_history(events, secrets=())
    assert [(m["role"], m["text"]) for m in messages] == [("user", "hi"), ("assistant", "hello")]
    assert messages[0]["message_id"] == "m1"


def test_a_small_transcript_is_carried_whole():
    result = bound(fold_history(_conversation(3), secrets=()), 131072, 16384)
    assert result.omitted_count == 0 and len(result.entries) == 6 and not result.truncated


def test_the_bound_is_hard_and_keeps_the_first_user_message_and_newest_messages():
    messages = fold_history(_conversation(200, size=200), secrets=())
    result = bound(messages, 8192, 1024)
    entries, omitted = result.entries, result.omitted_count
    assert len(json.dumps(entries, ensure_ascii=False).encode()) == result.size <= 8192
    assert entries[0]["text"].startswith("question 0 ")
    assert entries[1] == {"role": "system", "text": f"[{omitted} earlier messages omitted to fit the context budget]"}
    assert entries[-1]["text"].startswith("answer 199 ")
    assert omitted == len(messages) - (len(entries) - 1) and result.truncated


def test_each_message_is_capped_with_a_truncation_note():
    messages = fold_history([_event(1, "user_message", "x" * 5000, "t1")], secrets=())
    result = bound(messages, 131072, 1024)
    assert result.entries[0]["text"].endswith(" [content truncated]")
    assert len(result.entries[0]["text"].encode()) <= 1024
    assert result.truncated and result.omitted_count == 0


def test_an_earlier_hop_s_omissions_are_counted_and_stated_even_when_everything_fits():
    result = bound(fold_history(_conversation(2), secrets=()), 131072, 16384, prior_omitted=7)
    assert result.omitted_count == 7 and result.truncated
    assert result.entries[1]["text"] == "[7 earlier messages omitted to fit the context budget]"
    assert len(result.entries) == 5


def test_the_rebuilt_prompt_has_the_seed_s_shape():
    text = compose([{"role": "user", "text": "hi"}], "do it", "This session resumes.")
    assert text.startswith("Context rebuilt from log.\nThis session resumes. Continue this session")
    assert "<compozy_context_replay>\n" in text and "\n</compozy_context_replay>\n\nUser request:\n\ndo it" in text


def test_without_history_the_prompt_is_unchanged():
    config = from_document({})
    assert replay_prompt([], "hello", config, "sess_x", "test", secrets=()) == ("hello", None)


def test_a_derived_session_s_first_prompt_has_the_seed_s_exact_frame():
    carried = CarriedContext("continue", "sess_01J9R2K7M4T1", "codex", [{"role": "user", "text": "hi"}], 0, False)
    text, summary = replay_prompt([], "Carry on with the migration; run the tests first.", from_document({}),
                                  "sess_new", "first_prompt", carried, secrets=())
    assert text == (
        "Context rebuilt from log.\n"
        "This session continues sess_01J9R2K7M4T1 (agent: codex). Continue this session using the persisted "
        "transcript below. It is historical context, not a new user request. Do not repeat completed tool calls "
        "solely because they appear in the log. The files and git state in the workspace are authoritative; "
        "inspect them before acting on the transcript. Attachments listed in the transcript were not copied to "
        "this session.\n"
        '<compozy_context_replay>\n[{"role": "user", "text": "hi"}]\n</compozy_context_replay>\n\n'
        "User request:\n\nCarry on with the migration; run the tests first.")
    assert summary["message_count"] == 1 and summary["omitted_count"] == 0


def test_the_carried_context_comes_once_before_the_session_s_own_transcript_and_points_at_omissions():
    carried = CarriedContext("fork", "sess_src", "general", [{"role": "user", "text": "old"}], 3, True)
    own = [_event(1, "user_message", "new", "t1"), _event(2, "agent_message", "echo: new", "t1")]
    text, summary = replay_prompt(own, "next", from_document({}), "sess_new", "provider_change", carried, True, secrets=())
    block = json.loads(text.split("<compozy_context_replay>\n")[1].split("\n</compozy_context_replay>")[0])
    assert [e["text"] for e in block] == ["old", "[3 earlier messages omitted to fit the context budget]",
                                          "new", "echo: new"]
    assert "This session forks sess_src (agent: general)." in text
    assert "compozy__session_history (session_id: sess_src; after_sequence: 0" in text and summary["omitted_count"] == 3


def test_an_empty_carried_context_changes_nothing():
    carried = CarriedContext("continue", "sess_src", "general", [], 0, False)
    assert replay_prompt([], "hello", from_document({}), "sess_new", "first_prompt", carried, secrets=()) == ("hello", None)


def test_no_pointer_to_the_history_tool_when_the_agent_is_not_offered_it():
    carried = CarriedContext("continue", "sess_src", "general", [{"role": "user", "text": "old"}], 3, True)
    text, _ = replay_prompt([], "next", from_document({}), "sess_new", "first_prompt", carried, secrets=())
    assert "compozy__session_history" not in text and "[3 earlier messages omitted" in text
