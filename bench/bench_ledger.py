"""The attention inbox and the usage ledger over HTTP against a real daemon, with 10,000 sessions' rows.

Issue 25 budgets (measured, never asserted): GET /api/attention and a 30-day usage summary
(GET /api/usage?group_by=agent&since=30d) each at most 20 ms with 10,000 sessions in the catalog,
next to GET /api/health on a new connection each in the same run (the HTTP floor), reported as ratios.
By session: every group (thousands), and the biggest 50 (`limit`, the page of the biggest spenders),
held to the same 20 ms.

The catalog is filled before the daemon starts, through the store's own classes: 10,000 sessions with
three turns each in the ledger (30,000 rows over 60 days, 4 agents, 5 workspaces, half of them with a
cost), and in the inbox two resolved items per session plus 300 open ones.
"""

import http.client
import random
import time
from urllib.parse import urlsplit

import pytest

from compozy.clock import iso_from_epoch
from compozy.ids import new_id
from compozy.paths import Home
from compozy.store.catalog import Catalog
from tests.harness.daemon import auth_for
from conftest import raw_timings, start_daemon, summary, table, verdict

SESSIONS = 10_000
TURNS = 3
OPEN_ITEMS = 300
ROUNDS = 40
TARGET_MS = 20.0
RESULTS = {}


def fill(home, lived=None):
    """lived: each session's turns end within that many seconds of its start (sessions spread over 60 days);
    None: every turn anywhere in the 60 days."""
    catalog = Catalog(Home(home).ensure().catalog_file)
    now, rng = time.time(), random.Random(25)
    try:
        with catalog.transaction():
            for index in range(SESSIONS):
                session_id = new_id("sess")
                start = now - rng.uniform(0, 60 * 86400)
                for _ in range(TURNS):
                    ended = iso_from_epoch(min(now, start + rng.uniform(0, lived)) if lived else
                                           now - rng.uniform(0, 60 * 86400))
                    row = {"turn_id": new_id("turn"), "session_id": session_id, "workspace_id": f"ws_{index % 5}",
                           "agent": f"agent{index % 4}", "provider": "p", "model": f"m{index % 3}",
                           "input_tokens": 1000, "output_tokens": 200, "total_tokens": 1200, "started_at": ended,
                           "ended_at": ended, "day": ended[:10], "end": "done", "duration_ms": 900}
                    if index % 2:
                        row.update(cost_amount=0.01, cost_currency="USD")
                    catalog.ledger.record(row)
                for number in range(2 + (index < OPEN_ITEMS)):
                    catalog.attention.open(f"bench:{session_id}:{number}", "permission", session_id, f"ws_{index % 5}",
                                           "the agent asks permission: edit", [{"id": "yes", "label": "Allow",
                                                                                "operation": None, "with": {}}])
                    if number < 2:
                        catalog.attention.resolve_cause(f"bench:{session_id}:{number}", "answered")
    finally:
        catalog.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    home = tmp_path_factory.mktemp("ledger") / "home"
    fill(home)
    daemon = start_daemon(home)
    yield daemon.http_url
    daemon.stop()


@pytest.fixture(scope="module")
def served_lived(tmp_path_factory):
    """The same catalog with sessions that live for up to 4 hours, as real ones do."""
    home = tmp_path_factory.mktemp("ledger-lived") / "home"
    fill(home, lived=4 * 3600)
    daemon = start_daemon(home)
    yield daemon.http_url
    daemon.stop()


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    floor = RESULTS.get("health (HTTP floor)")
    rows = [(name, r["n"], f"{r['p50_ms']:.2f}", f"{r['p95_ms']:.2f}",
             f"{r['p50_ms'] / floor['p50_ms']:.1f}x" if floor else "-", r.get("target", "-"), r.get("verdict", "-"))
            for name, r in RESULTS.items()]
    if rows:
        table("inbox and usage ledger over HTTP, 10,000 sessions (ms)",
              ("measure", "n", "p50", "p95", "vs health", "target", "verdict"), rows)


def _fetch(url, target):
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        connection.request("GET", target, headers=auth_for(parts.port))
        response = connection.getresponse()
        body = response.read()
        assert response.status == 200, body[:300]
        return body
    finally:
        connection.close()


def _measure(benchmark, url, name, path, target=None):
    for _ in range(3):
        _fetch(url, path)
    benchmark.pedantic(_fetch, args=(url, path), rounds=ROUNDS, iterations=1)
    stats = summary(raw_timings(benchmark))
    if target is not None:
        stats.update(target=f"p50 <= {target:g}", verdict=verdict(stats["p50_ms"], target))
    RESULTS[name] = stats
    benchmark.extra_info.update({k: round(v, 3) if isinstance(v, float) else v for k, v in stats.items()})
    print(f"\n{name}: p50 {stats['p50_ms']:.2f} ms, p95 {stats['p95_ms']:.2f} ms")


def test_health_floor(benchmark, served):
    _measure(benchmark, served, "health (HTTP floor)", "/api/health")


def test_inbox(benchmark, served):
    _measure(benchmark, served, "inbox (300 open of 20,300)", "/api/attention", TARGET_MS)


def test_usage_30_days_by_agent(benchmark, served):
    _measure(benchmark, served, "usage 30d by agent", "/api/usage?group_by=agent&since=30d", TARGET_MS)


def test_usage_30_days_by_day(benchmark, served):
    _measure(benchmark, served, "usage 30d by day", "/api/usage?group_by=day&since=30d", TARGET_MS)


def test_usage_30_days_by_session(benchmark, served):
    _measure(benchmark, served, "usage 30d by session (~8,700 groups)", "/api/usage?group_by=session&since=30d")


def test_usage_30_days_by_session_biggest_50(benchmark, served):
    _measure(benchmark, served, "usage 30d by session, biggest 50", "/api/usage?group_by=session&since=30d&limit=50",
             TARGET_MS)


def test_usage_all_time_by_session_biggest_50(benchmark, served):
    _measure(benchmark, served, "usage all time by session, biggest 50", "/api/usage?group_by=session&limit=50",
             TARGET_MS)


def test_usage_30_days_by_session_biggest_50_of_sessions_living_hours(benchmark, served_lived):
    _measure(benchmark, served_lived, "usage 30d by session, biggest 50 (sessions of <= 4 h)",
             "/api/usage?group_by=session&since=30d&limit=50", TARGET_MS)


def test_usage_all_time_by_session(benchmark, served):
    _measure(benchmark, served, "usage all time by session (10,000 groups)", "/api/usage?group_by=session")
