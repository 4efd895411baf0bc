"""The search indexer gathers a stream's commits into one pass after the stream (issue 26 item 3): a commit during
the settle that the first one started does not end it early (each commit of a stream marks its session, and a
pass per commit ran the indexing on the agent's output time: bench/bench_index_stream.py), a pass still follows
the last commit, and closing ends a settle at once. The real Indexer and its thread, a real search.db; the passes
are counted, the clock is not asserted.
"""

import threading
from time import monotonic
from types import SimpleNamespace

from compozy.session.records import indexer as indexer_module
from compozy.session.records.indexer import Indexer
from compozy.threads import Threads


class Recorded(Indexer):
    def __init__(self, services):
        super().__init__(services)
        self.passes, self.commits = [], 0  # (session, how many commits were marked when the pass began)

    def index_session(self, session_id):
        self.passes.append((session_id, self.commits))


def services(tmp_path):
    return SimpleNamespace(home=SimpleNamespace(search_file=tmp_path / "search.db"),
                           catalog_feed=SimpleNamespace(last_sequence=0, after=lambda cursor, limit: []),
                           catalog=SimpleNamespace(session_ids=lambda: []), threads=Threads())


def test_a_stream_of_commits_is_indexed_in_one_pass_after_it(tmp_path):
    indexer = Recorded(services(tmp_path))
    indexer.started()
    session = SimpleNamespace(id="sess_a")
    try:
        pause = threading.Event()  # never set: its wait is a pause
        for number in range(1, 201):  # a stream of 200 small commits, 0.5 ms apart: well inside one settle
            indexer.commits = number
            indexer.appended(session, [])
            pause.wait(0.0005)
        for _ in range(100):
            if indexer.passes and indexer.passes[-1][1] == 200:
                break
            pause.wait(0.05)
    finally:
        indexer.closing()
    assert indexer.passes and indexer.passes[-1] == ("sess_a", 200)  # a pass after the last commit
    assert len(indexer.passes) < 5, indexer.passes  # not a pass per commit (a settle is 0.5 s; 200 passes before)


def test_closing_ends_a_settle(tmp_path):
    indexer = Recorded(services(tmp_path))
    indexer.started()
    indexer.appended(SimpleNamespace(id="sess_a"), [])
    thread = indexer._thread
    indexer.closing()
    assert not thread.is_alive()


def stream(indexer, seconds, spacing=0.01):
    """Commits of one session every `spacing` seconds for `seconds`; the number of commits made."""
    session, pause, number = SimpleNamespace(id="sess_a"), threading.Event(), 0
    deadline = monotonic() + seconds
    while monotonic() < deadline:
        number += 1
        indexer.commits = number
        indexer.appended(session, [])
        pause.wait(spacing)
    return number


def settled(indexer, commits):
    pause = threading.Event()
    for _ in range(100):
        if indexer.passes and indexer.passes[-1][1] == commits:
            return
        pause.wait(0.05)


def test_a_burst_longer_than_the_settle_is_indexed_after_it(tmp_path, monkeypatch):
    """Commits that go on past the settle hold the pass back until they pause: the pass does not take the
    interpreter from the agent's reader while it is busy (quiet 0.3 s here, so a slow test machine's stall
    between two commits is not taken for the end of the burst)."""
    monkeypatch.setattr(indexer_module, "QUIET_SECONDS", 0.3)
    monkeypatch.setattr(indexer_module, "MAX_LAG_SECONDS", 5.0)
    indexer = Recorded(services(tmp_path))
    indexer.started()
    try:
        commits = stream(indexer, 0.9)  # past the 0.5 s settle
        settled(indexer, commits)
    finally:
        indexer.closing()
    assert indexer.passes[0] == ("sess_a", commits), indexer.passes  # the first pass came after the burst


def test_a_stream_that_never_pauses_is_still_indexed_within_the_lag(tmp_path, monkeypatch):
    monkeypatch.setattr(indexer_module, "MAX_LAG_SECONDS", 1.0)
    indexer = Recorded(services(tmp_path))
    indexer.started()
    try:
        commits = stream(indexer, 2.5)
        settled(indexer, commits)
    finally:
        indexer.closing()
    assert indexer.passes[0][1] < commits, indexer.passes  # a pass while the stream went on
    assert indexer.passes[-1] == ("sess_a", commits)
