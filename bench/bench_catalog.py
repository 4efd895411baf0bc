"""Catalog latency over HTTP against a real daemon: session create, list at 1,000 / 10,000 sessions, boot.

Issue 15 budgets (measured, never asserted): at least 300 creates per second over HTTP with a new
connection each (the CLI's path), against `GET /api/health` on a new connection each in the same
run (the HTTP floor); with 10,000 sessions the default page at most 5 ms and `limit=1000` at most
20 ms; 10,000 session directories to a ready daemon in at most 2 s (catalog in step, and catalog
rebuilt from the directories). Issue 2's older targets (create p50 under 3 ms, list 1,000 under
10 ms) are still printed. For scale, opencode 1.18.33 on this machine class (peers.md section 5):
10-12 ms per create (p50 12.5 / 10.1 ms, p95 23.6 / 18.2 ms over two batches of 200) and
16-42 ms to list ~800 sessions.

Creates go through compozy.cli.client.Client, which opens a new loopback TCP connection per request,
as the CLI does and as the opencode figures were taken (stdlib urllib, sequential). Lists are
timed the same way up to the last byte of the body; decoding the 0.82 MB JSON page in this
client (another 10-20 ms) is left out of the timing, the row count is checked outside it.
"""

import http.client
import json
import statistics
import time
from unittest import mock
from urllib.parse import urlencode, urlsplit

import pytest

from tests.harness.daemon import auth_for
from conftest import create_session, ms, populate, raw_timings, start_daemon, summary, table, verdict

CREATES = 250  # >= 200 timed creates
CREATE_WARMUP = 10
LIST_ROUNDS = 25
DEFAULT_PAGE_ROUNDS = 40
CREATE_TARGET_P50_MS = 3.0
LIST_1000_TARGET_MS = 10.0
CREATE_RATE_TARGET = 300.0  # per second
DEFAULT_PAGE_TARGET_MS = 5.0
LIST_10000_TARGET_MS = 20.0
BOOT_TARGET_S = 2.0

OPENCODE = {  # peers.md 5.2, opencode 1.18.33 on this machine class, sequential urllib client
    "create": "p50 10.1-12.5 ms, p95 18.2-23.6 ms (POST /session, 200 creates)",
    "list": "list ~800: 16 ms (/experimental/session), 32 ms (/session?limit=10000), 42 ms (v2 /api/session)",
}

RESULTS = {}


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    rows = []
    for name in ("create", "health (HTTP floor)", "list 1,000 (limit=1000)", "list 10,000 (default page)", "list 10,000 (limit=1000)",
                 "boot 10,000 (catalog in step)", "boot 10,000 (catalog rebuilt)"):
        if name in RESULTS:
            r = RESULTS[name]
            rows.append((name, r["n"], f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}", r.get("rate", "-"),
                         r.get("target", "-"), r.get("verdict", "-")))
    if rows:
        table("compozy catalog over HTTP (ms)", ("measure", "n", "p50", "p95", "per s", "target", "verdict"), rows)
        print(f"opencode for scale: create {OPENCODE['create']}; {OPENCODE['list']}")


def test_create_latency(benchmark, client, workspace):
    """POST /api/sessions: >= 200 sequential creates on a fresh home, p50, p95 and the rate; the HTTP
    floor (GET /api/health, a new connection each) measured in the same run, interleaved."""
    for _ in range(CREATE_WARMUP):
        create_session(client, workspace)
    floor = []

    def health():
        start = time.perf_counter()
        client.call("GET", "/api/health")
        floor.append(time.perf_counter() - start)

    benchmark.pedantic(create_session, args=(client, workspace), setup=health, rounds=CREATES, iterations=1)
    timings = raw_timings(benchmark)
    stats = summary(timings)
    rate = len(timings) / sum(timings)
    stats["rate"] = f"{rate:.0f}"
    stats["target"] = f">= {CREATE_RATE_TARGET:g}/s"
    stats["verdict"] = "meets target" if rate >= CREATE_RATE_TARGET else "MISSES target"
    RESULTS["health (HTTP floor)"] = dict(summary(floor), rate=f"{len(floor) / sum(floor):.0f}")
    benchmark.extra_info.update(creates_per_s=round(rate, 1), floor_p50_ms=round(ms(statistics.median(floor)), 3),
                                over_floor=round(statistics.median(timings) / statistics.median(floor), 2))
    RESULTS["create"] = stats
    benchmark.extra_info.update({k: round(v, 3) if isinstance(v, float) else v for k, v in stats.items()})
    benchmark.extra_info["opencode_create"] = OPENCODE["create"]
    print(f"\ncreate: p50 {stats['p50_ms']:.2f} ms, p95 {stats['p95_ms']:.2f} ms over {stats['n']} creates, "
          f"{rate:.0f}/s (target >= {CREATE_RATE_TARGET:g}/s: {stats['verdict']}; issue 2: p50 < "
          f"{CREATE_TARGET_P50_MS:g} ms); HTTP floor p50 {ms(statistics.median(floor)):.2f} ms; "
          f"opencode: {OPENCODE['create']}")


class Catalog:
    """One home grown in place: 1,000 sessions first, then 9,000 more for the 10,000 case.

    Sessions are created in-process with SessionManager while no daemon runs (the daemon
    indexes them at boot). os.fsync is stubbed during this setup only: the benchmark measures
    listing, not how durably the fixture was written, and meta.json's two fsyncs per create
    would otherwise make 10,000 creates take minutes on this VM.
    """

    def __init__(self, root):
        self.home = root / "home"
        self.workspace = root / "workspace"
        self.workspace.mkdir()
        self.count = 0
        self.daemon = None
        self.boot_seconds = None

    def grow_to(self, count):
        """The daemon's URL once `count` sessions exist; also records how long the boot took."""
        if count > self.count:
            self.stop()
            with mock.patch("os.fsync", lambda fd: None):
                populate(self.home, self.workspace, count - self.count)
            self.count = count
        if self.daemon is None:
            start = time.perf_counter()
            self.daemon = start_daemon(self.home)
            self.boot_seconds = time.perf_counter() - start
        return self.daemon.http_url

    def stop(self):
        if self.daemon is not None:
            self.daemon.stop()
            self.daemon = None


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    state = Catalog(tmp_path_factory.mktemp("catalog"))
    yield state
    state.stop()


def _fetch(url, target):
    """GET on a new connection (like Client), body read to the last byte, not decoded."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request("GET", target, headers=auth_for(parts.port))
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise AssertionError(f"GET {target}: HTTP {response.status}: {body[:300]!r}")
        return body
    finally:
        connection.close()


def _measure_list(benchmark, url, name, expected, rounds, target=None, **query):
    path = "/api/sessions" + ("?" + urlencode(query) if query else "")
    for _ in range(3):
        body = _fetch(url, path)  # warm the catalog pages and the JSON path
    document = json.loads(body)
    assert len(document["sessions"]) == expected  # a correctness check, outside the timing
    benchmark.pedantic(_fetch, args=(url, path), rounds=rounds, iterations=1)
    stats = summary(raw_timings(benchmark))
    stats["total"] = document["page"]["total"]
    stats["body_bytes"] = len(body)
    if target is not None:
        stats["target"] = f"p50 < {target:g}"
        stats["verdict"] = verdict(stats["p50_ms"], target)
    RESULTS[name] = stats
    benchmark.extra_info.update({k: round(v, 3) if isinstance(v, float) else v for k, v in stats.items()})
    benchmark.extra_info["opencode_list"] = OPENCODE["list"]
    tail = f" (target p50 < {target:g} ms: {stats['verdict']})" if target is not None else ""
    print(f"\n{name}: p50 {stats['p50_ms']:.2f} ms, p95 {stats['p95_ms']:.2f} ms, {expected} rows of "
          f"{stats['total']} ({len(body) / 1e6:.2f} MB){tail}")
    return stats


def test_list_1000(benchmark, catalog):
    """GET /api/sessions?limit=1000 with 1,000 sessions in the catalog."""
    url = catalog.grow_to(1000)
    benchmark.extra_info["daemon_boot_s"] = round(catalog.boot_seconds, 2)
    _measure_list(benchmark, url, "list 1,000 (limit=1000)", 1000, LIST_ROUNDS, LIST_1000_TARGET_MS, limit=1000)


def test_list_10000_default_page(benchmark, catalog):
    """GET /api/sessions (default page of 100) with 10,000 sessions in the catalog."""
    url = catalog.grow_to(10000)
    benchmark.extra_info["daemon_boot_s"] = round(catalog.boot_seconds, 2)
    print(f"\ndaemon boot with 10,000 sessions: {catalog.boot_seconds:.1f} s")
    _measure_list(benchmark, url, "list 10,000 (default page)", 100, DEFAULT_PAGE_ROUNDS, DEFAULT_PAGE_TARGET_MS)


def test_list_10000_limit_1000(benchmark, catalog):
    """GET /api/sessions?limit=1000 with 10,000 sessions in the catalog."""
    url = catalog.grow_to(10000)
    _measure_list(benchmark, url, "list 10,000 (limit=1000)", 1000, LIST_ROUNDS, LIST_10000_TARGET_MS, limit=1000)


def _boot(benchmark, catalog, name, prepare=None):
    """Stop the daemon, optionally change the home, and time a start to ready (daemon.json written)."""
    catalog.grow_to(10000)
    catalog.stop()
    if prepare:
        prepare()
    catalog.grow_to(10000)
    seconds = catalog.boot_seconds
    empty = _empty_boot(catalog.home.parent / f"empty-{len(RESULTS)}")
    verdict_text = verdict(seconds, BOOT_TARGET_S)
    RESULTS[name] = {"n": 1, "p50_ms": ms(seconds), "p95_ms": ms(seconds), "target": f"<= {BOOT_TARGET_S:g} s",
                     "verdict": verdict_text}
    benchmark.extra_info.update(boot_s=round(seconds, 3), empty_home_boot_s=round(empty, 3), verdict=verdict_text)
    print(f"\n{name}: {seconds:.2f} s (target <= {BOOT_TARGET_S:g} s: {verdict_text}); an empty home in the same "
          f"run: {empty:.2f} s, so the 10,000 sessions add {seconds - empty:+.2f} s")


def _empty_boot(home):
    """The floor: the same daemon start (interpreter, imports, sockets) on a home without sessions."""
    start = time.perf_counter()
    daemon = start_daemon(home)
    seconds = time.perf_counter() - start
    daemon.stop()
    return seconds


def test_boot_10000(benchmark, catalog):
    """A restart with 10,000 session directories whose catalog rows are in step."""
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    _boot(benchmark, catalog, "boot 10,000 (catalog in step)")


def test_boot_10000_rebuilt(benchmark, catalog):
    """A start with 10,000 session directories and no catalog: every meta.json read and indexed."""
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)

    def drop_catalog():
        for suffix in ("", "-wal", "-shm"):
            (catalog.home / ("compozy.db" + suffix)).unlink(missing_ok=True)

    _boot(benchmark, catalog, "boot 10,000 (catalog rebuilt)", drop_catalog)

