"""compozy.fleet.mirror: a resync of many sessions (a node joining again) keeps the node's heartbeat going
between its batches, so the others never see a live node as unreachable while it sends its rows."""

from types import SimpleNamespace

from compozy.fleet import mirror
from compozy.fleet.settings import FleetSettings


class Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


class Catalog:
    def __init__(self, log):
        self.log = log

    def heartbeat(self, node, memory, running, sessions):
        self.log.append("heartbeat")

    def upsert_sessions(self, rows):
        self.log.append(f"rows {len(rows)}")

    def delete_sessions(self, node, gone):
        pass

    def taken_from(self, node):
        return {}

    def nodes(self):
        return []


def test_the_heartbeat_goes_out_between_the_batches_of_a_long_resync():
    clock, log = Clock(), []
    services = SimpleNamespace(clock=clock, catalog_feed=SimpleNamespace(last_sequence=0), live_sessions=list,
                               catalog=SimpleNamespace(session_ids=lambda: []))

    def rows_of(ids):
        clock.now += 1.5  # each batch of rows takes a while to read
        return [(i,) for i in ids], []

    node = mirror.FleetMirror(services, FleetSettings("postgresql://x", "alpha", "s" * 16), Catalog(log), "1",
                              rows_of, list, None, None)
    node.mark(*(f"sess_{n:05d}" for n in range(4 * mirror.BATCH)))
    node._flush()
    # a heartbeat is due at once and every 2 s after: between batches, never later than one batch past due
    assert log == ["rows 500", "heartbeat", "rows 500", "rows 500", "heartbeat", "rows 500"], log
