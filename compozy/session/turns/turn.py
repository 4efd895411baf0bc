"""A prompt turn: what one prompt is doing, from its admission to its one terminal event.

Layer 4. The runner (turns/runner.py) moves a turn through its phases (the TURN table in
compozy.states); request threads read it to decide busy input, the supervision sweep reads its
timers, and the agent's reader thread marks its progress.
"""

import threading
from typing import Any

from compozy.clock import iso_from_epoch
from compozy.states import TURN, TurnPhase


class Turn:
    """One prompt turn, from admission to its terminal event."""

    def __init__(self, turn_id, message, message_id, idempotency_key, snapshot, mode=None, *, clock,
                 entry_id=None, admission_id=None, expected_turn_id=None, budget_override=None):
        self.clock = clock
        self.id, self.message, self.message_id = turn_id, message, message_id
        self.idempotency_key, self.snapshot, self.mode = idempotency_key, snapshot or {}, mode
        self.entry_id, self.admission_id, self.expected_turn_id = entry_id, admission_id, expected_turn_id
        self.result = None  # a started prompt's admission answer, recorded once the turn started
        self.budget_override = budget_override  # the spent budget a person went past (JSON text), if any
        self.phase = TurnPhase.BINDING
        self._phase_lock = threading.Lock()  # a cancel reads and moves the phase while the runner ends the turn
        self.bound = threading.Event()
        self.bind_error = None
        self.wake = threading.Event()
        self.ended = threading.Event()
        self.cancel_reason = None
        self.cancel_deadline = None
        self.escalate = False
        self.pending = None
        self.recovery = None
        self.injections = []
        self.pending_permissions = 0
        self.tool_calls = 0  # native tool calls of this session the daemon is serving
        self.open_tools = {}  # tool_call_id -> when it was last heard of (monotonic)
        self.opened = False  # its user_message is stored: it ends with exactly one done or error
        self.checkpointed = False  # its start checkpoint was taken (or tried): it ends with an end checkpoint
        self.finished = False
        self.started_at = self.last_progress = self.last_progress_event = clock.monotonic()
        self.began_at = iso_from_epoch(clock.wall())  # started_at as reads write it (activity.waiting.since)
        self.last_work = self.started_at  # the last sweep that saw another work signal (a verified tool)
        self.deadline_hit = False
        self.quiet_warning = None
        self.recovery_due = None
        self.recovery_ready = False
        self.prompt_sent_at = None  # when the prompt last went to the agent (monotonic)
        self.output_seen = False  # the agent said something since then
        self.no_output_warnings = 0
        self.last_usage = None  # the turn's last usage report (usage_update)
        self.cost_before = None  # the ACP session's cumulative cost when the turn began (usage.cost_before)

    def change_phase(self, new: TurnPhase) -> None:
        """The one way a turn's phase changes: an edge of the turn table."""
        with self._phase_lock:
            self.phase = TURN.check(self.phase, new)

    def begin_cancelling(self) -> bool:
        """prompting -> cancelling, unless the turn already left prompting (it ended, or is recovering): the
        check and the change are one step, so a turn the runner is ending is never moved. True when moved."""
        with self._phase_lock:
            if self.phase != TurnPhase.PROMPTING:
                return False
            self.phase = TURN.check(self.phase, TurnPhase.CANCELLING)
            return True

    @property
    def accepts_output(self) -> bool:
        return self.phase in (TurnPhase.PROMPTING, TurnPhase.CANCELLING, TurnPhase.RECOVERING)

    @property
    def prompting(self) -> bool:
        return self.phase == TurnPhase.PROMPTING

    @property
    def waiting_on_agent(self) -> bool:
        """Silence accrues only while the agent owes us work (not while we owe it an answer)."""
        return self.prompting and self.pending_permissions == 0 and self.tool_calls == 0

    def silence(self, now: float) -> float:
        """How long the agent has owed this turn work with no progress and no other work signal."""
        return now - max(self.last_progress, self.last_work) if self.waiting_on_agent else 0.0

    def progress(self) -> None:
        self.last_progress = self.clock.monotonic()

    def prompt_sent(self, cost_before: dict | None = None) -> None:
        """The agent owes this prompt its first output from now (no_output warnings count from here);
        cost_before: the ACP session's cumulative cost, kept from the turn's first send (its share counts
        from there)."""
        if self.prompt_sent_at is None:
            self.cost_before = cost_before
        self.prompt_sent_at = self.clock.monotonic()
        self.output_seen = False
        self.no_output_warnings = 0

    def request_cancel(self, reason: str, grace: float) -> None:
        if self.cancel_reason is None:
            self.cancel_reason = reason
            self.cancel_deadline = self.clock.monotonic() + grace
        self.wake.set()

    # -- every other change of a turn, one method each (tests/unit/test_owners.py: nothing outside writes one) --

    def admitted(self, result: dict) -> None:
        """A started prompt's admission answer, recorded once the turn started."""
        self.result = result

    def recorded_as(self, admission_id: str) -> None:
        """The catalog's admission row of this turn (a prompt that runs now)."""
        self.admission_id = admission_id

    def refused(self, error: Exception) -> None:
        """Its bind was refused (or it broke before it started): error is what the prompt answers."""
        self.bind_error = error

    def opened_in_log(self) -> None:
        """Its user_message is stored: it ends with exactly one done or error from now."""
        self.opened = True

    def mark_checkpointed(self) -> None:
        """Its start checkpoint was taken (or tried): it ends with an end checkpoint."""
        self.checkpointed = True

    def mark_bound(self) -> None:
        self.bound.set()

    def mark_finished(self) -> bool:
        """True the first time only: the caller stores the turn's one terminal event."""
        first, self.finished = not self.finished, True
        return first

    def end(self) -> None:
        """The worker is done with it: whoever waits on its bind or its end goes on."""
        self.bound.set()
        self.ended.set()

    def awaiting(self, pending: Any) -> None:
        """The agent's answer to come (compozy.acp.driver's pending call)."""
        self.pending = pending

    def wake_up(self) -> None:
        self.wake.set()

    def clear_wake(self) -> None:
        self.wake.clear()

    def nap(self, seconds: float) -> None:
        """Wait for a wake (or seconds), then take it."""
        self.wake.wait(seconds)
        self.wake.clear()

    def inject(self, steer: dict) -> None:
        """A steer for the running turn: the runner delivers it between the agent's outputs."""
        self.injections.append(steer)
        self.wake.set()

    def next_injection(self) -> dict | None:
        return self.injections.pop(0) if self.injections else None

    def heard_output(self, answers: bool = True) -> None:
        """The agent said something (answers: something other than of itself): no longer waiting for its first word."""
        self.output_seen = self.output_seen or answers

    def usage_reported(self, usage: dict) -> None:
        self.last_usage = usage

    def track_tool(self, kind: str, content: dict) -> None:
        """A tool call without a result is a running tool (a work signal while verified: see
        compozy.session.lifecycle.sources); each update of it is fresh evidence."""
        tool_id = content.get("tool_call_id")
        if kind == "tool_call" and tool_id and (not content.get("update") or tool_id in self.open_tools):
            self.open_tools[tool_id] = self.clock.monotonic()
        elif kind == "tool_result":
            self.open_tools.pop(tool_id, None)

    def tool_call_began(self) -> None:
        self.tool_calls += 1

    def tool_call_ended(self) -> None:
        self.tool_calls -= 1
        self.progress()

    def permission_held(self) -> None:
        self.pending_permissions += 1

    def permission_settled(self) -> None:
        """A person's wait ended: it never counts as agent silence."""
        self.pending_permissions = max(0, self.pending_permissions - 1)
        self.progress()

    # -- the supervision sweep's timers --

    def escalate_cancel(self) -> None:
        """The agent ignored the cancel for the whole grace: the runner forces it."""
        self.escalate = True
        self.wake.set()

    def worked(self, now: float) -> None:
        """Another work signal (a verified running tool, a reply that can still come, a busy child)."""
        self.last_work = now

    def deadline_reached(self) -> None:
        self.deadline_hit = True

    def progress_reported(self, now: float) -> None:
        self.last_progress_event = now

    def warned_no_output(self) -> None:
        self.no_output_warnings += 1

    def quiet(self, warning: dict | None) -> None:
        """The watchdog's warning while the agent is silent (None: it spoke again)."""
        self.quiet_warning = warning

    # -- recovery of a lost agent --

    def recovery_state(self, started_at: str, max_attempts: int) -> dict:
        """The recovery record of this turn, made at its first loss."""
        if self.recovery is None:
            self.recovery = {"attempt": 0, "max_attempts": max_attempts, "started_at": started_at, "generation": 0}
        return self.recovery

    def await_recovery(self, due: float) -> None:
        """The next attempt is due at `due` (monotonic): the sweep fires it."""
        self.recovery_ready, self.recovery_due = False, due

    def recovery_fired(self) -> None:
        self.recovery_ready = True
        self.wake.set()

    def recovery_waited(self) -> None:
        self.recovery_due = None
