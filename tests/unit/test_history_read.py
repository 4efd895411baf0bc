"""The history read: pages of whole messages, folded from SQLite's extract of the messages, the
same answer as folding every record; a page reads rows near its cursor, not the session."""

import pytest

from compozy.ids import new_id
from compozy.session.records.replay import fold_history
from compozy.store import historypage
from compozy.store.eventlog import EventLog


def _log(tmp_path, turns=3):
    log = EventLog(str(tmp_path / "events.db"), new_id("sess"), new_id("ws")).create()
    items = []
    for turn in range(turns):
        turn_id = f"turn_{turn}"
        items.append(("user_message", turn_id, {"text": f"ask {turn}", "message_id": f"msg_{turn}"}, "general"))
        items += [("agent_message", turn_id, {"text": f"part {n} ", "agent_message_id": "a1" if n < 2 else None},
                   "general") for n in range(4)]
        items.append(("tool_call", turn_id, {"tool_call_id": "t1", "title": "x"}, "general"))
        items.append(("agent_message", turn_id, {"text": "after the tool"}, "general"))
        items.append(("done", turn_id, {"stop_reason": "end_turn"}, "general"))
    log.append(items)
    return log


@pytest.mark.parametrize("archive", ["active", "archived", "all"])
def test_a_page_as_large_as_the_history_folds_like_the_whole_records(tmp_path, archive):
    log = _log(tmp_path)
    log.archive(3, 8)
    expected = fold_history(log.read_all(archive=archive), secrets=())
    records, page = historypage.page(log, archive, limit=1000)
    assert fold_history(records, secrets=()) == expected
    assert expected and page["has_more"] is False and page["has_newer"] is False


@pytest.mark.parametrize("limit", [1, 2, 3, 5])
def test_paging_back_and_forth_covers_every_message_once(tmp_path, limit):
    log = _log(tmp_path, turns=7)
    expected = fold_history(log.read_all(), secrets=())
    pages, before = [], None
    while True:
        records, page = historypage.page(log, before_sequence=before, limit=limit)
        pages.insert(0, fold_history(records, secrets=()))
        assert len(pages[0]) == limit or not page["has_more"]
        if not page["has_more"]:
            break
        before = page["before_sequence"]
    assert [m for p in pages for m in p] == expected
    forward, after = [], 0
    while True:
        records, page = historypage.page(log, after_sequence=after, limit=limit)
        forward += fold_history(records, secrets=())
        if not page["has_newer"]:
            break
        after = page["after_sequence"]
    assert forward == expected


def test_a_cursor_inside_a_message_keeps_the_message_whole(tmp_path):
    log = _log(tmp_path, turns=2)
    expected = fold_history(log.read_all(), secrets=())
    records, page = historypage.page(log, before_sequence=4, limit=5)  # sequence 4: the answer's third chunk
    assert fold_history(records, secrets=()) == expected[:2] and page["has_newer"] is True
    records, _ = historypage.page(log, after_sequence=3, limit=5)  # the answer began before: not here
    assert fold_history(records, secrets=()) == expected[2:]


def test_a_page_reads_rows_near_its_cursor(tmp_path, monkeypatch):
    log = _log(tmp_path, turns=200)
    fetched = []
    rows = historypage._rows

    def counting(*args, **kwargs):
        for row in rows(*args, **kwargs):
            fetched.append(row)
            yield row
    monkeypatch.setattr(historypage, "_rows", counting)
    records, page = historypage.page(log, limit=4)
    assert len(fold_history(records, secrets=())) == 4 and page["has_more"]
    assert len(fetched) < 4 * 6 + historypage.FIRST_BATCH * 2


@pytest.mark.parametrize("cursor", [{"after_sequence": 2**63 - 1}, {"before_sequence": 0},
                                    {"after_sequence": 0, "before_sequence": 0}])
def test_cursors_at_the_ends_answer_an_empty_page(tmp_path, cursor):
    records, page = historypage.page(_log(tmp_path), **cursor)
    assert records == [] and page["before_sequence"] is None and page["after_sequence"] is None
