"""LiveSession: a session's in-memory state in this daemon, and the one path for its writes.

Layer 4. Every lifecycle change goes through change_state (meta.json, then the catalog); every
event goes through append (commit, then publish to viewers). The bound agent's callbacks land
in RuntimeEvents, which drops output from a runtime that no longer serves the session. What every
session shares (Services) is in services.py beside this module.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from typing import Any

from compozy import serialize
from compozy.clock import iso_from_epoch
from compozy.redact import EncodedRedaction, known_secret_values
from compozy.session.records.feed import Feed, attention_changed, catalog_changed
from compozy.session.records.record import RuntimeRecord, SessionRecord
from compozy.session.records.replay import CarriedContext
from compozy.session.records.services import Services
from compozy.session.records.waiting import active_children, outside_work, waiting_view
from compozy.states import RUNTIME, SESSION, RuntimeStatus
from compozy.text import MAX_CONTENT_DEPTH, EncodedObject, compact_json, map_document, may_nest_deeper

log = logging.getLogger("compozy.session")

USER_MESSAGE = "user_message"  # the user's own words, stored as given

PROCESSLESS = (RuntimeStatus.UNBOUND.value, RuntimeStatus.RECOVERING.value)  # no process serves the session
UNINSPECTED = {"agent": "ok", "tools": "ok", "children": "ok", "runtime": "ok"}  # before the first sweep
# Progress this recent is a work signal even when quiet_after is shorter (four supervision sweeps).
FRESH_PROGRESS_SECONDS = 1.0
OUTPUT_SETTLE_TIMEOUT = 2.0  # a native tool call waits at most this long for the agent's earlier output


class LiveSession:
    def __init__(self, services: Services, record: SessionRecord) -> None:
        self.services = services
        self.id = record.id
        self.lock = threading.RLock()
        self.record = record
        self.log = services.store.events(record)
        services.store.logs.pin(self.id)
        self.feed = Feed(start=self.log.last_sequence())
        self.runtime = None
        self.candidate = None  # the runtime being bound, before it serves the session
        self.turn = None
        self.worker: threading.Thread | None = None
        self.worker_wake = threading.Event()  # a new turn for a parked worker (see the runner)
        self.stop_operation = None
        self.permissions: dict[str, Any] = {}  # request_id -> PendingPermission
        self.inflight: dict[str, Any] = {}  # idempotency_key -> Turn still binding
        self.viewers = 0  # open streams of its events: a turn that ends with none may open an inbox item
        self.tool_calls_in_flight = 0  # native tool calls of this session's agent the daemon serves now
        self.activity = {"last_activity_at": (record.activity or {}).get("last_activity_at"),
                         "last_activity_kind": None}
        self.idle_since: float | None = None
        self.releasing = False  # an idle release is stopping the agent
        self.runtime_since = services.clock.monotonic()  # when the runtime status last changed (lifecycle.stuck)
        self.sources = None  # what the supervision sweep last verified (the sources module of lifecycle)
        self.starting: dict | None = None  # the agent being started for this session: {agent, provider, since, started}
        self.last_agent = None  # the last agent that served or was refused: its stderr is evidence
        self.cost_seen: dict | None = None  # the agent's last cumulative cost: {acp_session_id, amount, currency}
        self.heartbeat_at: float | None = None  # the last waiting heartbeat (monotonic), while the session waits
        self._carried = None

    @property
    def agent(self):
        return self.services.config.agent(self.record.agent_name)

    @property
    def state(self):
        return self.record.state

    # -- durable writes --------------------------------------------------------------------

    def save(self, **changes: Any) -> SessionRecord:
        """Change fields of the record and write it: meta.json, then the catalog row."""
        with self.lock:
            attention, failure = self.record.attention, self.record.failure
            self.record.change(**changes)
            self.record.fences = {**(self.record.fences or {}), "max_sequence": self.log.max_active_sequence()}
            self.services.store.save(self.record)
            catalog_changed(self.services.catalog_feed, "upserted", self.record)
        if self.record.attention != attention:
            attention_changed(self.services.catalog_feed, self.record, attention)
            self.services.observers.emit("attention_changed", self, attention, self.record.attention)
        if self.record.failure != failure:
            self.services.observers.emit("failure_changed", self, failure, self.record.failure)
        return self.record

    def change_state(self, new_state: str, **changes: Any) -> SessionRecord:
        """The one way the lifecycle state changes: an edge of the session table."""
        with self.lock:
            old = self.record.state
            record = self.save(state=SESSION.check(old, new_state).value, **changes)
        self.services.observers.emit("state_changed", self, old, record.state)
        return record

    def runtime_with(self, **fields: Any) -> RuntimeRecord:
        """The stored runtime with fields changed; a new status must be an edge of the runtime table.
        `effective` describes the process serving the session: a status without one clears it
        (`last_known` keeps what ran)."""
        runtime = self.record.runtime
        if "status" in fields:
            fields["status"] = RUNTIME.check(runtime.status, fields["status"]).value
            if fields["status"] in PROCESSLESS:
                fields.setdefault("effective", None)
        return runtime.replace(**fields)

    def update_runtime(self, **fields):
        with self.lock:
            status = self.record.runtime.status
            record = self.save(runtime=self.runtime_with(**fields))
            if record.runtime.status != status:
                self.runtime_since = self.services.clock.monotonic()
            return record

    def append(self, items):
        """Commit events, then publish them; returns the stored records. The values of the secrets the
        daemon knows (its environment, the agent's provider env and binding identity) are redacted
        from every event but the user's own message, so no read can show them."""
        secrets = self._secrets()
        items, texts = _encoded(items)
        if secrets:
            items, texts = _redacted(items, texts, EncodedRedaction(secrets, compact_json))
        records = self.log.append(items, texts)
        self.feed.publish(records)
        self.services.observers.emit("appended", self, records)
        return records

    def _secrets(self):
        agents = [agent for agent in (self.runtime, self.candidate) if agent is not None]
        return known_secret_values(*(environment for agent in agents
                                     for environment in (agent.provider.env, agent.identity)))

    def read_secrets(self):
        """The secret values redacted from text joined from this session's chunks (replay.assembled)."""
        return read_secrets(self.services, self)

    def append_event(self, kind: str, content: dict, turn_id: str | None = None) -> dict:
        return self.append([(kind, turn_id, content, self.record.agent_name)])[0]

    def marker(self, kind: str, summary: str, turn_id: str | None = None, **evidence: Any) -> dict:
        marker = {"kind": kind, "occurred_at": self.services.clock.now_iso(), "summary": summary[:2048]}
        if evidence:
            marker["evidence"] = evidence
        return self.append_event("transcript_marker.created", {"marker": marker}, turn_id)

    def touch(self, kind: str) -> None:
        self.activity = {"last_activity_at": iso_from_epoch(self.services.clock.wall()), "last_activity_kind": kind}

    # -- reads -------------------------------------------------------------------------------

    def overlay(self):
        """What only the daemon's memory knows: process capabilities, its modes, activity (an agent starting,
        a turn waiting for its first output), health, supervision."""
        with self.lock:
            runtime, turn = self.runtime, self.turn
            live = {}
            if runtime is not None and runtime.alive:
                live["acp_caps"] = runtime.acp_caps()
                live["effective"] = runtime.effective
                modes = runtime.mode_state()
                if modes is not None:
                    live["modes"] = modes
            activity = dict(self.activity, turn_in_flight=turn is not None,
                            current_turn_id=turn.id if turn else None)
            activity.update(waiting_view(self, turn))
            return {"runtime": live, "activity": activity, "health": self.health(),
                    "supervision": supervision_view(self)}

    def health(self) -> dict:
        runtime, turn = self.runtime, self.turn
        return serialize.health(self.record, runtime is not None and runtime.alive, turn is not None)

    def carried(self):
        """The context this session carries from its source (a continue or fork), or None (also once a
        clear discarded it: it stays stored, never again prepended)."""
        if (self.record.derivation or {}).get("carried_context") == "discarded":
            return None
        if self._carried is None and self.record.derivation:
            document = self.log.carried()
            self._carried = CarriedContext.from_dict(document) if document else None
        return self._carried

    def current_turn_id(self) -> str | None:
        turn = self.turn
        return turn.id if turn else None

    @contextmanager
    def serving_tool_call(self):
        """While the daemon serves a native tool call of this session, its turn waits on us, not on the agent.
        What the agent wrote to stdout before it called (a tool's result, say) is stored first."""
        runtime = self.runtime
        if runtime is not None and not runtime.process.settle_output(OUTPUT_SETTLE_TIMEOUT):
            log.warning("session %s: a native tool call came before the agent's earlier output was read", self.id)
        with self.lock:
            turn = self.turn
            if turn is not None:
                turn.tool_call_began()
        try:
            yield
        finally:
            if turn is not None:
                with self.lock:
                    turn.tool_call_ended()

    # -- every other change of a live session, one method each (tests/unit/test_owners.py) --

    def begin_turn(self, turn: Any) -> None:
        """With the lock held: turn becomes current; the session is no longer idle."""
        self.turn, self.idle_since = turn, None

    def advance_to(self, turn: Any) -> None:
        """With the lock held: the current turn is over and `turn` (None: nothing yet) follows it."""
        self.turn = turn
        if turn is not None:
            self.idle_since = None

    def viewed(self, delta: int) -> None:  # a stream of its events opened (+1) or closed (-1)
        self.viewers += delta

    def went_idle(self, now: float) -> None:
        self.idle_since = now

    def run_by(self, worker: threading.Thread | None) -> None:
        """The thread that runs its turns (None: it parked out)."""
        self.worker = worker

    def wake_worker(self) -> None:
        self.worker_wake.set()

    def worker_woke(self) -> None:
        self.worker_wake.clear()

    def track_inflight(self, turn: Any) -> None:
        """A started prompt whose bind a retry with its key waits on."""
        self.inflight[turn.idempotency_key] = turn

    def forget_inflight(self, key: str) -> None:
        self.inflight.pop(key, None)

    def starting_agent(self, starting: dict | None) -> None:
        """The agent being started ({agent, provider, since, started}; None: the start is over)."""
        self.starting = starting

    def bind_candidate(self, runtime: Any) -> None:
        """The runtime being bound, before it serves (a stop sees it); None: none."""
        self.candidate = runtime

    def drop_candidate(self) -> Any:
        """The runtime being bound, no longer the session's."""
        candidate, self.candidate = self.candidate, None
        return candidate

    def bound_to(self, runtime: Any) -> None:
        """With the lock held: runtime serves the session from now; no start is pending."""
        self.runtime, self.candidate, self.starting = runtime, None, None

    def detach_runtime(self) -> None:
        """With the lock held: no process serves the session any more."""
        self.runtime = None

    def served_by(self, runtime: Any) -> None:
        """The last agent that served or was refused: its stderr is evidence."""
        self.last_agent = runtime

    def begin_stop(self, operation: Any) -> None:
        self.stop_operation = operation

    def stop_ended(self) -> None:
        self.stop_operation = None

    def releasing_agent(self, releasing: bool = True) -> None:
        """An idle release is stopping the agent (False: it is over)."""
        self.releasing = releasing

    def beat(self, now: float | None) -> None:
        """The last waiting heartbeat (None: the session waits on nothing)."""
        self.heartbeat_at = now

    def inspected(self, sources: Any) -> None:
        """What the supervision sweep verified last."""
        self.sources = sources

    def hold_permission(self, pending: Any) -> None:
        self.permissions[pending.request_id] = pending

    def release_permission(self, request_id: str) -> Any:
        """The held request, no longer held (None: it was not)."""
        return self.permissions.pop(request_id, None)

    def take_tool_call_slot(self, limit: int) -> bool:
        """With the lock held: one more native tool call in flight, unless `limit` are already."""
        if self.tool_calls_in_flight >= limit:
            return False
        self.tool_calls_in_flight += 1
        return True

    def free_tool_call_slot(self) -> None:
        self.tool_calls_in_flight -= 1

    def saw_cost(self, acp_session_id: str | None, cost: dict) -> None:
        """The cumulative cost the agent reported last."""
        self.cost_seen = {"acp_session_id": acp_session_id, "amount": cost.get("amount"),
                          "currency": cost.get("currency")}

    def close(self):
        self.services.store.logs.unpin(self.id)
        self.feed.close()
        self.worker_wake.set()  # a parked worker with no turn ends now, not 30 s later


def read_secrets(services, session=None):
    """What a read redacts from text it assembles from stored chunks: the values of the secret-named
    variables of the daemon's environment and of every configured provider's env, and the binding
    secrets of the session's live agents. (A binding that ended names nobody: its secret is inert.)"""
    environments = [provider.env for provider in services.config.providers.values()]
    if session is not None:
        environments += [agent.identity for agent in (session.runtime, session.candidate) if agent is not None]
    return known_secret_values(*environments)


def supervision_view(session):
    """supervision.work_signals, .sources and .quiet_warning for session reads."""
    turn, sources = session.turn, session.sources
    config, clock = session.services.config, session.services.clock
    signals = []
    if turn is not None:
        quiet = clock.monotonic() - turn.last_progress
        if quiet < max(config["session.supervision.quiet_after"], FRESH_PROGRESS_SECONDS) or not turn.prompting:
            signals.append({"kind": "agent_progress", "turn_id": turn.id,
                            "last_progress_at": iso_from_epoch(clock.wall() - quiet)})
        verified, quiet_after = set(sources.verified_tools if sources else ()), config["session.supervision.quiet_after"]
        for tool_id, heard in sorted(turn.open_tools.items()):  # a tool heard of within quiet_after is fresh
            if tool_id in verified or (quiet_after and clock.monotonic() - heard < quiet_after):
                signals.append({"kind": "running_tool", "tool_call_id": tool_id})
        if turn.pending_permissions:
            signals.append({"kind": "pending_permission", "count": turn.pending_permissions})
    signals += [{"kind": "active_child", "session_id": c.id} for c in active_children(session)]
    signals += outside_work(session)
    return {"work_signals": signals, "sources": sources.view() if sources else dict(UNINSPECTED),
            "quiet_warning": turn.quiet_warning if turn is not None else None,
            "stuck": sources.stuck if sources else None}


def _encoded(items):
    """The items and their content texts, content nested deeper than MAX_CONTENT_DEPTH cut there first: an
    agent's update nested a thousand levels deep would break every recursive reader (json included)."""
    bounded, texts = [], []
    for kind, turn_id, content, agent in items:
        if content.__class__ is EncodedObject:  # its text is at hand, and it nests one level
            bounded.append((kind, turn_id, content, agent))
            texts.append(content.json)
            continue
        try:
            text = compact_json(content)
            deep = may_nest_deeper(text)
        except RecursionError:
            deep = True
        if deep:
            content = map_document(content, max_depth=MAX_CONTENT_DEPTH)
            text = compact_json(content)
        bounded.append((kind, turn_id, content, agent))
        texts.append(text)
    return bounded, texts


def _redacted(items, texts, redaction):
    """The items and their content texts with the secret values redacted, but from the user's own message."""
    redacted_items, redacted_texts = [], []
    for (kind, turn_id, content, agent), text in zip(items, texts):
        if kind != USER_MESSAGE:
            content, text = redaction.apply(content, text)
        redacted_items.append((kind, turn_id, content, agent))
        redacted_texts.append(text)
    return redacted_items, redacted_texts
