"""The usage ledger's two ways to sum (its rows, or the daily rollup with the rows of the edge days) agree for
any window, archived turns included; and the window's bounds parse as documented."""

import random

import pytest

from compozy.clock import iso_from_epoch
from compozy.errors import CompozyError
from compozy.session.turns.ledger import grouped, moment, total_of
from compozy.store.catalog import Catalog
from compozy.store.ledger import COLUMNS

NOW = 1_796_000_000.0  # a fixed wall time (late 2026)
DAY = 86400


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    made = Catalog(tmp_path_factory.mktemp("ledger") / "compozy.db")
    rng = random.Random(7)
    for index in range(400):
        ended = iso_from_epoch(NOW - rng.uniform(0, 10 * DAY))
        row = {"turn_id": f"turn_{index}", "session_id": f"sess_{index % 37}", "workspace_id": f"ws_{index % 3}",
               "agent": f"agent{index % 4}", "provider": "p", "model": None if index % 5 else "m",
               "input_tokens": rng.randint(0, 900), "output_tokens": rng.randint(0, 90), "total_tokens": 0,
               "started_at": ended, "ended_at": ended, "day": ended[:10], "end": "done", "duration_ms": 10}
        if index % 3 == 0:
            row.update(cost_amount=0.125, cost_currency="USD" if index % 2 else "EUR")
        made.ledger.record(row)
        made.ledger.record(row)  # a turn recorded twice counts once
    for index in range(60):  # sessions that live for an hour, some of them with two currencies
        ended = iso_from_epoch(NOW - (index % 20) * DAY / 2 + rng.uniform(0, 3600))
        row = {"turn_id": f"short_{index}", "session_id": f"short_{index % 20}", "workspace_id": "ws_0",
               "agent": "agent0", "provider": "p", "model": "m", "input_tokens": rng.randint(0, 900),
               "output_tokens": 5, "total_tokens": 0, "started_at": ended, "ended_at": ended, "day": ended[:10],
               "end": "done", "duration_ms": 10}
        if index % 7 == 0:
            row.update(cost_amount=0.5, cost_currency="USD")
        made.ledger.record(row)
    made.ledger.mark_archived("sess_1", [f"turn_{i}" for i in range(1, 400, 37)])
    yield made
    made.close()


WINDOWS = [(None, None), (2, None), (None, 3), (7.5, 1.25), (4, 4), (5.2, 5.1), (0.5, 0)]


@pytest.mark.parametrize("since,until", WINDOWS)
@pytest.mark.parametrize("group", ["agent", "day", "workspace", "model", "session", None])
def test_the_rollup_and_the_rows_agree_on_every_window(catalog, since, until, group):
    since = iso_from_epoch(NOW - since * DAY) if since is not None else None
    until = iso_from_epoch(NOW - until * DAY) if until is not None else None
    fast = catalog.ledger.sums(group, since, until)
    exact = catalog.ledger.sums(group, since, until, by_session=True)  # the rows alone
    assert grouped(fast) == grouped(exact)
    assert total_of(fast) == total_of(exact)


@pytest.mark.parametrize("since,until", WINDOWS)
@pytest.mark.parametrize("group", ["agent", "day", "workspace", "model", "session"])
def test_the_biggest_groups_are_the_top_of_every_group(catalog, since, until, group):
    since = iso_from_epoch(NOW - since * DAY) if since is not None else None
    until = iso_from_epoch(NOW - until * DAY) if until is not None else None
    every = grouped(catalog.ledger.sums(group, since, until, by_session=True))
    ranked = [g["key"] for g in sorted(every, key=lambda g: (-g["tokens"]["total"], g["key"]))]
    assert catalog.ledger.biggest(group, 3, since, until) == (ranked[:3], len(every))


@pytest.mark.parametrize("since,until", WINDOWS)
def test_a_catalog_from_before_the_session_rollup_fills_it_from_its_rows(catalog, tmp_path, since, until):
    since = iso_from_epoch(NOW - since * DAY) if since is not None else None
    until = iso_from_epoch(NOW - until * DAY) if until is not None else None
    older = Catalog(tmp_path / "compozy.db")
    with catalog.ledger.guard.read() as db:
        rows = [dict(zip(COLUMNS, values)) for values in db.execute_sql(f"SELECT {', '.join(COLUMNS)} FROM usage_ledger")]
    for row in rows:
        older.ledger.record(row)
    with older.ledger.guard.write() as db:
        db.execute_sql("DROP TABLE usage_sessions")
    older.close()
    reopened = Catalog(tmp_path / "compozy.db")
    try:
        assert grouped(reopened.ledger.sums("session", since, until)) == \
            grouped(catalog.ledger.sums("session", since, until, by_session=True))
    finally:
        reopened.close()


def test_archived_turns_still_count_and_are_marked(catalog):
    total = total_of(catalog.ledger.sums(None))
    assert total["turns"] == 460 and total["archived_turns"] == 11


def test_window_bounds():
    assert moment("7d", "since", NOW) == iso_from_epoch(NOW - 7 * DAY)
    assert moment("2026-12-01", "since", NOW) == "2026-12-01T00:00:00.000000Z"
    assert moment("2026-12-01T08:00:00Z", "until", NOW) == "2026-12-01T08:00:00.000000Z"
    with pytest.raises(CompozyError) as caught:
        moment("last week", "since", NOW)
    assert caught.value.details == {"field": "since"}
