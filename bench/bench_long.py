"""Long sessions and storage: history, a page of events and a rebind of a 20,000-event session.

Issue 15 budgets: reading the history of a 20,000-event session, and rebinding it (the next
prompt after a stop: a new agent process, `session/load`), at most 100 ms of daemon time; reads
must not grow with the session. Each figure is measured against the same request on a one-turn
session in the same run: the difference is what the 20,000 events cost (the rebind's difference
also holds the reference agent's own `session/load` of its longer state, so it bounds the
daemon's share from above). Storage: bytes on disk per stored event once the store is
checkpointed, and the WAL beside a live store.

The session is built through the real reference agent: 40 turns of `[chunks 497]` (user_message,
497 chunks, the echo, done: 500 events a turn).
"""

import statistics
import time

import pytest

from conftest import checkpointed_store, create_session, ms, percentile, session_path, stream_prompt, table, verdict

TURNS = 40
CHUNKS = 497
ROUNDS = 10
REBINDS = 5
TARGET_MS = 100.0

RESULTS = {}


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    from conftest import start_daemon
    root = tmp_path_factory.mktemp("long")
    home, workspace = root / "home", root / "workspace"
    workspace.mkdir()
    daemon = start_daemon(home)
    client = daemon.client()
    long = create_session(client, workspace)
    for _ in range(TURNS):
        stream_prompt(client, long, f"[chunks {CHUNKS}] long")
    short = create_session(client, workspace)
    stream_prompt(client, short, "hello")
    yield client, daemon, home, long, short
    daemon.stop()


def _timed(call):
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def _compare(name, long_times, short_times, target=TARGET_MS):
    added = ms(statistics.median(long_times) - statistics.median(short_times))
    RESULTS[name] = (ms(statistics.median(long_times)), ms(percentile(long_times, 0.95)),
                     ms(statistics.median(short_times)), added, f"<= {target:g}", verdict(added, target))
    return added


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    if RESULTS:
        table(f"a {TURNS * (CHUNKS + 3):,}-event session against a one-turn session, same run (ms)",
              ("measure", "p50", "p95", "one-turn p50", "added", "target", "verdict"),
              [(name, *(f"{v:.1f}" if isinstance(v, float) else v for v in row)) for name, row in RESULTS.items()])


def test_history_and_events_page(benchmark, sessions):
    client, _, _, long, short = sessions
    count = client.call("GET", session_path(long, "events"), query={"limit": 1})[1]["events"][-1]["sequence"]
    assert count >= TURNS * (CHUNKS + 3)
    reads = {}
    # The default history page (200 messages) holds all 80 of this session's: every event is read.
    for name, path, query in (("history, default page", "history", None),
                              ("history, newest turn (limit=2)", "history", {"limit": 2}),
                              ("events, newest page (200)", "events", None)):
        long_times, short_times = [], []
        for _ in range(ROUNDS):
            short_times.append(_timed(lambda: client.call("GET", session_path(short, path), query=query)))
            long_times.append(_timed(lambda: client.call("GET", session_path(long, path), query=query)))
        reads[name] = _compare(f"GET S/{path}: {name}", long_times, short_times)
    benchmark.pedantic(lambda: client.call("GET", session_path(long, "history")), rounds=3, iterations=1)
    benchmark.extra_info.update({f"{k}_added_ms": round(v, 2) for k, v in reads.items()}, events=count)


def test_rebind(benchmark, sessions):
    client, _, _, long, short = sessions
    long_times, short_times = [], []

    def rebind(session, into):
        client.call("POST", session_path(session, "stop"), {"wait": True})
        admit, to_done, terminal, _ = stream_prompt(client, session, "hello")
        assert terminal == "done"
        into.append(admit + to_done)

    for _ in range(REBINDS):
        rebind(short, short_times)
        rebind(long, long_times)
    added = _compare("stop, then prompt: rebind (POST->done)", long_times, short_times)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    benchmark.extra_info.update(rebind_added_ms=round(added, 2),
                                rebind_long_p50_ms=round(ms(statistics.median(long_times)), 2))


def test_storage(benchmark, sessions):
    """Bytes per event once checkpointed (the daemon's connection stays open: a copy is measured)."""
    _, _, home, long, _ = sessions
    wal = home / "sessions" / long["id"] / "events.db-wal"
    wal_bytes = wal.stat().st_size if wal.exists() else 0
    size, events, content = checkpointed_store(home, long["id"])
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    print(f"\nstorage: {events:,} events in {size / 1e6:.2f} MB checkpointed = {size / events:.0f} bytes per event "
          f"({content / events:.0f} bytes of stored content JSON each); the live store's WAL: {wal_bytes / 1e6:.2f} MB "
          f"(SQLite resets it at each checkpoint, every 1,000 pages; removed when the store closes)")
    benchmark.extra_info.update(events=events, bytes=size, bytes_per_event=round(size / events),
                                content_bytes_per_event=round(content / events), wal_bytes=wal_bytes)
