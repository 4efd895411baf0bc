"""Auto titles ([roles.auto_title]) and the explicit rename that always wins over them.

Layer 4. After the first assistant response of an unnamed user session is persisted, one bounded
title pass runs on a thread: the title agent (its provider, model and reasoning effort, then the
role's fallback_chain) gets the first exchange in an ACP session of its own, launched for the pass
and stopped after it, with no tools, no files and no permissions, and outside the catalog (no list
shows it). A usable answer becomes the session's name (meta.json and the catalog) unless a name was
set meanwhile; on failure, a timeout or when disabled, the session stays unnamed. Daemon-managed
sessions are never titled. The pass is recorded in meta.json as `auto_title`, whose `state` moves
along the TITLE table (compozy.states): running, then titled, failed or superseded.

A title the agent itself proposes (ACP session_info_update) names a user session the same way, whether
or not passes are enabled: it replaces an unset name or one a title pass or the agent gave, never an
explicit one; `auto_title.source` is then `agent`.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Mapping

from compozy.acp.client import launch, open_session
from compozy.acp.options import configure
from compozy.clock import now_iso
from compozy.errors import CompozyError
from compozy.launch_aliases import resolve
from compozy.session.records.governed import refuse_user_action
from compozy.session.records.live import LiveSession
from compozy.session.records.record import SessionRecord
from compozy.session.records.replay import turn_text
from compozy.states import TITLE, PermissionDecision, SessionType, TitleState
from compozy.store.eventlog import EventLog
from compozy.text import one_line

log = logging.getLogger("compozy.titles")

EXCERPT_CHARS = 2000
TITLE_CHARS = 80
STOP_GRACE = 2.0
NAME_SOURCE = "name_source"  # who gave the current name: "auto_title" or "agent"; absent means a person did
PROPOSAL = "session_info_update"  # the system event of the agent's own session info
AUTO_TITLE = "auto_title"  # record.extra's key of the title's state
PROPOSED_BY = (AUTO_TITLE, "agent")
PROMPT = ("Write a short title (at most 8 words) for this conversation. Answer with the title only, "
          "no quotes.\n\nUser: {user}\n\nAssistant: {assistant}\n")


def move_title(record: SessionRecord, new: TitleState, **fields: Any) -> None:
    """The one way `auto_title` changes: born running (a pass) or titled (the agent's own title), then
    an edge of the TITLE table."""
    current = (record.extra.get(AUTO_TITLE) or {}).get("state")
    new = TITLE.check(current, new) if current else TitleState(new)
    record.extra[AUTO_TITLE] = {"state": new.value, "at": now_iso(), **fields}


def rename(session: LiveSession, body: Mapping[str, Any]) -> SessionRecord:
    """An explicit name from a person: it wins over any title pass, running or to come."""
    name = body["name"].strip()
    if not name:
        raise CompozyError("invalid_request", "name must not be blank", field="name")
    refuse_user_action(session.record, "renamed")
    with session.lock:
        session.record.extra.pop(NAME_SOURCE, None)  # explicit from now on
        return session.save(name=name)


class Titles:
    """An observer (compozy.session.records.observers) that runs title passes."""

    def __init__(self, services, sessions):
        self.services, self.sessions = services, sessions
        self.running = set()
        self.agents = set()  # the title agents launched now, ended at shutdown
        self.lock = threading.Lock()

    def appended(self, session, records):
        proposals = [r for r in records if r["type"] == "system" and r["content"].get("title") == PROPOSAL]
        if proposals:
            self._proposed(session, (proposals[-1]["content"].get("raw") or {}).get("title"))
        if not self.services.config["roles.auto_title.enabled"] or not any(r["type"] == "done" for r in records):
            return
        record = session.record
        if record.type != SessionType.USER or record.name or AUTO_TITLE in record.extra:
            return
        if len(session.log.read(types=["done"], limit=2)) != 1:
            return  # not the first answer (titles came on later, or this is a derived session's repeat)
        with self.lock:
            if session.id in self.running:
                return
            self.running.add(session.id)
        with session.lock:  # born running before the agent could title it on another append
            move_title(record, TitleState.RUNNING)
            session.save()
        self.services.threads.start(f"title-{session.id}", self._pass, session)

    @staticmethod
    def _proposed(session, proposal):
        """The agent's own title names the session unless a person named it."""
        title = clean_title(proposal) if isinstance(proposal, str) else None
        record = session.record
        if not title or record.type != SessionType.USER:
            return
        with session.lock:
            if record.name and record.extra.get(NAME_SOURCE) not in PROPOSED_BY:
                log.info("session %s: the agent proposed the title %r; its explicit name stays", session.id, title)
                return
            if record.name == title:
                return
            record.extra[NAME_SOURCE] = "agent"
            move_title(record, TitleState.TITLED, source="agent")
            session.save(name=title)
        log.info("session %s titled %r by its agent", session.id, title)

    def closing(self):
        with self.lock:
            agents = list(self.agents)
        for runtime in agents:
            runtime.process.kill_tree(0.5, STOP_GRACE)

    def _pass(self, session):
        try:
            title = self._generate(session)
        except Exception:  # noqa: BLE001 (a title pass never breaks its session)
            log.exception("title pass of session %s failed", session.id)
            title = None
        try:
            self._settle(session, title)
        finally:
            with self.lock:
                self.running.discard(session.id)

    @staticmethod
    def _settle(session, title):
        """The pass's outcome: superseded when a name came meanwhile (a person's or the agent's), else
        titled with its title, else failed."""
        with session.lock:
            record = session.record
            if record.name:
                move_title(record, TitleState.SUPERSEDED)
                session.save()
            elif title:
                move_title(record, TitleState.TITLED)
                record.extra[NAME_SOURCE] = AUTO_TITLE
                session.save(name=title)
                log.info("session %s titled %r", session.id, title)
            else:
                move_title(record, TitleState.FAILED)
                session.save()

    def _generate(self, session):
        prompt = PROMPT.format(**first_exchange(session.log, session.read_secrets()))
        for route in self._routes():
            if not self.services.accepting:
                return None  # the daemon is shutting down: no new agent for a title
            try:
                title = self._ask(session, route, prompt)
            except Exception as exc:  # noqa: BLE001 (the next route, or unnamed)
                log.warning("title pass of session %s on %s failed: %s", session.id, route.get("provider"), exc)
                continue
            if title:
                return title
        return None

    def _routes(self):
        config = self.services.config
        agent = config.agent(config["roles.auto_title.agent"])
        first = dict(agent.defaults())
        for field in ("provider", "model", "reasoning_effort"):
            if config[f"roles.auto_title.{field}"]:
                first[field] = config[f"roles.auto_title.{field}"]
        return [first, *(route.runtime() for route in config.title_chain)]

    def _ask(self, session, route, prompt):
        provider = self.services.config.provider(route["provider"])
        if provider is None:
            raise CompozyError("provider_unavailable", f"no provider named {route['provider']!r}")
        listener = TitleListener()
        runtime = launch(provider, session.id, session.record.cwd, listener, str(self.services.home.root),
                         alias=resolve(provider, route), threads=self.services.threads)
        with self.lock:
            self.agents.add(runtime)
        try:
            open_session(runtime, session.record.cwd)
            configure(runtime, route)
            runtime.prompt(prompt, None).wait(self.services.config["roles.auto_title.timeout"])
            return clean_title("".join(listener.text))
        finally:
            runtime.process.close_stdin()
            runtime.process.kill_tree(STOP_GRACE, STOP_GRACE)
            with self.lock:
                self.agents.discard(runtime)


def first_exchange(log: EventLog, secrets: Any) -> dict:
    """The first user message and the first answer (its joined text redacted), each bounded."""
    events = log.read(types=["user_message", "agent_message", "done"], limit=1000, after_sequence=0)
    user = next((e["content"].get("text", "") for e in events if e["type"] == "user_message"), "")
    first_turn = next((e["turn_id"] for e in events if e["type"] == "done"), None)
    answer = turn_text([e for e in events if e["turn_id"] == first_turn], secrets)
    return {"user": user[:EXCERPT_CHARS], "assistant": answer[:EXCERPT_CHARS]}


def clean_title(text: str) -> str | None:
    """The first non-empty line, without quotes or a `Title:` label, one line, at most TITLE_CHARS."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if line.lower().startswith("title:"):
        line = line[6:].strip()
    line = one_line(line.strip("\"'`* ").strip())
    return " ".join(line.split())[:TITLE_CHARS].strip() or None


class TitleListener:
    """The ACP seam's listener for a title pass: it keeps the answer's text and refuses everything else."""

    def __init__(self):
        self.text = []

    def output(self, runtime, events):
        self.text += [content.get("text", "") for kind, content in events if kind == "agent_message"]

    def permission(self, runtime, ask, reply):
        reply.answer(PermissionDecision.REJECT_ONCE.value)

    def write(self, runtime, path, reply):
        reply.answer(PermissionDecision.REJECT_ONCE.value)

    def question(self, runtime, ask, reply):
        reply.answer(None)  # a title pass asks nobody: cancelled

    def workspace_root(self):
        return None

    def files_denied(self):
        return True

    def exited(self, runtime):
        pass
