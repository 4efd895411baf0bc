"""Bounded storage (issue 26 item 7): bytes per stored chunk event, and what compaction leaves of an archived session.

A session of 20 turns of `[chunks 497]` through the real reference agent (10,000 events, nearly all chunks: a
typical stream's shape) is stopped and archived; its store is measured checkpointed (a copy, as bench_long does),
then compacted with the retention policy's own function (compozy.store.compaction.compact) and measured again.
Budgets: <= 200 bytes per chunk event; the compacted store <= 40% of the uncompacted one.
"""

import shutil
import sqlite3

from conftest import checkpointed_store, create_session, session_path, start_daemon, stream_prompt, table, verdict

TURNS = 20
CHUNKS = 497


def test_chunk_bytes_and_compaction(benchmark, tmp_path):
    from compozy.store.compaction import compact, store_bytes
    home, workspace = tmp_path / "home", tmp_path / "workspace"
    workspace.mkdir()
    daemon = start_daemon(home)
    try:
        client = daemon.client()
        session = create_session(client, workspace)
        for _ in range(TURNS):
            stream_prompt(client, session, f"[chunks {CHUNKS}] typical")
        client.call("POST", session_path(session, "archive"), query={"stop": "true"})
        size, events, content = checkpointed_store(home, session["id"])
        source = home / "sessions" / session["id"] / "events.db"
        copy = tmp_path / "events.db"
        with sqlite3.connect(f"file:{source}?mode=ro", uri=True) as reader, sqlite3.connect(copy) as target:
            reader.backup(target)
    finally:
        daemon.stop()
    result = compact(str(copy), "".join)
    after = sum(store_bytes(str(copy)))
    with sqlite3.connect(copy) as db:
        left = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    per_event, ratio = size / events, after / size
    table(f"storage of a {events:,}-event session (checkpointed bytes)",
          ("measure", "value", "target", "verdict"),
          [("bytes per stored event", f"{per_event:.0f} ({content / events:.0f} of stored content JSON)", "<= 200",
            verdict(per_event, 200)),
           ("compacted / uncompacted", f"{after:,} / {size:,} = {ratio:.1%} ({left} events left)", "<= 40%",
            verdict(ratio, 0.40))])
    benchmark.extra_info.update(bytes_per_event=round(per_event), compacted_ratio=round(ratio, 3),
                                folded_runs=result["folded_runs"])
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    shutil.rmtree(home, ignore_errors=True)
