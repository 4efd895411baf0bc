"""The history read folds from SQLite's extract of the messages: the same answer as folding every record."""

import pytest

from compozy.ids import new_id
from compozy.session.records.replay import fold_history
from compozy.store.eventlog import EventLog


@pytest.mark.parametrize("archive", ["active", "archived", "all"])
def test_history_records_fold_like_the_whole_records(tmp_path, archive):
    log = EventLog(str(tmp_path / "events.db"), new_id("sess"), new_id("ws")).create()
    items = []
    for turn in range(3):
        turn_id = f"turn_{turn}"
        items.append(("user_message", turn_id, {"text": f"ask {turn}", "message_id": f"msg_{turn}"}, "general"))
        items += [("agent_message", turn_id, {"text": f"part {n} ", "agent_message_id": "a1" if n < 2 else None},
                   "general") for n in range(4)]
        items.append(("tool_call", turn_id, {"tool_call_id": "t1", "title": "x"}, "general"))
        items.append(("agent_message", turn_id, {"text": "after the tool"}, "general"))
        items.append(("done", turn_id, {"stop_reason": "end_turn"}, "general"))
    log.append(items)
    log.archive(3, 8)
    expected = fold_history(log.read_all(archive=archive))
    assert fold_history(log.history_records(archive)) == expected
    assert expected
