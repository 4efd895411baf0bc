"""Which checkpoint references `compozy gc` drops (compozy/checkpoints/retention.py, a pure function)."""

import time

from compozy.checkpoints.retention import taken_at, to_drop
from compozy.ids import new_id


def _ref(session_id, checkpoint_id):
    return f"refs/compozy/{session_id}/{checkpoint_id}"


def test_a_checkpoint_id_tells_when_it_was_taken():
    before = time.time()
    checkpoint_id = new_id("ckpt")
    assert before - 0.01 <= taken_at(checkpoint_id) <= time.time() + 0.01


def test_keep_last_keeps_the_newest_of_each_session():
    a, b = new_id("sess"), new_id("sess")
    a_ids, b_ids = [new_id("ckpt") for _ in range(4)], [new_id("ckpt") for _ in range(2)]
    refs = [_ref(a, c) for c in a_ids] + [_ref(b, c) for c in b_ids]
    dropped = to_drop(refs, {a, b}, time.time(), keep_last=2)
    assert sorted(dropped) == sorted(_ref(a, c) for c in a_ids[:2])


def test_keep_for_drops_what_is_older_and_nothing_when_zero():
    session = new_id("sess")
    old = "ckpt_" + "0" * 26  # taken at the epoch
    fresh = new_id("ckpt")
    refs = [_ref(session, old), _ref(session, fresh)]
    assert to_drop(refs, {session}, time.time(), keep_for=3600) == [_ref(session, old)]
    assert to_drop(refs, {session}, time.time()) == []


def test_the_checkpoints_of_a_session_that_is_gone_are_dropped():
    gone, kept = new_id("sess"), new_id("sess")
    refs = [_ref(gone, new_id("ckpt")), _ref(kept, new_id("ckpt"))]
    assert to_drop(refs, {kept}, time.time()) == [refs[0]]
