"""Supervision: one APScheduler sweeper owns every timer over live sessions.

Layer 4 (the only module that imports APScheduler). Each tick evaluates, from in-memory state
rebuilt at boot: cancel escalation, recovery backoff, the first-output warnings, the silence watchdog,
the prompt budget, runtime_progress events, waiting heartbeats, permission timeouts and idle runtime
release. Nothing here is persisted as a keep-alive flag.
"""

import logging
from datetime import timezone

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from compozy.clock import iso_from_epoch
from compozy.session.lifecycle.sources import UNKNOWN, attention_for
from compozy.session.lifecycle.sources import inspect as inspect_sources
from compozy.session.records.waiting import active_children, live_children, outside_work, waiting_on
from compozy.states import MarkerKind, RuntimeStatus, SessionState, StopCause

log = logging.getLogger("compozy.supervision")

SWEEP_SECONDS = 0.25
NO_OUTPUT_STDERR_LINES = 5
HEARTBEAT = "waiting_heartbeat"  # activity.last_activity_kind of a waiting session's heartbeat


class Supervisor:
    def __init__(self, services, engine, stopper, binder, requests, live_sessions):
        self.services, self.engine, self.stopper = services, engine, stopper
        self.binder, self.requests, self.live_sessions = binder, requests, live_sessions
        self.scheduler = None

    def start(self):
        logging.getLogger("apscheduler").setLevel(logging.WARNING)  # it logs every run of the sweep at INFO
        # A trigger object, not "interval": APScheduler looks names up in package metadata, which the
        # single-file archive does not carry. UTC spares tzlocal's reading of /etc; a sweep needs no zone.
        self.scheduler = BackgroundScheduler(daemon=True, timezone=timezone.utc, job_defaults={
            "coalesce": True, "max_instances": 1, "misfire_grace_time": 5})
        self.scheduler.add_job(self.sweep, IntervalTrigger(seconds=SWEEP_SECONDS, timezone=timezone.utc), id="sweep")
        self.scheduler.start()
        return self

    def shutdown(self):
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)
            self.scheduler = None

    def sweep(self):
        now = self.services.clock.monotonic()
        for sweep in self.services.sweeps:
            try:
                sweep(now)
            except Exception:  # noqa: BLE001 (a concern's trouble must not stop the sessions' timers)
                log.exception("sweep %r failed", sweep)
        for session in self.live_sessions():
            try:
                self.tick(session, now)
            except Exception:  # noqa: BLE001 (one session's trouble must not stop the others' timers)
                log.exception("supervision of %s failed", session.id)

    def tick(self, session, now):
        config = self.services.config
        sources = inspect_sources(session, now, config["session.supervision.quiet_after"], self.services.processes)
        self._attention(session, sources)
        self._heartbeat(session, now, config["session.supervision.activity_heartbeat_interval"])
        turn = session.turn
        if turn is not None and not turn.finished:
            self._turn_timers(session, turn, now, config, sources)
        self.requests.expire(session, config["permissions.timeout"], now)
        if turn is None and sources.worst != UNKNOWN:
            self._idle_release(session, now, config["session.supervision.idle_release_after"])

    @staticmethod
    def _attention(session, sources):
        with session.lock:
            wanted = attention_for(session.record, sources)
            if wanted != session.record.attention and session.state != SessionState.STOPPED:
                session.save(attention=wanted)

    @staticmethod
    def _heartbeat(session, now, interval):
        """While a session waits (records.waiting), activity.last_activity_at moves every interval: metadata
        only, no event, and no work proven (the watchdog reads the turn's progress and work signals)."""
        if not interval or waiting_on(session) is None:
            session.beat(None)
            return
        if session.heartbeat_at is None or now - session.heartbeat_at >= interval:
            session.beat(now)
            session.touch(HEARTBEAT)

    def _turn_timers(self, session, turn, now, config, sources):
        if turn.cancel_deadline is not None and now >= turn.cancel_deadline and not turn.escalate \
                and session.stop_operation is None:
            turn.escalate_cancel()  # the agent ignored the cancel for the whole grace
        if turn.recovery_due is not None and now >= turn.recovery_due:
            turn.recovery_fired()
        if sources.verified_tools or outside_work(session) or active_children(session):
            turn.worked(now)  # a verified running tool, a reply that can still come, a busy child: fresh work
        self._first_output(session, turn, now, config["session.supervision.first_output_after"])
        self._watchdog(session, turn, now, config, blocked=sources.worst == UNKNOWN)
        budget = config["session.supervision.prompt_deadline"]
        if budget and now - turn.started_at >= budget and not turn.deadline_hit and turn.prompting:
            turn.deadline_reached()
            session.marker(MarkerKind.PROMPT_TIMEOUT, f"prompt budget of {budget:g}s used up", turn.id)
            self.engine.cancel(session, "prompt_deadline")
        interval = config["session.supervision.progress_notify_interval"]
        if interval and now - turn.last_progress_event >= interval and turn.prompting:
            turn.progress_reported(now)
            session.append_event("runtime_progress", {
                "text": f"working for {now - turn.started_at:.0f}s",
                "runtime": {"turn_id": turn.id, "elapsed_seconds": round(now - turn.started_at, 1),
                            "idle_seconds": round(now - turn.last_progress, 1),
                            "last_activity_at": session.activity.get("last_activity_at"),
                            "current_tools": sorted(turn.open_tools)}}, turn.id)

    @staticmethod
    def _first_output(session, turn, now, after):
        """A sent prompt the agent has not answered with anything yet: a runtime_warning (no_output) after
        `after` seconds, again at each doubling of the wait; a warning only, never a stop."""
        if not after or turn.output_seen or turn.prompt_sent_at is None or not turn.prompting:
            return
        waited = now - turn.prompt_sent_at
        if waited < after * 2 ** turn.no_output_warnings:
            return
        turn.warned_no_output()
        session.append_event("runtime_warning", no_output_warning(session, waited), turn.id)

    def _watchdog(self, session, turn, now, config, blocked):
        """Silence accrues only while the agent owes the turn work and no work signal is fresh; any
        progress clears the warning. blocked: a source cannot be inspected, so no automatic stop."""
        quiet_after, stop_grace = config["session.supervision.quiet_after"], config["session.supervision.stop_grace"]
        if not quiet_after:
            return
        silence = turn.silence(now)
        if silence < quiet_after:
            turn.quiet(None)
            return
        if turn.quiet_warning is None:
            since = iso_from_epoch(self.services.clock.wall() - silence + quiet_after)
            turn.quiet({"turn_id": turn.id, "since": since, "quiet_after_seconds": quiet_after})
            session.append_event("session.supervision_warning", {
                "turn_id": turn.id, "silence_seconds": round(silence, 1),
                "text": f"Working for {(now - turn.started_at) / 60:.0f}m · quiet for {silence / 60:.0f}m"}, turn.id)
            return
        if stop_grace and silence >= quiet_after + stop_grace and session.stop_operation is None and not blocked:
            log.warning("session %s: silent for %.0fs; stopping (inactivity)", session.id, silence)
            self.stopper.request(session, StopCause.INACTIVITY, wait=False)

    def _idle_release(self, session, now, release_after):
        runtime = session.runtime
        if not release_after or runtime is None or not runtime.alive or not (runtime.supports_load
                                                                             or runtime.supports_resume):
            return
        if session.idle_since is None or now - session.idle_since < release_after:
            return
        if session.permissions or session.stop_operation is not None or session.releasing \
                or self.services.catalog.count_entries(session.id) or live_children(session) \
                or outside_work(session):
            return
        if session.state != SessionState.ACTIVE:
            return
        session.releasing_agent()
        self.services.threads.start(f"release-{session.id}", self._release, session, runtime)

    def _release(self, session, runtime):
        """Silently stop an idle agent; the session stays active and the next prompt binds again."""
        try:
            with session.lock:
                if session.turn is not None or session.runtime is not runtime:
                    return
                runtime.released = True
                session.detach_runtime()  # detached first: a prompt arriving now binds a new process
                session.update_runtime(status=RuntimeStatus.UNBOUND, transition="")
            report = self.binder.stop_process(runtime)
            with session.lock:
                recorded = (session.record.runtime.process or {}).get("pid")
                if report.verified and recorded == runtime.process.pid:
                    session.update_runtime(process=None)  # identity kept until exit is proven
            if report.verified:
                log.info("session %s: idle agent released (acp session %r kept)", session.id, runtime.acp_session_id)
            else:
                log.error("session %s: idle release could not prove exit of pid %s", session.id, runtime.process.pid)
        finally:
            session.releasing_agent(False)


def no_output_warning(session, waited):
    """The runtime_warning of a prompt with no output yet: how long, from which agent, and its recent stderr."""
    runtime = session.runtime
    agent = runtime.provider.name if runtime is not None else session.record.agent_name
    content = {"kind": "no_output", "waited_seconds": round(waited), "agent": agent,
               "text": f"no output from {agent} after {waited:.0f} s"}
    tail = runtime.process.stderr_tail(NO_OUTPUT_STDERR_LINES).splitlines() if runtime is not None else []
    if tail:
        content["stderr_tail"] = tail
        content["text"] += f"; its stderr: {tail[-1][:200]}"
    return content
