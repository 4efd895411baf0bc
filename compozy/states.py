"""Wire vocabulary: lifecycle states and their legal transitions, runtime statuses, reasons, kinds.

Layer 0: stdlib only. Values are spelled exactly as the API and the seed spell them.
"""

from enum import StrEnum

from compozy.machine import IllegalTransition, Machine  # noqa: F401 (IllegalTransition: raised through states)


class SessionState(StrEnum):
    STARTING = "starting"
    ACTIVE = "active"
    STOPPING = "stopping"
    STOPPED = "stopped"


LIVE_STATES = (SessionState.STARTING, SessionState.ACTIVE, SessionState.STOPPING)

# Every lifecycle edge the manager may take. stopped -> starting is the restore path of a
# normal prompt; starting -> stopped is a failed start. Exhausted recovery stops through stopping.
TRANSITIONS = {
    (SessionState.ACTIVE, SessionState.STOPPING),
    (SessionState.STOPPING, SessionState.STOPPED),
    (SessionState.STOPPED, SessionState.STARTING),
    (SessionState.STARTING, SessionState.ACTIVE),
    (SessionState.STARTING, SessionState.STOPPING),
    (SessionState.STARTING, SessionState.STOPPED),
}
# Boot repair: a live state found after an unclean exit is stopped, with the stop reason its
# evidence supports (the repair module), without passing through stopping; an active one whose
# recorded agent cannot be proven gone is left stopping, unverified, for a stop to retry.
SESSION = Machine("", SessionState, TRANSITIONS, repairs={
    (SessionState.ACTIVE, SessionState.STOPPING),  # a recorded agent whose exit cannot be proven
    (SessionState.STARTING, SessionState.STOPPED),
    (SessionState.ACTIVE, SessionState.STOPPED),
    (SessionState.STOPPING, SessionState.STOPPED),
})



class RuntimeStatus(StrEnum):
    UNBOUND = "unbound"
    BINDING = "binding"
    READY = "ready"
    RECONFIGURING = "reconfiguring"
    RECOVERING = "recovering"


RUNTIME = Machine("runtime", RuntimeStatus, {
    (RuntimeStatus.UNBOUND, RuntimeStatus.BINDING),  # the first process of a bind starts
    (RuntimeStatus.BINDING, RuntimeStatus.READY),  # accepted
    (RuntimeStatus.BINDING, RuntimeStatus.UNBOUND),  # every route refused, or stopped while binding
    (RuntimeStatus.READY, RuntimeStatus.RECONFIGURING),  # live options change, or a replacement starts
    (RuntimeStatus.RECONFIGURING, RuntimeStatus.READY),  # applied, refused and rolled back, or replaced
    (RuntimeStatus.RECONFIGURING, RuntimeStatus.UNBOUND),  # a dead or stale process retired
    (RuntimeStatus.READY, RuntimeStatus.UNBOUND),  # released, retired, lost outside a turn, or stopped
    (RuntimeStatus.READY, RuntimeStatus.RECOVERING),  # lost mid-turn
    (RuntimeStatus.RECOVERING, RuntimeStatus.READY),  # a replacement took the turn over
    (RuntimeStatus.RECOVERING, RuntimeStatus.UNBOUND),  # exhausted, or the turn cancelled or stopped meanwhile
}, repairs={(status, RuntimeStatus.UNBOUND) for status in RuntimeStatus if status != RuntimeStatus.UNBOUND})


class TurnPhase(StrEnum):
    """Where a prompt turn is (in memory only; a turn's durable trace is its events)."""

    BINDING = "binding"
    PROMPTING = "prompting"
    CANCELLING = "cancelling"
    RECOVERING = "recovering"
    DONE = "done"


TURN = Machine("turn", TurnPhase, {
    (TurnPhase.BINDING, TurnPhase.PROMPTING),  # bound, user_message recorded, the prompt sent
    (TurnPhase.BINDING, TurnPhase.DONE),  # refused bind, or cancelled before the prompt went out
    (TurnPhase.PROMPTING, TurnPhase.CANCELLING),  # the agent was asked to cancel
    (TurnPhase.PROMPTING, TurnPhase.RECOVERING),  # the agent died mid-turn
    (TurnPhase.PROMPTING, TurnPhase.DONE),  # answered, or failed
    (TurnPhase.CANCELLING, TurnPhase.DONE),  # answered cancelled, or forced through the ladder
    (TurnPhase.RECOVERING, TurnPhase.PROMPTING),  # a replacement agent took the prompt
    (TurnPhase.RECOVERING, TurnPhase.DONE),  # exhausted, or cancelled (or stopped) during recovery
})


class RuntimeTransition(StrEnum):
    NONE = ""
    INITIAL_BIND = "initial_bind"
    LIVE_CONFIGURATION = "live_configuration"
    PROCESS_REPLACEMENT = "process_replacement"
    AUTOMATIC_RECOVERY = "automatic_recovery"


class SessionType(StrEnum):
    USER = "user"
    SYSTEM = "system"
    COORDINATOR = "coordinator"
    SPAWNED = "spawned"


RETIRED_SPAWN_ROLES = ("memory-extractor", "checkpoint-summary")


class LineageKind(StrEnum):
    ROOT = ""
    PROVENANCE = "provenance"
    RECOVERY = "recovery"
    SPAWN = "spawn"
    CONTINUE = "continue"
    FORK = "fork"


CREATE_LINEAGE_KINDS = (LineageKind.PROVENANCE, LineageKind.RECOVERY)
TOP_LEVEL_KINDS = (LineageKind.CONTINUE, LineageKind.FORK)  # name a parent as provenance, yet are no child


class StopReason(StrEnum):
    COMPLETED = "completed"
    OWNER_RELEASED = "owner_released"
    USER_CANCELED = "user_canceled"
    TIMEOUT = "timeout"
    ERROR = "error"
    AGENT_CRASHED = "agent_crashed"
    SHUTDOWN = "shutdown"


class StopCause(StrEnum):
    """Why a stop was requested; StopOutcome.stop_cause carries it."""

    USER = "user"
    SHUTDOWN = "shutdown"
    INACTIVITY = "inactivity"
    PROMPT_DEADLINE = "prompt_deadline"
    PROCESS_EXIT = "process_exit"
    REMOVAL = "removal"
    ARCHIVE = "archive"
    TTL_EXPIRED = "ttl_expired"  # a spawned child outlived its TTL
    PARENT_STOPPED = "parent_stopped"  # a spawned child's parent stopped


STOP_REASON_BY_CAUSE = {
    StopCause.USER: StopReason.USER_CANCELED,
    StopCause.SHUTDOWN: StopReason.SHUTDOWN,
    StopCause.INACTIVITY: StopReason.TIMEOUT,
    StopCause.PROMPT_DEADLINE: StopReason.TIMEOUT,
    StopCause.PROCESS_EXIT: StopReason.AGENT_CRASHED,
    StopCause.REMOVAL: StopReason.USER_CANCELED,
    StopCause.ARCHIVE: StopReason.USER_CANCELED,
    StopCause.TTL_EXPIRED: StopReason.TIMEOUT,
    StopCause.PARENT_STOPPED: StopReason.OWNER_RELEASED,
}


class StopAnswer(StrEnum):
    """Which answer a stop request gets; the operation table maps each to its HTTP status."""

    ACCEPTED = "accepted"  # wait false: the ladder runs on after the answer
    OUTCOME = "outcome"    # wait true, or omitted on a stopped session: the outcome object
    STOPPED = "stopped"    # wait false on a stopped session: the session itself
    LEGACY = "legacy"      # wait omitted: the deprecated synchronous form, answered without a body


class FailureKind(StrEnum):
    STARTUP_FAILURE = "startup_failure"
    HANDSHAKE_FAILURE = "handshake_failure"
    LOAD_SESSION_FAILURE = "load_session_failure"
    PROTOCOL_FAILURE = "protocol_failure"
    PROCESS_EXIT = "process_exit"
    TIMEOUT = "timeout"
    UNKNOWN_FAILURE = "unknown_failure"
    PROVIDER_AUTH_FAILURE = "provider_auth_failure"


class HealthState(StrEnum):
    """The health record's `state`, also the compact status's `state`."""

    IDLE = "idle"
    PROMPTING = "prompting"
    STOPPED = "stopped"


class WaitingOn(StrEnum):
    """activity.waiting.on: what a live session waits on, in the order reads name them when several hold."""

    PERMISSION = "permission"
    REPLY = "reply"
    CHILD = "child"


class BusyMode(StrEnum):
    QUEUE = "queue"
    STEER = "steer"
    INTERRUPT = "interrupt"


class Disposition(StrEnum):
    STARTED = "started"
    QUEUED = "queued"
    STEERED = "steered"
    INTERRUPTED = "interrupted"


class SteerDelivery(StrEnum):
    INJECTED = "injected"
    PENDING_INJECTION = "pending_injection"
    INTERRUPT_FALLBACK = "interrupt_fallback"


class QueueStatus(StrEnum):
    QUEUED = "queued"
    DISPATCHING = "dispatching"
    SENT = "sent"
    FAILED = "failed"
    CANCELED = "canceled"


QUEUE = Machine("queue", QueueStatus, {
    (QueueStatus.QUEUED, QueueStatus.DISPATCHING),  # it becomes the current turn
    (QueueStatus.DISPATCHING, QueueStatus.SENT),  # bound and prompted
    (QueueStatus.DISPATCHING, QueueStatus.FAILED),  # its bind was refused
    (QueueStatus.QUEUED, QueueStatus.SENT),  # a steer injected into the running turn
    (QueueStatus.SENT, QueueStatus.FAILED),  # the agent refused that steer
    (QueueStatus.QUEUED, QueueStatus.CANCELED),  # canceled, or promoted to steer
}, repairs={
    (QueueStatus.DISPATCHING, QueueStatus.SENT),  # its user_message is in the log: it ran
    (QueueStatus.DISPATCHING, QueueStatus.QUEUED),  # it never started: it runs again
})


class AdmissionState(StrEnum):
    """A prompt admission (or input mutation receipt) in the catalog."""

    BINDING = "binding"  # a started prompt whose runtime is binding: a retry waits for it
    STARTED = "started"
    QUEUED = "queued"  # queued, steered or interrupted: the queue entry carries the rest
    COMPLETED = "completed"  # an edit receipt
    WITHDRAWN = "withdrawn"  # never stored: the row is deleted so a retry runs again


ADMISSION = Machine("admission", AdmissionState, {
    (AdmissionState.BINDING, AdmissionState.STARTED),  # bound and prompted: the result is durable
    (AdmissionState.BINDING, AdmissionState.WITHDRAWN),  # the bind was refused: nothing persisted
}, repairs={
    (AdmissionState.BINDING, AdmissionState.STARTED),  # its user_message is in the log: it ran, a retry replays it
    (AdmissionState.BINDING, AdmissionState.WITHDRAWN),  # it never ran: nothing persists, a retry runs it
})


class RewindState(StrEnum):
    """A rewind receipt in the catalog: written pending before anything is cut, completed after."""

    PENDING = "pending"
    COMPLETED = "completed"


REWIND = Machine("rewind", RewindState, {
    (RewindState.PENDING, RewindState.COMPLETED),  # archived, fences bumped, the ACP context dropped
}, repairs={(RewindState.PENDING, RewindState.COMPLETED)})  # an unclean exit mid-rewind: boot finishes it


class DerivationState(StrEnum):
    """A derivation (continue or fork) in the catalog: written creating before its session exists."""

    CREATING = "creating"
    CREATED = "created"
    WITHDRAWN = "withdrawn"  # never stored: the row is deleted so a retry runs again


DERIVATION = Machine("derivation", DerivationState, {
    (DerivationState.CREATING, DerivationState.CREATED),  # the new session and its carried context exist
    (DerivationState.CREATING, DerivationState.WITHDRAWN),  # creating the session failed: nothing persists
}, repairs={
    (DerivationState.CREATING, DerivationState.CREATED),  # its session was written whole: the outcome stands
    (DerivationState.CREATING, DerivationState.WITHDRAWN),  # it was not: the leftovers go, a retry runs again
})


class FirstPrompt(StrEnum):
    """A derived session's first prompt: the context waits, or the request's message was admitted."""

    STAGED = "staged"
    ADMITTED = "admitted"


FIRST_PROMPT = Machine("first_prompt", FirstPrompt, {
    (FirstPrompt.STAGED, FirstPrompt.ADMITTED),  # the message went through the ordinary prompt admission
})


class NativeState(StrEnum):
    """A fork seeded by the agent's own clone: loaded at the new session's first bind, or not."""

    PENDING = "pending"
    LOADED = "loaded"
    FAILED = "failed"


NATIVE = Machine("native", NativeState, {
    (NativeState.PENDING, NativeState.LOADED),  # the new session's own process loaded the clone
    (NativeState.PENDING, NativeState.FAILED),  # it could not (another provider, or the load failed): replay
})


class DeriveAnswer(StrEnum):
    """Which answer a continue or fork gets; the operation table maps each to its HTTP status."""

    CREATED = "created"
    REPLAYED = "replayed"


class InteractionState(StrEnum):
    """A permission request held for a person, as its catalog row says (inspect's pending_interactions)."""

    PENDING = "pending"
    RESOLVED = "resolved"  # a person answered it
    TIMED_OUT = "timed_out"  # nobody answered within permissions.timeout
    CANCELED = "canceled"  # its turn was cancelled: ACP answers every pending request cancelled
    ORPHANED = "orphaned"  # the daemon exited with it pending: no agent waits for the answer any more


INTERACTION = Machine("interaction", InteractionState, {
    (InteractionState.PENDING, InteractionState.RESOLVED),
    (InteractionState.PENDING, InteractionState.TIMED_OUT),
    (InteractionState.PENDING, InteractionState.CANCELED),
}, repairs={(InteractionState.PENDING, InteractionState.ORPHANED)})


class TitleState(StrEnum):
    """A session's `auto_title.state` (record.extra): the title pass, or the agent's own title."""

    RUNNING = "running"  # a pass was started (it is born running)
    TITLED = "titled"  # the pass named the session, or the agent did (born titled when no pass ran)
    FAILED = "failed"  # the pass ended without a usable title: the session stays unnamed
    SUPERSEDED = "superseded"  # a name came while the pass ran: the name stays


TITLE = Machine("title", TitleState, {
    (TitleState.RUNNING, TitleState.TITLED),  # the pass's title, or the agent's own while the pass ran
    (TitleState.RUNNING, TitleState.FAILED),
    (TitleState.RUNNING, TitleState.SUPERSEDED),  # renamed while the pass ran
    (TitleState.TITLED, TitleState.SUPERSEDED),  # the agent titled the session while the pass ran
    (TitleState.FAILED, TitleState.TITLED),  # the agent's own title after a failed pass
    (TitleState.SUPERSEDED, TitleState.TITLED),  # the agent's own title after a superseded pass
})


MACHINES = (SESSION, RUNTIME, TURN, QUEUE, ADMISSION, REWIND, DERIVATION, FIRST_PROMPT, NATIVE, INTERACTION, TITLE)


class MarkerKind(StrEnum):
    PROMPT_CANCEL = "prompt_cancel"
    PROMPT_TIMEOUT = "prompt_timeout"
    PROMPT_INTERRUPTED = "prompt_interrupted"
    PROMPT_STEERED = "prompt_steered"
    PROMPT_QUEUED = "prompt_queued"
    PROMPT_ACCEPTED = "prompt_accepted"
    PROMPT_DROPPED = "prompt_dropped"
    PROMPT_EDITED = "prompt_edited"
    PROVIDER_FAILURE = "provider_failure"


class PermissionMode(StrEnum):
    APPROVE_ALL = "approve-all"
    APPROVE_READS = "approve-reads"
    DENY_ALL = "deny-all"


class PermissionDecision(StrEnum):
    ALLOW_ONCE = "allow-once"
    ALLOW_ALWAYS = "allow-always"
    REJECT_ONCE = "reject-once"
    REJECT_ALWAYS = "reject-always"


# What an answered permission request says besides a decision above: an option of a kind outside
# ACP's four was chosen, or it was answered without an option.
PERMISSION_SELECTED, PERMISSION_CANCELLED = "selected", "cancelled"


# The kinds of the attention inbox's items (compozy.session.lifecycle.inbox).
ATTENTION_KINDS = ("permission", "supervision_stale", "supervision_unknown", "runtime_stuck", "stop_unverified",
                   "agent_failure", "recovery_exhausted", "provider_auth_failure", "budget_warning", "storage_budget",
                   "turn_finished", "question", "node_unreachable")


class Attention(StrEnum):
    STOP_VERIFICATION_FAILED = "stop_verification_failed"
    SUPERVISION_UNKNOWN = "supervision_source_unknown"
    SUPERVISION_STALE = "supervision_source_stale"
    RUNTIME_STUCK = "runtime_stuck"  # a transitional runtime status past its bound (supervision.stuck says how long)
