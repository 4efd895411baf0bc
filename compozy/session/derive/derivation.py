"""Continue and fork: a new session that carries a source's durable conversation, at most one per key.

Layer 4 (session.derive). The key is looked up before the source: a repeat answers the recorded
outcome (replayed, or child_deleted when the new session was removed since) even when the source
changed or is gone, and the same key for another request is idempotency_conflict. A new derivation
reads the source once, read-only (sources.snapshot), checks the fences against that snapshot,
writes its catalog row `creating`, creates the session with its carried context, then records the
outcome `created`. A message is admitted afterwards through the ordinary prompt admission; when
that fails the error names the new session (child_session_id). The source is never changed.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Mapping

from compozy.errors import CompozyError, invalid
from compozy.serialize import Answer
from compozy.ids import new_id, validate_client_token
from compozy.session.derive import native
from compozy.session.derive.children import admitted, child_record
from compozy.session.derive.copies import copy_source
from compozy.session.derive.rewind import derivable
from compozy.session.derive.sources import snapshot
from compozy.session.records.feed import catalog_changed
from compozy.session.records.governed import check_agent_creation
from compozy.session.records.receipts import recorded
from compozy.session.records.record import SessionRecord
from compozy.session.records.snapshots import FIELDS as RUNTIME_FIELDS
from compozy.session.records.snapshots import check_snapshot, layer
from compozy.session.records.store import SessionStore
from compozy.session.records.transcript import check_fences, expected_fences
from compozy.session.turns.messages import check_message, fingerprint
from compozy.states import DERIVATION, DerivationState, DeriveAnswer, FirstPrompt
from compozy.store.derivations import Derived
from compozy.store.records import Derivation

log = logging.getLogger("compozy.derive")

KEY_STRIPES = 64


@dataclass(frozen=True)
class Request:
    kind: str
    source_id: str
    workspace_id: str
    key: str
    fingerprint: str
    fences: dict | None
    name: str | None = None
    agent_name: str | None = None  # continue: the agent that takes over; a fork keeps the source's
    message: str | None = None
    runtime: dict | None = None
    route: int | None = None
    message_id: str | None = None  # a fork through this user message and its turn
    first_message_id: str | None = None
    files: str | None = None  # "copy": the new session works in a copy of the checkpointed files


@dataclass(frozen=True)
class Outcome:
    record: object  # the new session's record, None when it was removed since
    derivation: dict
    replayed: bool
    child_deleted: bool = False

    def answer(self, resource):
        """The answer (created, or replayed with child_deleted when the session is gone since);
        resource(record) is the session read."""
        document = {"session": resource(self.record) if self.record else None, "derivation": self.derivation,
                    "replayed": self.replayed}
        if self.child_deleted:
            document["child_deleted"] = True
        return Answer(DeriveAnswer.REPLAYED if self.replayed else DeriveAnswer.CREATED, document)


def continue_request(source_id: str, workspace_id: str, body: Mapping[str, Any]) -> Request:
    runtime = check_snapshot(body["runtime"]) if "runtime" in body else None
    if runtime is not None and "route" in body:
        raise invalid("route chooses one of the agent's declared accounts; it cannot be combined with a runtime",
                      field="route")
    message = check_message(body["message"]) if "message" in body else None
    return _request("continue", source_id, workspace_id, body, agent_name=body["agent_name"], name=_name(body),
                    message=message, runtime=runtime, route=body.get("route"), **_copy(body))


def fork_request(source_id: str, workspace_id: str, body: Mapping[str, Any]) -> Request:
    message_id = validate_client_token(body["message_id"], "message_id") if "message_id" in body else None
    return _request("fork", source_id, workspace_id, body, name=_name(body), message_id=message_id, **_copy(body))


def _copy(body):
    """files: copy, in the request (and its fingerprint) only when asked: older keys keep their fingerprints."""
    return {"files": "copy"} if body.get("files") == "copy" else {}


def _name(body):
    if "name" in body and not body["name"].strip():
        raise invalid("name must not be blank", field="name")
    return body.get("name")


def _request(kind, source_id, workspace_id, body, **fields):
    key = validate_client_token(body["idempotency_key"], "idempotency_key")
    print_ = fingerprint(kind, source=source_id, **fields)  # fences are preconditions, not the request
    first = new_id("msg") if fields.get("message") is not None else None
    return Request(kind, source_id, workspace_id, key, print_, expected_fences(body), first_message_id=first,
                   **fields)


class Deriver:
    def __init__(self, services, engine, sessions, workspaces):
        """sessions(session_id, workspace_id) is the LiveSession of a session (session_not_found otherwise);
        workspaces registers a fork's copied folder."""
        self.services, self.engine, self.sessions, self.workspaces = services, engine, sessions, workspaces
        self._stripes = [threading.Lock() for _ in range(KEY_STRIPES)]

    @property
    def derived(self):
        return self.services.catalog.derived

    def derive(self, request: Request, creator: SessionRecord | None = None) -> Outcome:
        """The Outcome of a continue or fork; one (workspace, key) creates at most one session. creator: the
        record of the agent's session that asks, held to the limits on what agents create."""
        with self._stripes[hash((request.workspace_id, request.key)) % KEY_STRIPES]:
            existing = self.derived.derivation(request.workspace_id, request.key)
            outcome = self._create(request, creator) if existing is None else self._recorded(existing, request)
        return self._first_prompt(outcome, request)

    def _recorded(self, existing, request):
        recorded(existing, request.fingerprint, "this idempotency_key was used for a different continue or fork",
                 idempotency_key=request.key)
        try:
            child = self.sessions(existing.child_session_id, _child_workspace(existing, request))
        except CompozyError:
            return Outcome(None, existing.result, replayed=True, child_deleted=True)
        return Outcome(child.record, child.record.derivation, replayed=True)

    def _create(self, request, creator=None):
        source = self.sessions(request.source_id, request.workspace_id)
        self._check_source(source.record)
        if creator is not None:
            check_agent_creation(self.services.catalog, creator, {
                "kind": request.kind, "spawn_depth": 0,
                "root_session_id": (source.record.lineage or {}).get("root_session_id") or source.id})
        agent = self.services.config.agent(request.agent_name or source.record.agent_name)
        if request.route is not None and request.route > len(agent.fallback_chain):
            raise CompozyError("route_not_found", f'agent "{agent.name}" declares {len(agent.fallback_chain)} '
                               f"route(s); route {request.route} does not exist", route=request.route)
        if not self.services.accepting:
            raise CompozyError("new_work_admission_unavailable", "the daemon is shutting down")
        found = snapshot(source, self.services, request.message_id)
        check_fences(request.fences, found.fences)
        cut = found.carry.cut
        if cut is not None and not cut.settled:
            raise CompozyError("session_turn_in_progress", f"turn {cut.turn_id} of {cut.message_id} has not settled; "
                               "wait for it or fork from an earlier message", current_turn_id=cut.turn_id)
        copied = copy_source(source, cut.turn_id if cut is not None else None) if request.files == "copy" else None
        child = self._new_session(request, source, found, agent, copied)
        return Outcome(child, child.derivation, replayed=False)

    def _check_source(self, record):
        derivable(record)
        if record.archived:
            raise CompozyError("session_archived", "unarchive the session before continuing or forking it")

    def _new_session(self, request, session, found, agent, copied=None):
        source, child_id = session.record, new_id("sess")
        self.derived.add_derivation(Derivation(workspace_id=request.workspace_id, idempotency_key=request.key,
                                               fingerprint=request.fingerprint, kind=request.kind,
                                               source_session_id=source.id, child_session_id=child_id,
                                               state=DerivationState.CREATING.value))
        store = self.services.store
        try:
            native_fork = found.native_fork_possible and request.kind == "fork" and copied is None
            clone = native.clone(session, self.services) if native_fork else None
            runtime, route, warning = _runtime(request, source, agent)
            child = child_record(child_id, request, source, found, agent.name, runtime, clone)
            child.derivation.update({"route": route} if route else {}, **({"route_warning": warning} if warning else {}))
            if copied is not None:
                child.workspace_id, child.cwd = copied.check_out(self.services, session, child_id, self.workspaces)
                child.derivation = {**child.derivation, "files": copied.described}
            store.create(child, carried=found.carry.context(request.kind, source).to_dict())
        except BaseException:
            store.discard_directory(child_id)
            if copied is not None:
                copied.discard()
            move(self.derived, request.workspace_id, request.key, DerivationState.WITHDRAWN)
            raise
        move(self.derived, request.workspace_id, request.key, DerivationState.CREATED, result=child.derivation)
        catalog_changed(self.services.catalog_feed, "upserted", child)
        self.services.observers.emit("created", child)
        log.info("session.derived kind=%s source_session_id=%s session_id=%s idempotency_key=%s seed=%s "
                 "message_count=%s omitted_count=%s", request.kind, source.id, child.id, request.key,
                 child.derivation["seed"], child.derivation["message_count"], child.derivation["omitted_count"])
        return child

    def _first_prompt(self, outcome, request):
        """A message is admitted through the ordinary prompt admission, once, even by a repeat."""
        if outcome.record is None:
            return outcome
        derivation = outcome.record.derivation
        if request.message is None or derivation["first_prompt"] != FirstPrompt.STAGED:
            return Outcome(outcome.record, derivation, outcome.replayed)
        child = self.sessions(outcome.record.id, outcome.record.workspace_id)
        identity = derivation["first_message_id"]
        try:
            self.engine.prompt(child, {"message": request.message, "message_id": identity,
                                       "idempotency_key": identity})
        except CompozyError as error:
            details = {**error.details, "child_session_id": child.id, "idempotency_key": request.key}
            raise CompozyError(error.code, error.message, **details) from None
        with child.lock:
            if child.record.derivation["first_prompt"] == FirstPrompt.STAGED:
                child.save(derivation=admitted(child.record.derivation))
                self.derived.update_derivation(request.workspace_id, request.key, result=child.record.derivation)
        return Outcome(child.record, child.record.derivation, outcome.replayed)


def _child_workspace(existing, request):
    """A fork with copied files lives in the copy's own workspace."""
    return ((existing.result or {}).get("files") or {}).get("workspace_id", request.workspace_id)


def _runtime(request, source, agent):
    """(runtime, route, warning). A continue selects the runtime it was given; a fork selects the one its
    source last ran on (the same provider, so the same account, model, reasoning effort and speed, and its
    options). A source that ran on a declared route of its agent's fallback_chain (an overridden account)
    forks onto that same route when the agent still declares it with that provider and model; otherwise
    the fork binds the agent's default route, and says so."""
    if request.kind == "continue":
        selected, route, warning = request.runtime, None, None
    else:
        selected, route, warning = _fork_selection(source, agent)
    return ({"selected": selected, "selection_revision": 1} if selected else None), route, warning


def _fork_selection(source, agent):
    ran = _identity(source.runtime.last_known)
    selected = layer(source.runtime.selected, ran)
    route = source.runtime.route
    if not isinstance(route, int) or isinstance(route, bool) or (source.runtime.selected or {}).get("provider"):
        return selected, None, None
    unrouted = {name: value for name, value in selected.items() if name not in ("provider", "model")} or None
    declared = agent.fallback_chain[route - 1] if 0 < route <= len(agent.fallback_chain) else None
    if declared is not None and declared.provider == ran.get("provider") and \
            declared.model in (None, ran.get("model")):
        return {**(unrouted or {}), **({"model": ran["model"]} if ran.get("model") else {})} or None, route, None
    now = f"declares {declared.provider}/{declared.model or 'its default model'} there" if declared else \
        f"declares {len(agent.fallback_chain)} route(s)"
    warning = f"the source ran on route {route} ({ran.get('provider')}/{ran.get('model') or 'default model'}) of " \
              f'agent "{agent.name}", which now {now}: the fork binds the agent\'s default route instead'
    log.warning("fork of %s: %s", source.id, warning)
    return unrouted, None, warning


def _identity(last_known):
    return {name: value for name, value in (last_known or {}).items() if name in RUNTIME_FIELDS and value}


def move(derived: Derived, workspace_id: str, key: str, new: DerivationState, repair: bool = False,
         **fields: Any) -> None:
    """A derivation row along its table, compare-and-set from creating; withdrawn deletes it."""
    old = DerivationState.CREATING
    new = DERIVATION.check(old, new, repair)
    if new == DerivationState.WITHDRAWN:
        changed = derived.delete_derivation(workspace_id, key, expected_state=old.value)
    else:
        changed = derived.update_derivation(workspace_id, key, expected_state=old.value, state=new.value, **fields)
    if not changed:
        raise AssertionError(f"derivation {workspace_id}/{key} is no longer {old}")


def settle_interrupted(store: SessionStore, only: str | None = None, elsewhere=None) -> list[str]:
    """Boot: a derivation an unclean exit caught mid-creation stands when its session was written
    whole; otherwise its leftovers go and a retry runs again. only: the derivations of one source session (an
    adopted session's, docs/fleet.md), else every one (a boot); elsewhere(session_id): the new session's record
    where it was made when it is not here (an adopted source's node's home), else None."""
    derived, settled = store.catalog.derived, []
    for row in derived.derivations_in_state(DerivationState.CREATING.value):
        if only is not None and row.source_session_id != only:
            continue
        record = store.get(row.child_session_id) or (elsewhere and elsewhere(row.child_session_id))
        if record is not None and record.derivation:
            move(derived, row.workspace_id, row.idempotency_key, DerivationState.CREATED, repair=True,
                 result=record.derivation)
        else:
            store.discard_directory(row.child_session_id)
            move(derived, row.workspace_id, row.idempotency_key, DerivationState.WITHDRAWN, repair=True)
        settled.append(row.child_session_id)
    return settled
