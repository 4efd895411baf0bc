"""The search indexer gathers a stream's commits into one pass after the stream (issue 26 item 3): a commit during
the settle that the first one started does not end it early (each commit of a stream marks its session, and a
pass per commit ran the indexing on the agent's output time: bench/bench_index_stream.py), a pass still follows
the last commit, and closing ends a settle at once. The real Indexer and its thread, a real search.db; the passes
are counted, the clock is not asserted.
"""

import threading
from types import SimpleNamespace

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
