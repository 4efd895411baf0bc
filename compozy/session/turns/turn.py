"""A prompt turn: what one prompt is doing, from its admission to its one terminal event.

Layer 4. The runner (turns/runner.py) moves a turn through its phases (the TURN table in
compozy.states); request threads read it to decide busy input, the supervision sweep reads its
timers, and the agent's reader thread marks its progress.
"""

import threading

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

    def change_phase(self, new):
        """The one way a turn's phase changes: an edge of the turn table."""
        with self._phase_lock:
            self.phase = TURN.check(self.phase, new)

    def begin_cancelling(self):
        """prompting -> cancelling, unless the turn already left prompting (it ended, or is recovering): the
        check and the change are one step, so a turn the runner is ending is never moved. True when moved."""
        with self._phase_lock:
            if self.phase != TurnPhase.PROMPTING:
                return False
            self.phase = TURN.check(self.phase, TurnPhase.CANCELLING)
            return True

    @property
    def accepts_output(self):
        return self.phase in (TurnPhase.PROMPTING, TurnPhase.CANCELLING, TurnPhase.RECOVERING)

    @property
    def prompting(self):
        return self.phase == TurnPhase.PROMPTING

    @property
    def waiting_on_agent(self):
        """Silence accrues only while the agent owes us work (not while we owe it an answer)."""
        return self.prompting and self.pending_permissions == 0 and self.tool_calls == 0

    def silence(self, now):
        """How long the agent has owed this turn work with no progress and no other work signal."""
        return now - max(self.last_progress, self.last_work) if self.waiting_on_agent else 0.0

    def progress(self):
        self.last_progress = self.clock.monotonic()

    def prompt_sent(self):
        """The agent owes this prompt its first output from now (no_output warnings count from here)."""
        self.prompt_sent_at = self.clock.monotonic()
        self.output_seen = False
        self.no_output_warnings = 0

    def request_cancel(self, reason, grace):
        if self.cancel_reason is None:
            self.cancel_reason = reason
            self.cancel_deadline = self.clock.monotonic() + grace
        self.wake.set()
