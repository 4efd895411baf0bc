"""Binding a prompt's runtime: reuse and reconfigure the live agent, replace it, or start one.

Layer 4. The first bind walks the agent's fallback chain; a route refused before ACP acceptance
is recorded (session.fallback.used + a provider_failure marker with the agent's evidence, and one
line in the daemon's log) and the next route is tried. While an agent starts, session.starting says
which and since when. Nothing of the authored message is persisted here: the caller records
user_message on success. A process that stops serving is asked to close its ACP session first.
"""

import logging

from compozy.acp.client import BindFailure, close_session, configure, launch, needs_configuration, open_session
from compozy.api import SECRET_ENV
from compozy.clock import iso_from_epoch
from compozy.errors import CompozyError
from compozy.launch_aliases import resolve
from compozy.session.records.governed import refuse_expired
from compozy.session.records.runtime_events import RuntimeEvents
from compozy.session.lifecycle.recovery import lost_outside_turn
from compozy.session.records.record import ABSENT
from compozy.session.records.snapshots import layer, routes_for
from compozy.states import (NATIVE, FailureKind, MarkerKind, NativeState, RuntimeStatus, RuntimeTransition,
                            SessionState)
from compozy.text import one_line

log = logging.getLogger("compozy.binding")

RETIRE_GRACE = 2.0
RETIRE_KILL_GRACE = 5.0


class Binder:
    def __init__(self, services, requests):
        self.services, self.requests = services, requests

    def bind(self, session, turn, transition=None):
        """Make session.runtime serve turn's snapshot; returns the replay reason or None. A governed child
        past its TTL is never bound again, whatever asks (a queued turn, recovery)."""
        try:
            refuse_expired(session.record, self.services.clock.wall())
        except CompozyError as expired:
            raise BindFailure(expired, FailureKind.STARTUP_FAILURE) from None
        stored = session.record.runtime
        routes = routes_for(session.agent, stored.selected, turn.snapshot)
        runtime = session.runtime
        if runtime is not None and runtime.alive and not runtime.effective.get("stale"):
            target = next((t for _, t in routes if t["provider"] == runtime.provider.name), routes[0][1])
            same_provider = target["provider"] == runtime.provider.name
            same_alias = same_provider and self._alias(target) == runtime.launch_alias
            if same_alias and self._reconfigure(session, runtime, target):
                return None
            # Atomic replacement (another provider or launch alias, or an option the live process does not
            # take): the current agent keeps serving until the new one is accepted.
            reason = "provider_change" if not same_provider else "launch_alias" if not same_alias else \
                "option_not_live"
            return self._start(session, [(None, target)], RuntimeTransition.PROCESS_REPLACEMENT, allow_load=False,
                               previous=runtime, replay_reason=reason)
        if runtime is not None:
            self.retire(session, RuntimeTransition.PROCESS_REPLACEMENT)
        accepted = stored.route
        if accepted and len(routes) > 1:
            routes = [r for r in routes if r[0] == accepted] or routes
        routes = _pinned_route(session, routes, turn.snapshot)
        if transition is None:
            first = not stored.acp_session_id or _native(session.record) == NativeState.PENDING
            transition = RuntimeTransition.INITIAL_BIND if first else RuntimeTransition.PROCESS_REPLACEMENT
        return self._start(session, routes, transition, allow_load=True)

    def _reconfigure(self, session, runtime, target):
        """Configure the live process in place; False when it does not take the needed options."""
        if not needs_configuration(runtime, target):
            return True  # the warm path: nothing to change, nothing to write
        _enter(session, RuntimeStatus.RECONFIGURING, RuntimeTransition.LIVE_CONFIGURATION)
        try:
            configure(runtime, target)
        except BindFailure as refusal:
            _unless_stopping(session, status=RuntimeStatus.READY, transition="")
            log.info("session %s: the live process does not take the runtime (%s); replacing it",
                     session.id, refusal.error.message)
            return False
        if not _unless_stopping(session, status=RuntimeStatus.READY, transition="", effective=runtime.effective,
                                last_known=_identity(runtime.effective)):
            raise _stop_refusal()
        return True

    def _start(self, session, routes, transition, allow_load, previous=None, replay_reason="provider_change"):
        self._starting(session, routes[0][1]["provider"])  # before the status: a reader of it sees the start
        try:
            return self._start_routes(session, routes, transition, allow_load, previous, replay_reason)
        finally:
            session.starting_agent(None)

    def _starting(self, session, provider_name):
        clock = self.services.clock
        session.starting_agent({"agent": session.record.agent_name, "provider": provider_name,
                                "since": iso_from_epoch(clock.wall()), "started": clock.monotonic()})

    def _start_routes(self, session, routes, transition, allow_load, previous, replay_reason):
        recovering = transition == RuntimeTransition.AUTOMATIC_RECOVERY
        status = RuntimeStatus.RECOVERING if recovering else \
            RuntimeStatus.RECONFIGURING if previous else RuntimeStatus.BINDING
        _enter(session, status, transition)
        failure = None
        for index, (number, target) in enumerate(routes):
            try:
                runtime, loaded = self._launch(session, target, allow_load)
            except BindFailure as exc:
                if _stop_began(session):  # the stop stopped it: no refused route, and no further one
                    raise _stop_refusal() from None
                failure = exc
                self._route_refused(session, number, target, exc, more=index + 1 < len(routes))
                continue
            if not self._accept(session, runtime, number, transition):
                self._discard(runtime)  # the stop ladder owns the runtime status from here
                raise _stop_refusal()
            if previous is not None:
                previous.released = True  # its exit is expected, not a crash
                self.stop_process(previous)
            _settle_native(session, loaded)
            if loaded or not (session.log.last_sequence() or session.carried()):
                return None
            return "fresh_agent_session" if allow_load else replay_reason
        session.starting_agent(None)  # before the status: a reader of it sees the start over
        if previous is not None:
            _unless_stopping(session, status=RuntimeStatus.READY, transition="")  # the old agent still serves
        elif not recovering:
            _unless_stopping(session, status=RuntimeStatus.UNBOUND, transition="")
        raise failure

    def _launch(self, session, target, allow_load):
        provider = self.services.config.provider(target["provider"])
        if provider is None:
            raise BindFailure(CompozyError("provider_unavailable", f"no provider named {target['provider']!r}"),
                              "startup_failure")
        stored = session.record.runtime
        listener = RuntimeEvents(session, self.requests, self._lost_outside_turn)
        identities = self.services.identities
        secret = identities.issue(session)
        if (session.starting or {}).get("provider") != provider.name:
            self._starting(session, provider.name)  # a later route of the chain
        try:
            runtime = launch(provider, session.id, session.record.cwd, listener, str(self.services.home.root),
                             identity={SECRET_ENV: secret}, alias=resolve(provider, target),
                             login_name=_login_name(session, provider),
                             spawned=session.bind_candidate,  # a stop sees it
                             threads=self.services.threads)
        except BindFailure:
            session.bind_candidate(None)
            identities.forget(secret)
            raise
        identities.attach(secret, runtime)
        try:
            last_provider = (stored.last_known or {}).get("provider")
            load_id = stored.acp_session_id if allow_load and last_provider == provider.name else None
            loaded = open_session(runtime, session.record.cwd, load_id, identities.offer(secret, session.id))
            configure(runtime, target)
        except BindFailure as refusal:
            session.bind_candidate(None)
            identities.forget(secret)
            self._discard(runtime)
            raise refusal.with_stderr(runtime) from None
        session.served_by(runtime)
        return runtime, loaded

    def _alias(self, target):
        return resolve(self.services.config.provider(target["provider"]), target)

    def _lost_outside_turn(self, session, runtime):
        lost_outside_turn(self.services, session, runtime)

    def _accept(self, session, runtime, number, transition):
        """False when a stop already took the session's runtime: nothing may bind after it."""
        with session.lock:
            if _stop_began(session):
                session.bind_candidate(None)
                return False
            session.bound_to(runtime)
            commands = {"commands": runtime.available_commands} if runtime.available_commands is not None else {}
            session.update_runtime(status=RuntimeStatus.READY, transition="", acp_session_id=runtime.acp_session_id,
                                   effective=runtime.effective, last_known=_identity(runtime.effective),
                                   process={**runtime.process.identity.to_dict()}, route=number, **commands)
            if session.record.failure:
                session.save(failure=None)
        log.info("session %s bound to %s (acp session %r, %s by %s)", session.id, runtime.provider.name,
                 runtime.acp_session_id, transition.value or "bind", runtime.opened)
        return True

    def _route_refused(self, session, number, target, failure, more):
        summary = f"route {number or 1} ({target['provider']}): {failure.error.code}: {failure.error.message}"
        log.warning("session %s: bind failed: %s", session.id, one_line(summary))
        if failure.runtime is not None:
            session.served_by(failure.runtime)
        if more:
            session.append_event("session.fallback.used", {"route": number, "provider": target["provider"],
                                                           "model": target.get("model"), "code": failure.error.code,
                                                           "error": failure.error.message[:500]})
        session.marker(MarkerKind.PROVIDER_FAILURE, summary, code=failure.error.code, route=number,
                       failure_kind=failure.failure_kind, **failure.evidence)

    def retire(self, session, transition=RuntimeTransition.NONE):
        """Stop the current process (stdin closed, then signals) and forget it."""
        runtime = session.runtime
        if runtime is None:
            return None
        _unless_stopping(session, status=RuntimeStatus.RECONFIGURING if transition else RuntimeStatus.UNBOUND,
                         transition=transition)
        runtime.released = True  # its exit is expected, not a crash outside a turn
        report = self._discard(runtime)
        with session.lock:
            if session.runtime is runtime:
                session.detach_runtime()
            fields = {"status": RuntimeStatus.UNBOUND, "transition": ""}
            if report.verified:
                fields["process"] = None
            _unless_stopping(session, **fields)
        return report

    def stop_process(self, runtime):
        """Stop a runtime already detached from its session (released, or replaced by another), its ACP session
        closed first when the agent offers that; the KillReport says if exit is proven."""
        close_session(runtime)
        return self._discard(runtime)

    def _discard(self, runtime):
        runtime.process.close_stdin()
        if runtime.process.wait_exit(RETIRE_GRACE):
            return runtime.process.kill_tree(0.5, RETIRE_KILL_GRACE)  # only stragglers of its group remain
        return runtime.process.kill_tree(RETIRE_GRACE, RETIRE_KILL_GRACE)


def _stop_began(session):
    """A stop took the session's runtime (or ended): from here the stop ladder owns the runtime status."""
    operation = session.stop_operation
    return session.state == SessionState.STOPPED or (operation is not None and operation.binds_refused)


def _stop_refusal():
    return BindFailure(CompozyError("session_stop_in_progress", "the session stopped while its runtime was binding"),
                       "startup_failure")


def _enter(session, status, transition):
    """A bind's transitional status, unless a stop already owns the runtime (then the bind is refused)."""
    if not _unless_stopping(session, status=status, transition=transition):
        raise _stop_refusal()


def _unless_stopping(session, **fields):
    """Change the stored runtime unless a stop owns it; True when changed."""
    with session.lock:
        if _stop_began(session):
            return False
        session.update_runtime(**fields)
        return True


def _native(record):
    return (record.derivation or {}).get("native_state")


def _settle_native(session, loaded):
    """A fork seeded by the agent's clone: the first bind loaded it, or the carried context is used."""
    derivation = session.record.derivation
    if _native(session.record) != NativeState.PENDING:
        return
    state = NATIVE.check(NativeState.PENDING, NativeState.LOADED if loaded else NativeState.FAILED)
    settled = {**derivation, "native_state": state.value}
    if not loaded:
        settled["native_fork_error"] = ("the clone was not loaded (another provider, or loading it failed); "
                                        "the carried context was used")
    session.save(derivation=settled)


def _pinned_route(session, routes, prompt_snapshot):
    """A continue's --route is applied at the first bind, exactly: a route the agent no longer declares
    is route_not_found and nothing runs on another account. An explicit provider overrides it."""
    record = session.record
    pinned = (record.derivation or {}).get("route")
    if not pinned or record.runtime.route is not ABSENT or layer(record.runtime.selected, prompt_snapshot).get(
            "provider"):
        return routes
    chain = session.agent.fallback_chain
    if pinned > len(chain):
        raise BindFailure(CompozyError("route_not_found", f'agent "{session.agent.name}" declares {len(chain)} '
                                       f"route(s); route {pinned} does not exist", route=pinned), "startup_failure")
    return [(number, target) for number, target in routes if number == pinned]


def _login_name(session, provider):
    """What `compozy agent login` takes for this provider: the session's agent when it runs on it."""
    try:
        agent = session.agent
    except CompozyError:  # its agent left config.toml
        return provider.name
    return agent.name if agent.provider == provider.name else provider.name


def _identity(effective):
    return {k: effective[k] for k in ("provider", "model", "reasoning_effort", "speed") if effective.get(k)}
