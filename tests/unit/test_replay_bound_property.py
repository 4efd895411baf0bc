"""The bounded replay, as properties: whatever the transcript, the carried context never exceeds
max_replay_bytes, keeps the first user message and the newest messages that fit, prunes only tool
results older than the protected tail, and states its omissions exactly
(compozy/session/records/replay.py, bound)."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from compozy.session.records.replay import OMISSION, PROTECTED_TAIL, TRUNCATED, bound, omission_note

ROLES = ("user", "assistant", "tool", "system")
TEXTS = st.one_of(st.text(max_size=60), st.text(min_size=200, max_size=3000),
                  st.builds(lambda n, c: c * n, st.integers(0, 6000), st.sampled_from("xé漢😀")))
messages = st.lists(st.fixed_dictionaries({
    "role": st.sampled_from(ROLES), "text": TEXTS, "turn_id": st.sampled_from([None, "turn_a", "turn_b"]),
}, optional={"brief": st.text(max_size=80)}), max_size=80)


def _size(entries):
    return len(json.dumps(entries, ensure_ascii=False).encode("utf-8"))


def _capped(message, limit, protected):
    text = message["text"] if protected else message.get("brief", message["text"])
    if len(text.encode()) > limit:
        text = text.encode()[:limit - len(TRUNCATED.encode())].decode("utf-8", "ignore") + TRUNCATED
    entry = {"role": message["role"], "text": text}
    if message["turn_id"]:
        entry["turn_id"] = message["turn_id"]
    return entry


@settings(max_examples=300, deadline=None)
@given(messages, st.integers(4096, 24000), st.integers(1024, 24000), st.integers(0, 40), st.booleans())
def test_the_bounded_context(messages, max_replay, max_message, prior_omitted, prior_truncated):
    max_message = min(max_message, max_replay)
    result = bound(messages, max_replay, max_message, prior_omitted, prior_truncated)
    entries = result.entries
    capped = [_capped(m, max_message, i >= len(messages) - PROTECTED_TAIL) for i, m in enumerate(messages)]

    # Never over the hard bound, and the size reported is the size sent.
    assert result.size == _size(entries) <= max_replay

    # Omissions are stated exactly: one note, carrying the total, present exactly when something is left out.
    notes = [i for i, e in enumerate(entries) if e == omission_note(result.omitted_count)]
    kept = [e for i, e in enumerate(entries) if i not in notes]
    assert result.omitted_count == prior_omitted + len(messages) - len(kept)
    assert len(notes) == (1 if result.omitted_count else 0)
    if not result.omitted_count:
        assert entries == capped
        assert result.truncated == (prior_truncated or any(c["text"].endswith(TRUNCATED) and
                                                           len(c["text"].encode()) < len(m["text"].encode())
                                                           for c, m in zip(capped, messages)))
        return
    assert result.truncated

    # What is kept: optionally the first user message, then the note, then the newest others, contiguous.
    pin = next((i for i, m in enumerate(messages) if m["role"] == "user"), None)
    others = [i for i in range(len(messages)) if i != pin]
    pinned = pin is not None and notes[0] == 1
    tail = kept[1:] if pinned else kept
    assert notes[0] == (1 if pinned else 0)
    if pinned:
        assert kept[0] == capped[pin]
    assert tail == [capped[i] for i in others[len(others) - len(tail):]]

    # The newest messages that fit: one more would break the bound.
    if len(tail) < len(others):
        older = capped[others[len(others) - len(tail) - 1]]
        bigger = ([capped[pin]] if pinned else []) + [omission_note(result.omitted_count - 1), older] + tail
        assert _size(bigger) > max_replay

    # The first user message stays pinned whenever it fits at all beside the note.
    if pin is not None:
        assert pinned == (_size([capped[pin], omission_note(prior_omitted + len(messages) - 1)]) <= max_replay)


def test_the_note_reads_as_the_seed_writes_it():
    assert OMISSION.format(3) == "[3 earlier messages omitted to fit the context budget]"
