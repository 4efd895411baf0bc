"""Memory and storage growth: the daemon's RSS with many sessions and live agents, and after many turns.

Issue 15 budgets: the daemon's RSS (agents excluded: they are other processes) at most 80 MiB
with 1,000 sessions in the catalog and 20 live agents; RSS after 10,000 turns within 10% of RSS
after 1,000 (no growth). Storage: the growth of the sessions' stores per turn over the same turns.

By default the turn counts are 500 and 2,500 (the same 1:5 shape, under a minute);
COMPOZY_BENCH_FULL=1 runs 1,000 and 10,000. Turns run 20 at a time, one per live session.
"""

import threading
from unittest import mock

import pytest

from conftest import checkpointed_store, create_session, populate, rss_mib, sized, start_daemon, stream_prompt, table

SESSIONS = 1000
LIVE = 20
FIRST, SECOND = sized(500, 1000), sized(2500, 10000)
RSS_TARGET_MIB = 80.0
GROWTH_TARGET = 1.10


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory")
    home, workspace = root / "home", root / "workspace"
    workspace.mkdir()
    with mock.patch("os.fsync", lambda fd: None):
        populate(home, workspace, SESSIONS - LIVE)
    daemon = start_daemon(home)
    client = daemon.client()
    yield daemon, client, workspace, home
    daemon.stop()


def _turns(client, sessions, count):
    """count turns in all, LIVE at a time (one thread per session)."""
    share = [count // len(sessions) + (1 if i < count % len(sessions) else 0) for i in range(len(sessions))]

    def run(session, turns):
        for _ in range(turns):
            stream_prompt(client, session, "hello")

    threads = [threading.Thread(target=run, args=(s, n)) for s, n in zip(sessions, share)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_memory_and_growth(benchmark, loaded):
    daemon, client, workspace, home = loaded
    pid = daemon.process.pid
    idle = rss_mib(pid)
    sessions = [create_session(client, workspace) for _ in range(LIVE)]
    for session in sessions:
        stream_prompt(client, session, "hello")  # 20 live agents
    live = rss_mib(pid)

    def grow():
        _turns(client, sessions, FIRST - LIVE)
        after_first = (rss_mib(pid), sum(checkpointed_store(home, s["id"])[0] for s in sessions))
        _turns(client, sessions, SECOND - FIRST)
        after_second = (rss_mib(pid), sum(checkpointed_store(home, s["id"])[0] for s in sessions))
        return after_first, after_second

    (rss_first, bytes_first), (rss_second, bytes_second) = benchmark.pedantic(grow, rounds=1, iterations=1)
    growth = rss_second / rss_first
    per_turn = (bytes_second - bytes_first) / (SECOND - FIRST)
    live_verdict = "meets target" if live <= RSS_TARGET_MIB else "MISSES target"
    growth_verdict = "meets target" if growth <= GROWTH_TARGET else "MISSES target"
    table(f"daemon RSS (MiB), {SESSIONS:,} sessions in the catalog", ("measure", "RSS MiB", "target", "verdict"), [
        (f"{SESSIONS - LIVE:,} sessions, no agent", f"{idle:.1f}", "-", "-"),
        (f"{SESSIONS:,} sessions, {LIVE} live agents", f"{live:.1f}", f"<= {RSS_TARGET_MIB:g}", live_verdict),
        (f"after {FIRST:,} turns", f"{rss_first:.1f}", "-", "-"),
        (f"after {SECOND:,} turns", f"{rss_second:.1f} ({growth:.3f}x)", f"<= {GROWTH_TARGET:g}x", growth_verdict)])
    print(f"storage: {per_turn:.0f} bytes per 'hello' turn (user_message, one chunk, done; checkpointed) between "
          f"turn {FIRST:,} and {SECOND:,}; {bytes_second / 1e6:.1f} MB in {LIVE} stores")
    benchmark.extra_info.update(idle_rss_mib=round(idle, 1), live_rss_mib=round(live, 1),
                                rss_after_first_mib=round(rss_first, 1), rss_after_second_mib=round(rss_second, 1),
                                growth=round(growth, 3), bytes_per_turn=round(per_turn), turns=[FIRST, SECOND],
                                verdicts=[live_verdict, growth_verdict])
