"""Durable reads and live follows of a session's event store: events, history, streams.

Layer 4. Live followers read from the in-memory feed, which only ever holds committed records,
and fall back to the store when they fall behind; a slow viewer never blocks the agent.
"""

from compozy import serialize
from compozy.session.records.replay import fold_history, turn_text
from compozy.store import historypage, hookruns
from compozy.store.eventlog import DEFAULT_READ_LIMIT, MAX_READ_LIMIT

IDLE_TICK_SECONDS = 1.0  # how often an idle follower wakes: a stream notices a gone viewer this soon
TURN_ENDS = ("done", "error")
MAX_ANSWER_CHARS = 64 * 1024


def read_events(log, query):
    """query: the parsed request of session.events (compozy/parsing.py)."""
    query = query or {}
    types = [t for t in query["type"].split(",") if t] if query.get("type") else None
    return {"events": log.read(after_sequence=query.get("after_sequence"), before_sequence=query.get("before_sequence"),
                               turn_id=query.get("turn_id"), types=types,
                               limit=query.get("limit") or DEFAULT_READ_LIMIT, archive=query.get("archive", "active"))}


def read_history(log, query, secrets, record=None):
    """A page of whole messages, placed by their first event's sequence (docs/decisions.md); secrets are
    redacted from the answers' joined text (replay.assembled). The oldest active page of a native fork
    starts with the conversation it carries (record: the session's)."""
    query = query or {}
    after, before = query.get("after_sequence"), query.get("before_sequence")
    limit, archive = query.get("limit") or DEFAULT_READ_LIMIT, query.get("archive", "active")
    records, page = historypage.page(log, archive, after, before, limit)
    messages = fold_history(records, secrets=secrets)
    if not page["has_more"] and not after and archive != "archived" and _shows_carried(record):
        carried = carried_messages(log.carried(), record.derivation)
        messages, page = carried + messages, {**page, "carried_count": len(carried)}
    return {"messages": messages, "page": page}


def _shows_carried(record):
    """A native fork's own log holds nothing of the conversation its agent's clone already knows (the
    agent's replay of it is not recorded, so a rebuild never carries it twice): its history shows the
    carried context instead, until a clear discards it."""
    derivation = (record.derivation if record is not None else None) or {}
    return derivation.get("seed") == "native_fork" and derivation.get("carried_context") != "discarded"


def carried_messages(document, derivation):
    """The carried conversation as history messages (`carried: true`, no message ID of this session)."""
    if not document:
        return []
    return [{"message_id": None, "turn_id": entry.get("turn_id"), "role": entry["role"], "text": entry["text"],
             "timestamp": derivation.get("created_at"), "carried": True}
            for entry in document["entries"] if entry["role"] in ("user", "assistant")]


def follow(log, feed, after, until=None, tick=IDLE_TICK_SECONDS):
    """Yield committed records after `after` forever (or until `until(record)` is true);
    None is yielded after each `tick` seconds without a record."""
    for batch in follow_batches(log, feed, after, until, tick):
        if not batch:
            yield None
        yield from batch


def follow_batches(log, feed, after, until=None, tick=IDLE_TICK_SECONDS):
    """follow() a batch at a time (what one commit published, or one read of the store): a stream
    writes each batch at once. [] after each `tick` seconds without a record."""
    cursor = after
    while True:
        records = feed.after(cursor, tick)
        if records is None and log is None:  # an in-memory feed only: skip to now
            cursor, records = feed.last_sequence, []
        elif records is None:  # the ring no longer covers the gap: read it from the store
            committed = feed.last_sequence  # everything up to here is in the store already
            records = log.read_aside(cursor, MAX_READ_LIMIT)
            if not records:  # the gap holds only archived events (a rewind): step over it
                cursor = max(cursor, committed)
        if not records:
            if feed.closed:
                return
            yield []
            continue
        if until is not None:
            end = next((index for index, record in enumerate(records) if until(record)), None)
            if end is not None:
                yield records[:end + 1]
                return
        cursor = records[-1]["sequence"]
        yield records


def follow_catalog(feed, after=None):
    """The catalog stream from now, or after a Last-Event-ID (a number from before a daemon restart,
    past this run's count, means from now; one the ring no longer covers skips to now)."""
    now = feed.last_sequence
    return follow_batches(None, feed, now if after is None else min(after, now))


def turn_answer(log, feed, turn_id, secrets, wanted=None):
    """(answer, exhausted) once the turn has ended: {"turn_id", "end", "stop_reason" | "error", "text",
    "truncated"}, the text bounded; exhausted when recovery gave up on the agent during the turn.
    (None, False) when `wanted()`, asked at each idle tick, says the answer is no longer awaited."""
    cursor = log.last_sequence()
    if not log.read_all(archive="all", types=list(TURN_ENDS), turn_id=turn_id):
        ends = lambda r: r["turn_id"] == turn_id and r["type"] in TURN_ENDS  # noqa: E731
        for record in follow(log, feed, cursor, until=ends):
            if record is None and wanted is not None and not wanted():
                return None, False
    events = log.read_all(archive="all", turn_id=turn_id)
    end = next((e for e in reversed(events) if e["type"] in TURN_ENDS), None)
    text = turn_text(events, secrets)
    answer = {"turn_id": turn_id, "end": end["type"] if end else "error", "text": text[:MAX_ANSWER_CHARS],
              "truncated": len(text) > MAX_ANSWER_CHARS}
    if end is not None and end["type"] == "done":
        answer["stop_reason"] = end["content"].get("stop_reason")
    else:
        answer["error"] = end["content"].get("error") if end else "the session closed before the turn ended"
    return answer, any(e["type"] == "runtime_recovery_exhausted" for e in events)


def inspection(home, catalog, log, record, resource):
    """Everything a person debugging needs: the resource, files, process, queue, requests, hook runs, tail."""
    return {"session": resource,
            "paths": {"directory": str(home.session_dir(record.id)), "meta": str(home.meta_file(record.id)),
                      "events": str(home.events_file(record.id))},
            "process": record.runtime.process,
            "queue": [serialize.entry_resource(e) for e in catalog.entries(record.id)],
            "pending_interactions": [serialize.interaction_resource(i) for i in catalog.interactions(record.id)],
            "hook_runs": hookruns.recent(log),
            "recent_events": log.read(limit=20)}
