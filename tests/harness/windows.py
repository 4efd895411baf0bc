"""The runtime transition windows of the cross product, each held open with the reference agent's fault
directives and gates (docs/reference-agent.md: COMPOZY_REFERENCE_GATES holds `initialize`,
`session/new`, `session/load` or the exit at stdin's end until a gate file exists).

A window prepares its session, opens (and returns once reads show the window open), and closes;
`settle_within` bounds how long the session may stay transitional after it closes: the handshake
timeout (6 s here), recovery's backoff or the stop ladder, plus 5 s. `daemon` names the daemon
configuration it runs on (DAEMON_CONFIGS).
"""

import sys
import time
from dataclasses import dataclass
from datetime import datetime

HANDSHAKE = 6.0
REFERENCE = [sys.executable, "-m", "compozy.agents.reference"]


def _provider(**env):
    return {"command": REFERENCE, "env": env, "handshake_timeout": f"{HANDSHAKE:g}s"}


PROVIDERS = {
    "gated-init": _provider(COMPOZY_REFERENCE_GATES="initialize=init"),
    "gated-new": _provider(COMPOZY_REFERENCE_GATES="session/new=new"),
    "gated-load": _provider(COMPOZY_REFERENCE_GATES="session/load=load"),
    "gated-exit": _provider(COMPOZY_REFERENCE_GATES="exit=bye"),
    "growing": _provider(COMPOZY_REFERENCE_MODELS_FILE="models.txt", COMPOZY_REFERENCE_GATES="initialize=init"),
    "broken": _provider(COMPOZY_REFERENCE_FAIL_START="1"),
}
AGENTS = {name: {"provider": name} for name in PROVIDERS if name != "broken"}
AGENTS["fallback"] = {"provider": "broken", "fallback_chain": [{"provider": "broken"}, {"provider": "gated-init"}]}
BASE = {"providers": PROVIDERS, "agents": AGENTS, "permissions": {"mode": "approve-reads"},
        "session": {"stop": {"cooperative_grace": "1s"}, "busy_input": {"queue_cap": 10}}}
DAEMON_CONFIGS = {
    "main": BASE,
    "release": {**BASE, "session": {**BASE["session"], "supervision": {"idle_release_after": "1s"}}},
    "boot": BASE,
}
LADDER = 1.0 + 5.0 + 5.0  # cooperative grace, TERM, KILL


@dataclass(frozen=True)
class Window:
    name: str
    agent: str = "general"
    daemon: str = "main"
    settle_within: float = HANDSHAKE + 5.0

    def prepare(self, case):
        case.session = case.must("session.create", workspace_path=str(case.workspace), agent_name=self.agent)

    def open(self, case):
        raise NotImplementedError

    def close(self, case):
        for name in ("init", "new", "load", "bye", "h"):
            case.gate(name)

    def status_is(self, case, status, **runtime):
        def seen():
            read = case.read()
            fields = read["runtime"]
            return read if fields["status"] == status and all(fields.get(k) == v for k, v in runtime.items()) \
                else None
        return case.wait(seen, f"runtime {status} {runtime or ''}".strip())


def _warm(window, case):
    Window.prepare(window, case)
    case.run_turn("warm")


class FirstBind(Window):
    """The first prompt's bind, held in the agent's `initialize` or `session/new`."""

    def open(self, case):
        case.in_background("session.prompt", message="[chunks 1] first", **case.ids("first"))
        self.status_is(case, "binding")


class RecoveryBackoff(Window):
    """The agent crashed mid-turn; recovery waits out its 1 s backoff (the replay then resumes the turn)."""

    def prepare(self, case):
        _warm(self, case)

    def open(self, case):
        turn = case.must("session.prompt", message="[crash 1 once] [hold h] lost", **case.ids("lost"))["turn_id"]
        case.wait_event("runtime_recovery_started", turn_id=turn)


class RecoveryReplay(RecoveryBackoff):
    """Recovery's replacement agent is binding: its `session/load` is held."""

    def open(self, case):
        super().open(case)
        due = case.read()["runtime"]["recovery"]["next_attempt_at"]
        case.wait(lambda: _past(due, 0.4), "recovery's attempt under way")


class Replacement(Window):
    """A prompt needs another process (a model the live one does not offer, or another provider): the new
    one is held in `initialize` while the old one still serves."""

    runtime = ()

    def prepare(self, case):
        (case.workspace / "models.txt").write_text("echo-1")
        case.gate("init")
        _warm(self, case)

    def open(self, case):
        (case.workspace / "models.txt").write_text("echo-1,echo-9")
        case.gate("init", present=False)
        case.in_background("session.prompt", message="[chunks 1] replaced", runtime=dict(self.runtime),
                           **case.ids("replace"))
        self.status_is(case, "reconfiguring", transition="process_replacement")


class FallbackSwitch(FirstBind):
    """Route 1 refused at start; route 2 is binding, held in `initialize`."""

    def open(self, case):
        super().open(case)
        case.wait_event("session.fallback.used")


class IdleRelease(Window):
    """Idle release is stopping the agent, which is slow to exit (its exit gate; TERM after 2 s)."""

    def prepare(self, case):
        _warm(self, case)

    def open(self, case):
        def releasing():
            runtime = case.read()["runtime"]
            return runtime["status"] == "unbound" and runtime.get("process")
        case.wait(releasing, "an idle release in progress")


class RebindAfterRelease(Window):
    """The first prompt after an idle release binds again, held in `session/load`."""

    def prepare(self, case):
        _warm(self, case)
        case.wait(lambda: not case.read()["runtime"].get("process"), "the release done", within=15)

    def open(self, case):
        case.in_background("session.prompt", message="[chunks 1] again", **case.ids("rebind"))
        self.status_is(case, "binding")


class StopInProgress(Window):
    """A stop ladder under way: the agent slow to cancel (cooperative), deaf to cancel (TERM), or deaf to
    TERM as well (KILL after 5 s)."""

    turn = ""

    def prepare(self, case):
        _warm(self, case)
        turn = case.must("session.prompt", message=self.turn, **case.ids("held"))["turn_id"]
        case.wait(lambda: [e for e in case.events(turn_id=turn) if e["type"] in ("agent_message", "permission")],
                  "the held turn under way")

    def open(self, case):
        case.must("session.stop", wait=False)
        case.wait(lambda: case.read()["state"] == "stopping", "stopping")


class RewindRestart(Window):
    """The first prompt after a rewind starts a fresh agent session, held in `initialize`."""

    def prepare(self, case):
        case.gate("init")
        Window.prepare(self, case)
        case.run_turn("first")
        second = case.ids("second")
        case.must("session.prompt", message="second", **second)
        case.wait(lambda: [e for e in case.events(type="done")][1:], "the second turn's end")
        fences = case.read()["fences"]
        case.must("session.rewind", message_id=second["message_id"], idempotency_key=f"r-{case.tag}",
                  expected_epoch=fences["epoch"], expected_generation=fences["generation"],
                  expected_max_sequence=fences["max_sequence"])
        case.gate("init", present=False)

    def open(self, case):
        case.in_background("session.prompt", message="[chunks 1] after the rewind", **case.ids("rewound"))
        self.status_is(case, "binding")


class BootRepair(Window):
    """The daemon was SIGKILLed mid-turn (a permission pending) and has just started again."""

    def prepare(self, case):
        _warm(self, case)
        turn = case.must("session.prompt", message="[permission edit] [hold h] cut", **case.ids("cut"))["turn_id"]
        case.wait(lambda: case.events(turn_id=turn, type="permission"), "the pending permission")

    def open(self, case):
        case.daemon.kill()
        case.daemon.start()


def _past(iso, margin):
    moment = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    return time.time() > moment + margin


class _StopCooperative(StopInProgress):
    turn = "[slow-cancel 3] [permission edit] [hold h] held"


class _StopTerm(StopInProgress):
    turn = "[chunks 1] [hang] hung"


class _StopKill(StopInProgress):
    turn = "[ignore-term] [chunks 1] [hang] stubborn"


class _NotLive(Replacement):
    runtime = (("model", "echo-9"),)


class _ProviderChange(Replacement):
    runtime = (("provider", "gated-init"),)


WINDOWS = (
    FirstBind("first-bind-initialize", agent="gated-init"),
    FirstBind("first-bind-session-new", agent="gated-new"),
    RecoveryBackoff("recovery-backoff", settle_within=1 + 2 + 4 + 5.0),
    RecoveryReplay("recovery-replay", agent="gated-load", settle_within=1 + 2 + 4 + 5.0),
    _NotLive("replacement-option-not-live", agent="growing"),
    _ProviderChange("replacement-provider-change"),
    FallbackSwitch("fallback-route-switch", agent="fallback"),
    IdleRelease("idle-release", agent="gated-exit", daemon="release"),
    RebindAfterRelease("rebind-after-release", agent="gated-load", daemon="release"),
    _StopCooperative("stop-cooperative", settle_within=LADDER + 5.0),
    _StopTerm("stop-term", settle_within=LADDER + 5.0),
    _StopKill("stop-kill", settle_within=LADDER + 5.0),
    RewindRestart("rewind-restart", agent="gated-init"),
    BootRepair("boot-repair", daemon="boot"),
)
