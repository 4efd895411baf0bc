"""SessionManager: the façade every surface calls; one public method per operation.

Layer 5. HTTP routes, the CLI (through HTTP) and the in-process test surface all reach the
daemon's behaviour through these methods, which return the documents the API answers.
"""

import json
import logging
import threading
from functools import partial
from types import MappingProxyType
from typing import Any, Iterator, Mapping

from compozy import __version__, parsing, serialize
from compozy.api import OPERATIONS
from compozy.clock import SYSTEM
from compozy.errors import CompozyError
from compozy.fleet.views import FleetViews
from compozy.ids import validate_id
from compozy.proc import LINUX
from compozy.session.derive import derivation, files, observing, rewind, sources
from compozy.session.derive.derivation import Deriver, continue_request, fork_request
from compozy.session.derive.clear import Clearer
from compozy.session.derive.rewind import Rewinder
from compozy.session.lifecycle import repair, requests as lifecycle
from compozy.session.lifecycle.archives import ArchiveViews
from compozy.session.lifecycle.boot import Reconciler
from compozy.session.lifecycle.inbox_views import InboxViews
from compozy.session.lifecycle.stop import Stopper
from compozy.session.lifecycle.supervision import Supervisor
from compozy.session.records import reads
from compozy.session.records.agents import AgentViews
from compozy.session.records.creation import create_session
from compozy.session.records.feed import Feed, catalog_changed
from compozy.session.records.governed import refuse_removal
from compozy.session.records.listing import DEFAULT_LIST_LIMIT, list_filters
from compozy.session.records.live import LiveSession
from compozy.session.records.services import Services
from compozy.session.records.reading import SessionReads, watched
from compozy.session.records.record import SessionRecord
from compozy.session.records.selection import clear_selection, set_selection
from compozy.session.records.settings import SettingsViews
from compozy.session.records.store import SessionStore
from compozy.session.records.workspaces import Workspaces
from compozy.session.turns.binding import Binder
from compozy.session.turns.engine import TurnEngine
from compozy.session.turns.identity import Identities
from compozy.session.turns.inspection import agent_evidence
from compozy.session.turns import titles
from compozy.session.turns.tool_calls import ToolCalls
from compozy.session.turns.usage_views import UsageViews
from compozy.session.turns.choices import outcome
from compozy.session.turns.permissions import AgentRequests
from compozy.states import LIVE_STATES, StopAnswer, StopCause
from compozy.store.catalog import Catalog
from compozy.store.eventlog import EventLogPool

log = logging.getLogger("compozy.manager")

Fields = Mapping[str, Any]  # a request's body or query, as compozy.parsing's edge passes it: parsed
NOTHING: Mapping[str, Any] = MappingProxyType({})  # never used: the edge passes the parsed request

SHUTDOWN_JOIN_SECONDS = 2.0  # what the background threads get to end before the stores close under them


class SessionManager(FleetViews, AgentViews, SettingsViews, SessionReads, ArchiveViews, ToolCalls, files.FileOperations,
                     InboxViews, UsageViews):
    def __init__(self, home, config, clock=SYSTEM, processes=LINUX, endpoints=None, address=None):
        """clock and processes: the time and process table the timers and the stop ladder read; endpoints
        (identity.ToolEndpoints): where bound agents reach the native tool server (None: nowhere); address: this
        daemon's HTTP address, where the fleet's other nodes reach it unless [fleet] advertise says otherwise."""
        self.home = home.ensure()
        self.catalog = Catalog(home.catalog_file)
        self.store = SessionStore(home, self.catalog, EventLogPool(home), agent_defaults=self._agent_defaults)
        self.workspaces = Workspaces(self.catalog, home.root)
        self.live = {}
        self._live_lock = threading.Lock()
        self._adopting = set()  # the sessions an adoption is under way for (fleet.views.adopt_session)
        self.services = Services(home, config, self.catalog, self.store, Feed(), clock, processes,
                                 live_sessions=lambda: list(self.live.values()), identities=Identities(endpoints))
        self.requests = AgentRequests(self.services)
        self.binder = Binder(self.services, self.requests)
        self.engine = TurnEngine(self.services, self.binder, self.requests)
        self.stopper = Stopper(self.services, self.engine)
        self.supervisor = Supervisor(self.services, self.engine, self.stopper, self.binder, self.requests,
                                     self.services.live_sessions)
        self.rewinder = Rewinder(self.services, self.binder)
        self.clearer = Clearer(self.rewinder)
        self.deriver = Deriver(self.services, self.engine, self._session, self.workspaces)
        self.observers = observing.observe(self)
        self.indexer, self.keeper = self.observers["search"], self.observers["retention"]
        self.fleet = self._join_fleet(config.fleet, address)

    # -- daemon lifecycle ---------------------------------------------------------------

    def start(self) -> "SessionManager":
        """Boot: index, classify stale sessions, stop orphans, repair transcripts; then the timers."""
        Reconciler(self.store).run()
        self.workspaces.recover()  # compozy.db lost: its sessions came back from their folders, so do their workspaces
        repair.kill_orphans(self.home, self.services.processes)
        repair.classify_stale(self.store, self.services.processes)
        repair.settle_control_rows(self.store)
        rewind.finish_interrupted(self.store)
        derivation.settle_interrupted(self.store)
        repair.repair_at_boot(self.store, self.services.checkpoints)  # a turn the daemon died in: its end checkpoint
        self.supervisor.start()
        self.services.observers.emit("started")
        return self

    def shutdown(self) -> None:
        """Admit nothing new; stop every live runtime through the ladder (stop_reason shutdown)."""
        self.services.accepting = False
        self.supervisor.shutdown()
        self.services.observers.emit("closing")
        stops = [self.services.threads.start(f"shutdown-{s.id}", self._stop_for_shutdown, s)
                 for s in list(self.live.values())]
        for thread in stops:
            thread.join()
        self._leave_fleet()
        self.services.catalog_feed.close()
        for session in list(self.live.values()):
            session.close()
        self.services.threads.join(SHUTDOWN_JOIN_SECONDS)
        self.store.logs.close_all()
        self.catalog.close()

    def _stop_for_shutdown(self, session):
        bound = session.runtime is not None or session.record.runtime.acp_session_id
        if session.state in LIVE_STATES and bound:
            self.stopper.request(session, StopCause.SHUTDOWN, wait=True)

    def health(self) -> dict:
        """Liveness and version."""
        return {"status": "ok", "version": __version__}

    # -- workspaces ---------------------------------------------------------------------

    def create_workspace(self, body: Fields) -> dict:
        """Register a workspace by name and absolute path."""
        return {"workspace": serialize.workspace_resource(self.workspaces.register(body["name"], body["path"]))}

    def list_workspaces(self) -> dict:
        """Every registered workspace, by name."""
        return {"workspaces": [serialize.workspace_resource(w) for w in self.workspaces.list()]}

    # -- the catalog ----------------------------------------------------------------------

    def create_session(self, body: Fields, identity: Any = None) -> dict:
        """Create a durable logical session: active, runtime unbound, no agent process. identity: the
        (session ID, binding secret) a bound agent presents; it is the parent unless the body names one."""
        self._require_admission()
        self._placed_here(body.get("node"))
        caller = self.services.identities.presented(*identity) if identity and any(identity) else None
        record = create_session(body, config=self.services.config, workspaces=self.workspaces, store=self.store,
                                caller=caller)
        self._catalog_changed("upserted", record)
        self.services.observers.emit("created", record)
        return {"session": self._resource(record)}

    def spawn_session(self, caller: Any, body: Fields, spawn: Any) -> dict:
        """A governed `spawned` child of a bound agent's session (the create tool with spawn)."""
        self._require_admission()
        record = self.observers["children"].spawn(caller, body, spawn)
        self._catalog_changed("upserted", record)
        self.services.observers.emit("created", record)
        return {"session": self._resource(record)}

    def get_session(self, session_id: str, workspace: str | None = None) -> dict:
        """Read one session (workspace-scoped when workspace is given)."""
        return {"session": self._resource(self._record(session_id, workspace), precise=True)}

    def session_status(self, session_id: str, workspace: str | None = None) -> dict:
        """Compact status: state in the health vocabulary, lifecycle_state beside it."""
        resource = self._resource(self._record(session_id, workspace), precise=True)
        return {"session": serialize.compact_status(resource)}

    def session_health(self, session_id: str, workspace: str | None = None) -> dict:
        """The metadata-only health record: state, health, attachable, eligible_for_wake."""
        resource = self._resource(self._record(session_id, workspace))
        return {"health": {"session_id": session_id, **resource["health"]}}

    def inspect_session(self, session_id: str, workspace: str | None = None) -> dict:
        """Everything a person debugging needs: the resource, files, process, queue, requests, tail."""
        record = self._record(session_id, workspace)
        log = self.store.events(record)
        document = reads.inspection(self.home, self.catalog, log, record, self._resource(record, precise=True))
        return {**document, **agent_evidence(self.live.get(record.id), record, log),
                "threads": self.services.threads.view(record.id)}

    def list_sessions(self, query: Fields = NOTHING, encoded: bool = False) -> dict | serialize.JSONText:
        """Catalog page, newest first, with the interface's filters and keyset cursor (scope=fleet: the fleet's).
        encoded=True answers JSON text assembled from each row's stored rendered read, so a page of 1,000
        sessions costs one query and a join, not 1,000 decodes and encodes."""
        if query.get("scope") == "fleet":
            return self._list_fleet(query, encoded)
        limit, cursor = query.get("limit") or DEFAULT_LIST_LIMIT, query.get("cursor")
        rows, has_more, total = self.catalog.list_sessions(list_filters(query, self.workspaces), limit, cursor)
        page = {"limit": limit, "total": total, "has_more": has_more,
                "next_cursor": rows[-1][0] if has_more and rows else None}
        open_items = self.catalog.attention.counts([row[0] for row in rows])  # the inbox's items per session
        if encoded:
            texts = [self._list_row_text(*row) for row in rows]
            return serialize.JSONText(f'{{"sessions":[{",".join(texts)}],"page":{serialize.encode(page)},'
                                      f'"open_items":{serialize.encode(open_items)}}}')
        return {"sessions": [json.loads(self._list_row_text(*row)) for row in rows], "page": page,
                "open_items": open_items}

    def rename_session(self, session_id: str, workspace: str | None, body: Fields) -> dict:
        """An explicit name; it always wins over an auto title."""
        return {"session": self._resource(titles.rename(self._session(session_id, workspace), body), precise=True)}

    def remove_session(self, session_id: str, workspace: str | None = None) -> dict:
        """Stop a live session (verified), then delete its catalog row and directory."""
        session = self._session(session_id, workspace)
        refuse_removal(self.store, session.record)
        if session.state in LIVE_STATES:
            lifecycle.stop_for(self.stopper, session, StopCause.REMOVAL, "stop_unverified")
        self.store.remove(session.record)  # raises with the session whole when it cannot remove it
        with self._live_lock:
            self.live.pop(session.id, None)
        session.close()
        self._catalog_changed("deleted", session.record)
        self.services.observers.emit("removed", session.record)
        return {"removed": {"session_id": session.id, "workspace_id": session.record.workspace_id}}

    # -- prompts and busy input -----------------------------------------------------------

    def prompt(self, session_id: str, workspace: str | None, body: Fields) -> dict:
        """Admit a prompt: started, queued, steered or interrupted, answered after the durable write."""
        document = self.engine.prompt(self._session(session_id, workspace), body)
        return serialize.Answer(document["prompt"]["disposition"], document)

    def prompt_stream(self, session_id: str, workspace: str | None, body: Fields) -> Iterator:
        """The admission, then every committed event of its turn until the turn ends."""
        session = self._session(session_id, workspace)
        cursor = session.log.last_sequence()
        admission = self.engine.prompt(session, body)["prompt"]
        turn_id = admission["turn_id"]

        def events():
            yield "prompt", admission
            if admission.get("replayed"):
                return
            ends = lambda r: r["turn_id"] == turn_id and r["type"] in ("done", "error")  # noqa: E731
            for batch in watched(session, self.services, reads.follow_batches(session.log, session.feed, cursor,
                                                                              until=ends)):
                yield [(r["type"], r) for r in batch if r["turn_id"] == turn_id] if batch else (None, None)
        return events()

    def cancel_turn(self, session_id: str, workspace: str | None, body: Fields = NOTHING) -> dict:
        """Stop the current turn without a replacement (the session stays active)."""
        return self.engine.cancel_turn(self._session(session_id, workspace), body)

    def list_inputs(self, session_id: str, workspace: str | None) -> dict:
        """The daemon-owned input queue, in run order."""
        return self.engine.list_inputs(self._session(session_id, workspace))

    def edit_input(self, session_id: str, workspace: str | None, entry: str, body: Fields) -> dict:
        """Replace a queued entry's text (new message_id and idempotency_key unless retried)."""
        return self.engine.edit_input(self._session(session_id, workspace), entry, body)

    def steer_input(self, session_id: str, workspace: str | None, entry: str, body: Fields) -> dict:
        """Promote a queued entry to steer the current turn (fenced by expected_turn_id)."""
        return self.engine.steer_input(self._session(session_id, workspace), entry, body)

    def cancel_input(self, session_id: str, workspace: str | None, entry: str) -> dict:
        """Remove a queued entry before it runs."""
        return self.engine.cancel_input(self._session(session_id, workspace), entry)

    def set_runtime(self, session_id: str, workspace: str | None, body: Fields) -> dict:
        """Persist next-prompt runtime intent (PUT with the complete runtime and expected_revision)."""
        session = self._session(session_id, workspace)
        return {"session": self._resource(set_selection(session, body), precise=True)}

    def clear_runtime(self, session_id: str, workspace: str | None, query: Fields = NOTHING) -> dict:
        """Clear the selection at query's expected_revision."""
        session = self._session(session_id, workspace)
        return {"session": self._resource(clear_selection(session, query["expected_revision"]), precise=True)}

    def approve(self, session_id: str, workspace: str | None, body: Fields) -> dict:
        """Answer a pending permission request."""
        session = self._session(session_id, workspace)
        validate_id(body["request_id"], "perm", field="request_id", not_found="permission_request_not_found")
        option = self.requests.approve(session, body["request_id"], body.get("option_id"), body.get("decision"),
                                       body.get("content"))
        return {"permission": {"request_id": body["request_id"], **outcome(option), "status": "approved"}}

    # -- lifecycle ----------------------------------------------------------------------------

    def stop_session(self, session_id: str, workspace: str | None, body: Fields = NOTHING,
                     caller_id: str | None = None) -> dict:
        """Per the seed: accepted (wait false), the outcome (wait true), or the legacy answer (wait omitted)."""
        session = self._session(session_id, workspace)
        kind, document = lifecycle.stop(self.stopper, session, body, caller_id)
        if kind == StopAnswer.STOPPED:
            document = {"session": self._resource(session.record, precise=True)}
        return serialize.Answer(kind, document)

    def archive_session(self, session_id: str, workspace: str | None, query: Fields = NOTHING,
                        caller_id: str | None = None) -> dict:
        """Leave the default catalog (stopping first when the query says stop=true; a daemon-managed session is
        stopped only by its parent's agent, caller_id, as with stop)."""
        session = self._session(session_id, workspace)
        stop = bool(query and query.get("stop"))
        return {"session": self._resource(lifecycle.archive(self.stopper, session, stop, caller_id), precise=True)}

    def unarchive_session(self, session_id: str, workspace: str | None) -> dict:
        """Return to the default catalog; the session stays stopped."""
        return {"session": self._resource(lifecycle.unarchive(self._session(session_id, workspace)), precise=True)}

    def repair_session(self, session_id: str, workspace: str | None, body: Fields) -> dict:
        """Append-only transcript repair of an interrupted last turn."""
        session = self._session(session_id, workspace)
        with session.lock:
            result = repair.repair(self.store, session.record, body.get("dry_run", False), body.get("force", False),
                                   publish=session.feed.publish, checkpoints=self.services.checkpoints)
        return {"repair": result}

    # -- derived work ----------------------------------------------------------------------------

    def rewind(self, session_id: str, workspace: str | None, body: Fields) -> dict:
        """Archive a user message and everything after it; its text comes back as draft_text."""
        session = self._session(session_id, workspace)
        result = self.rewinder.rewind(session, body)
        return {"session": self._resource(session.record, precise=True), "rewind": result}

    def clear_conversation(self, session_id: str, workspace: str | None, body: Fields) -> dict:
        """Archive the whole active transcript and discard a carried context: the next prompt starts fresh."""
        session = self._session(session_id, workspace)
        result = self.clearer.clear(session, body)
        return {"session": self._resource(session.record, precise=True), "clear": result}

    def continue_session(self, session_id: str, workspace: str | None, body: Fields, creator: Any = None) -> dict:
        """A new session carrying this one's conversation to another agent; the source is untouched.
        creator: the record of the agent's session that asks (the native tool), held to the agents' limits."""
        request = continue_request(session_id, self.workspaces.resolve(workspace)["id"], body)
        return self.deriver.derive(request, creator).answer(partial(self._resource, precise=True))

    def fork_session(self, session_id: str, workspace: str | None, body: Fields, creator: Any = None) -> dict:
        """A new session of the same agent and runtime carrying this conversation (or a prefix of it)."""
        request = fork_request(session_id, self.workspaces.resolve(workspace)["id"], body)
        return self.deriver.derive(request, creator).answer(partial(self._resource, precise=True))

    def derive_preview(self, session_id: str, workspace: str | None, query: Fields = NOTHING) -> dict:
        """What a continue or fork would carry right now, at which fences; it never writes."""
        return sources.preview(self._session(session_id, workspace), self.services, query)

    # -- helpers --------------------------------------------------------------------------------

    def _require_admission(self):
        if not self.services.accepting:
            raise CompozyError("new_work_admission_unavailable", "the daemon is shutting down")

    def _record(self, session_id, workspace=None):
        validate_id(session_id, "sess", not_found="session_not_found")
        workspace_id = self.workspaces.resolve(workspace)["id"] if workspace is not None else None
        live = self.live.get(session_id)
        if live is not None and (workspace_id is None or live.record.workspace_id == workspace_id):
            return live.record
        return self.store.require(session_id, workspace_id)

    def _session(self, session_id, workspace=None):
        record = self._record(session_id, workspace)
        with self._live_lock:
            session = self.live.get(record.id)
            if session is None:
                session = self.live[record.id] = LiveSession(self.services, record)
        return session

    def _list_row_text(self, session_id, text, rendered):
        live = self.live.get(session_id)
        if live is not None:
            return serialize.encode(serialize.session_resource(live.record, live.overlay(), live.log.max_active_sequence(),
                                                               self._agent_defaults(live.record.agent_name)))
        if rendered and '"display":' in text:
            return text
        # A row indexed before rendered reads were stored, or rendered before rows showed runtime.display.
        record = self.store.get(session_id) if rendered else SessionRecord.from_dict(json.loads(text))
        return serialize.encode(serialize.session_resource(record, None, (record.fences or {}).get("max_sequence", 0),
                                                           self._agent_defaults(record.agent_name)))

    def _resource(self, record, precise=False):
        live = self.live.get(record.id)
        if precise:
            max_sequence = (live.log if live else self.store.events(record)).max_active_sequence()
        else:
            max_sequence = (record.fences or {}).get("max_sequence", 0)
        return serialize.session_resource(record, live.overlay() if live else None, max_sequence,
                                          self._agent_defaults(record.agent_name))

    def _agent_defaults(self, agent_name):
        agent = self.services.config.agents.get(agent_name)
        return agent.defaults() if agent is not None else None

    def _catalog_changed(self, change, record):
        catalog_changed(self.services.catalog_feed, change, record)


# Each façade method the table names takes its operation's parsed request (compozy/parsing.py).
parsing.edges(SessionManager, OPERATIONS, also=(("prompt_stream", "session.prompt"),))
