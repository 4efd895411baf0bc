"""The search indexer: a background thread that feeds search.db from committed events.

Layer 4. An observer (compozy.session.records.observers): `appended` only marks the session to index and
wakes the thread, so the agent's output path never waits on the index. The thread reads each marked
session's events after the sequence it indexed through, on a connection of its own, and writes one
transaction per session: a user prompt, a tool call's or a permission request's title are one row each; a
run of an agent's chunks (one turn, one message) is one row whose text grows as chunks come, redacted of
the secrets a read knows across the joined text (replay.assembled). A catalog change (archive, unarchive,
a rewind's new epoch) marks the session too: the rows a rewind archived drop out of default results. At
boot every session is marked, so the index catches up from each session's last indexed sequence after a
restart or a crash; a session removed is forgotten.
"""

import json
import logging
import threading
from time import monotonic

from compozy.redact import redact_values
from compozy.session.records.live import read_secrets
from compozy.session.records.replay import assembled
from compozy.store.searchindex import SearchIndex, archived_sequences, committed_after

log = logging.getLogger("compozy.search")

BATCH = 2000          # events read and written per session per transaction
SETTLE_SECONDS = 0.5  # a wake gathers the commits of this long into one pass (a stream is indexed twice a second)
QUIET_SECONDS = 0.1   # then the pass waits for a moment this long without a commit: a stream's output comes first,
MAX_LAG_SECONDS = 1.0  # but never past this long after the wake
IDLE_SECONDS = 1.0
RUNS = {"agent_message": "agent", "thought": "thought"}


def document_of(kind, content):
    """(kind, message_id, text) of an event that is a row on its own, or None."""
    if kind == "user_message":
        return "user", content.get("message_id"), content.get("text") or ""
    if kind == "tool_call" and content.get("title") and not content.get("update"):
        return "tool", content.get("tool_call_id"), content["title"]
    if kind == "permission" and content.get("title") and not content.get("decision"):
        return "permission", content.get("request_id"), content["title"]
    return None


class Indexer:
    def __init__(self, services):
        self.services = services
        self.index = SearchIndex(services.home.search_file)
        self._marked, self._lock = set(), threading.Lock()
        self._wake, self._halt, self._stopped = threading.Event(), threading.Event(), False
        self._catalog_cursor = services.catalog_feed.last_sequence
        self._thread = None
        self._last_commit = 0.0  # monotonic time of the newest commit of any session

    # -- observer signals -----------------------------------------------------------------

    def started(self):
        self.mark(*self.services.catalog.session_ids())
        self._thread = self.services.threads.start("search-indexer", self._run)

    def appended(self, session, records):
        # Once per pass, not per commit: a stream commits thousands of small batches, and a lock and a wake each
        # cost its reader thread ~2 us. Safe without the lock: a session seen marked with the wake set is in the
        # set the next pass takes, and that pass reads what was committed before this call.
        self._last_commit = monotonic()
        if session.id in self._marked and self._wake.is_set():
            return
        self.mark(session.id)

    def removed(self, record):
        with self.index.writing() as writer:
            writer.forget(record.id)

    def closing(self):
        self._stopped = True
        self._halt.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10)
        self.index.close()

    def mark(self, *session_ids):
        with self._lock:
            self._marked.update(session_ids)
        self._wake.set()

    def reindex(self):
        """Forget the index and index every session again (in the background)."""
        self.index.clear()
        self.mark(*self.services.catalog.session_ids())

    def pending(self):
        with self._lock:
            return len(self._marked)

    # -- the thread ---------------------------------------------------------------------------

    def _run(self):
        while not self._stopped:
            if self._wake.wait(IDLE_SECONDS):
                # The commits of the next SETTLE_SECONDS join this pass: the marks they make must not end the
                # wait (each commit of a stream marks its session), only closing does.
                woke = monotonic()
                self._halt.wait(SETTLE_SECONDS)
                self._wait_for_quiet(woke + MAX_LAG_SECONDS)
                self._wake.clear()
            self._catalog_changes()
            with self._lock:
                marked, self._marked = self._marked, set()
            for session_id in sorted(marked):
                if self._stopped:
                    break
                try:
                    self.index_session(session_id)
                except Exception:  # noqa: BLE001 (one session's trouble never stops the index)
                    log.exception("search: indexing session %s failed", session_id)

    def _wait_for_quiet(self, deadline):
        """While commits keep coming, wait until none came for QUIET_SECONDS, or until the deadline: the pass
        shares the interpreter with the agents' readers, and a burst of output goes first (a turn that
        streams for longer still has its rows within MAX_LAG_SECONDS of the wake, plus the pass)."""
        while not self._stopped:
            now = monotonic()
            quiet = self._last_commit + QUIET_SECONDS
            if now >= quiet or now >= deadline:
                return
            self._halt.wait(min(quiet, deadline) - now)

    def _catalog_changes(self):
        items = self.services.catalog_feed.after(self._catalog_cursor, 0)
        if items is None:  # fell behind the ring: check every session's facts
            self._catalog_cursor = self.services.catalog_feed.last_sequence
            self.mark(*self.index.session_ids())
            return
        for item in items:
            self._catalog_cursor = item["sequence"]
            if item.get("type") == "session_catalog_changed" and item.get("change") == "upserted":
                self.mark(item["session_id"])

    def index_session(self, session_id):
        """Bring one session's rows up to its last committed event (a batch at a time)."""
        record = self.services.store.get(session_id)
        if record is None:
            return
        live = next((s for s in self.services.live_sessions() if s.id == session_id), None)
        secrets = read_secrets(self.services, live)
        path = str(self.services.home.events_file(session_id))
        state = self.index.state(session_id) or {"last_sequence": 0, "epoch": 0, "open_row": None, "open_key": None}
        epoch = (record.fences or {}).get("epoch", 0)
        with self.index.writing() as writer:
            writer.session(session_id, record.workspace_id, record.agent_name, record.archived, state["epoch"])
        while True:
            rows = committed_after(path, state["last_sequence"], BATCH)
            if not rows:
                break
            with self.index.writing() as writer:
                state = self._write(writer, session_id, state, rows, secrets)
        if epoch != state["epoch"]:
            # After the rows are in: a rewind's rows may be indexed only now (a pass follows its commits by the
            # settle; a rebuilt index reads them all), and they are rewound too. The new epoch goes with them.
            with self.index.writing() as writer:
                writer.mark_rewound(session_id, archived_sequences(path))
                writer.session(session_id, record.workspace_id, record.agent_name, record.archived, epoch)

    def _write(self, writer, session_id, state, rows, secrets):
        open_row = state["open_row"]
        open_key = tuple(json.loads(state["open_key"])) if state["open_key"] else None  # (type, turn, message)
        thoughts = self.services.config["search.thoughts"]
        run = None  # the open run's text so far, in pieces (joined once: a run is thousands of chunks)
        for sequence, event_id, turn_id, kind, text, message_id, content, timestamp in rows:
            if kind in RUNS:
                if kind == "thought" and not thoughts:
                    continue
                key = (kind, turn_id, message_id)
                if key == open_key and open_row is not None:
                    if run is None:
                        run = [writer.text_of(open_row) or ""]
                    run.append(text or "")
                    continue
                self._close_run(writer, open_row, run, secrets)
                run, open_key = [text or ""], key
                open_row = writer.add(session_id, RUNS[kind], message_id or event_id, turn_id, sequence, timestamp, "")
                continue
            if content is None:
                continue  # an event that leaves a run open: usage, plans, progress
            found = document_of(kind, json.loads(content))
            if found is None:
                continue
            self._close_run(writer, open_row, run, secrets)
            open_row, open_key, run = None, None, None
            found_kind, message_id, text = found
            writer.add(session_id, found_kind, message_id or event_id, turn_id, sequence, timestamp,
                       redact_values(text, secrets))
        self._close_run(writer, open_row, run, secrets)
        last, stored_key = rows[-1][0], json.dumps(open_key) if open_key else None
        writer.progress(session_id, last, open_row, stored_key)
        return {**state, "last_sequence": last, "open_row": open_row, "open_key": stored_key}

    @staticmethod
    def _close_run(writer, row, pieces, secrets):
        """Write a run's joined text, redacted across its chunks (a later chunk may still extend it)."""
        if row is not None and pieces is not None:
            writer.replace_text(row, assembled("".join(pieces), secrets))
