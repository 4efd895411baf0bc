"""Search over every session (issue 26 item 3): query latency over a large synthetic index.

The corpus is written straight into search.db with the daemon's own schema (compozy.store.searchindex), never
through agents: 10,000 sessions and 2,000,000 messages with COMPOZY_BENCH_FULL=1 (the budget's size), 1,000 and
200,000 by default. Each message holds 4-30 words drawn from a 30,000-word vocabulary with Zipf's law (a word's
frequency ~ 1/rank), as prose has. Queries go through SearchIndex.search, as GET /api/search does (20 hits, best
first, snippets), and through a real daemon's GET /api/search for the one-word query:

- one word: 40 words of ranks 200-5,000 (a typical word; budget p50 <= 50 ms);
- a frequent word: ranks 10-20 (every 20th message or more: ranking it ranks most of the index; reported);
- a phrase: two consecutive words of a stored message, quoted (budget p50 <= 150 ms);
- a prefix: the first four letters of a typical word and `*` (reported).
"""

import random
import statistics
import time

import pytest

from conftest import FULL, ms, percentile, sized, start_daemon, table, verdict

SESSIONS = sized(1_000, 10_000)
MESSAGES = sized(200_000, 2_000_000)
VOCABULARY = 30_000
ROUNDS = 40
TARGETS = {"one word": 50.0, "phrase": 150.0}
RESULTS = {}
KINDS = ("user", "agent", "agent", "tool")


def words(count, rng):
    letters = "abcdefghijklmnopqrstuvwxyz"
    made = set()
    while len(made) < count:
        made.add("".join(rng.choice(letters) for _ in range(rng.randint(4, 9))))
    return sorted(made, key=lambda _: rng.random())  # the rank order is random too


def build(path, rng):
    """search.db with SESSIONS sessions and MESSAGES messages; returns (vocabulary, some stored texts)."""
    from compozy.store.searchindex import SearchIndex
    vocabulary = words(VOCABULARY, rng)
    weights = [1 / rank for rank in range(1, VOCABULARY + 1)]
    index = SearchIndex(path)
    db = index._writer
    for trigger in ("messages_ai", "messages_ad", "messages_au"):
        db.execute(f"DROP TRIGGER {trigger}")  # a bulk load: the FTS index is built once at the end
    db.execute("BEGIN")
    db.executemany("INSERT INTO sessions (session_id, workspace_id, agent_name, last_sequence) VALUES (?, ?, ?, ?)",
                   [(f"sess_{n:026d}", f"ws_{n % 20:026d}", "general", MESSAGES // SESSIONS) for n in range(SESSIONS)])
    samples, batch, stamp = [], 100_000, "2026-01-01T00:00:00.000000Z"
    for start in range(0, MESSAGES, batch):
        lengths = [rng.randint(4, 30) for _ in range(batch)]
        drawn = iter(rng.choices(vocabulary, cum_weights=list(_cumulative(weights)), k=sum(lengths)))
        rows = []
        for offset, length in enumerate(lengths):
            number = start + offset
            text = " ".join(next(drawn) for _ in range(length))
            rows.append((f"sess_{number % SESSIONS:026d}", KINDS[number % 4], f"msg_{number}", "turn_x",
                         number // SESSIONS + 1, stamp, text))
        samples.extend(rng.sample([row[6] for row in rows], 20))
        db.executemany("INSERT INTO messages (session_id, kind, message_id, turn_id, sequence, timestamp, text) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    db.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    index.close()
    return vocabulary, samples


def _cumulative(weights):
    total = 0.0
    for weight in weights:
        total += weight
        yield total


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    rng = random.Random(26)
    home = tmp_path_factory.mktemp("search") / "home"
    home.mkdir()
    started = time.perf_counter()
    vocabulary, samples = build(str(home / "search.db"), rng)
    built = time.perf_counter() - started
    size = (home / "search.db").stat().st_size
    print(f"\ncorpus: {SESSIONS:,} sessions, {MESSAGES:,} messages, search.db {size / 1e6:.0f} MB, built in "
          f"{built:.0f} s{'' if FULL else ' (COMPOZY_BENCH_FULL=1: the budget size, 10,000 and 2,000,000)'}")
    return home, vocabulary, samples, rng


def _queries(vocabulary, samples, rng):
    return {
        "one word": [vocabulary[rank] for rank in rng.sample(range(200, 5000), ROUNDS)],
        "a frequent word": [vocabulary[rank] for rank in rng.sample(range(10, 20), 10)],
        "phrase": ['"' + " ".join(text.split()[i:i + 2]) + '"' for text in rng.sample(samples, ROUNDS)
                   for i in [rng.randrange(len(text.split()) - 1)]],
        "prefix": [vocabulary[rank][:4] + "*" for rank in rng.sample(range(200, 5000), ROUNDS)],
    }


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    if RESULTS:
        table(f"search over {MESSAGES:,} messages in {SESSIONS:,} sessions (ms; 20 hits, best first, snippets)",
              ("query", "p50", "p95", "hits (median)", "target p50", "verdict"), list(RESULTS.values()))


def test_query_latency(benchmark, corpus):
    from compozy.store.searchindex import SearchIndex
    home, vocabulary, samples, rng = corpus
    index = SearchIndex(str(home / "search.db"))
    filters = {"equal": {}, "archived": "include", "rewound": False}
    try:
        for name, queries in _queries(vocabulary, samples, rng).items():
            times, counts = [], []
            for query in queries:
                started = time.perf_counter()
                hits, _, _ = index.search(query, filters, 20, 0)
                times.append(time.perf_counter() - started)
                counts.append(len(hits))
            p50 = ms(statistics.median(times))
            target = TARGETS.get(name)
            RESULTS[name] = (name, f"{p50:.1f}", f"{ms(percentile(times, 0.95)):.1f}", int(statistics.median(counts)),
                             f"<= {target:g}" if target else "(report)", verdict(p50, target) if target else "")
            benchmark.extra_info[f"{name}_p50_ms"] = round(p50, 2)
        benchmark.pedantic(lambda: index.search(vocabulary[1000], filters, 20, 0), rounds=5, iterations=1)
    finally:
        index.close()


def test_one_word_through_the_daemon(benchmark, corpus):
    home, vocabulary, _, rng = corpus
    daemon = start_daemon(home)
    try:
        client = daemon.client()
        times = []
        for word in (vocabulary[rank] for rank in rng.sample(range(200, 5000), ROUNDS)):
            started = time.perf_counter()
            client.call("GET", "/api/search", query={"q": word})
            times.append(time.perf_counter() - started)
        p50 = ms(statistics.median(times))
        RESULTS["one word, GET /api/search"] = ("one word, GET /api/search", f"{p50:.1f}",
                                                f"{ms(percentile(times, 0.95)):.1f}", "20", "<= 50", verdict(p50, 50.0))
        benchmark.extra_info["http_one_word_p50_ms"] = round(p50, 2)
        benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    finally:
        daemon.stop()
