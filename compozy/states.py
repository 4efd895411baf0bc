"""Wire vocabulary: lifecycle states and their legal transitions, runtime statuses, reasons, kinds.

Layer 0: stdlib only. Values are spelled exactly as the API and the seed spell them.
"""

from enum import StrEnum


class SessionState(StrEnum):
    STARTING = "starting"
    ACTIVE = "active"
    STOPPING = "stopping"
    STOPPED = "stopped"


LIVE_STATES = (SessionState.STARTING, SessionState.ACTIVE, SessionState.STOPPING)
TERMINAL_STATES = (SessionState.STOPPED,)

# Every lifecycle edge the manager may take. stopped -> starting is the restore path of a
# normal prompt; starting -> stopped is a failed start.
TRANSITIONS = {
    (SessionState.ACTIVE, SessionState.STOPPING),
    (SessionState.STOPPING, SessionState.STOPPED),
    (SessionState.STOPPED, SessionState.STARTING),
    (SessionState.STARTING, SessionState.ACTIVE),
    (SessionState.STARTING, SessionState.STOPPING),
    (SessionState.STARTING, SessionState.STOPPED),
}


def assert_transition(current, new):
    """An illegal lifecycle edge is a bug, never a user error."""
    if current != new and (SessionState(current), SessionState(new)) not in TRANSITIONS:
        raise AssertionError(f"illegal session transition {current} -> {new}")


class RuntimeStatus(StrEnum):
    UNBOUND = "unbound"
    BINDING = "binding"
    READY = "ready"
    RECONFIGURING = "reconfiguring"
    RECOVERING = "recovering"
    FAILED = "failed"


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


class StopReason(StrEnum):
    COMPLETED = "completed"
    OWNER_RELEASED = "owner_released"
    USER_CANCELED = "user_canceled"
    TIMEOUT = "timeout"
    ERROR = "error"
    AGENT_CRASHED = "agent_crashed"
    HOOK_STOPPED = "hook_stopped"
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


STOP_REASON_BY_CAUSE = {
    StopCause.USER: StopReason.USER_CANCELED,
    StopCause.SHUTDOWN: StopReason.SHUTDOWN,
    StopCause.INACTIVITY: StopReason.TIMEOUT,
    StopCause.PROMPT_DEADLINE: StopReason.TIMEOUT,
    StopCause.PROCESS_EXIT: StopReason.AGENT_CRASHED,
    StopCause.REMOVAL: StopReason.USER_CANCELED,
    StopCause.ARCHIVE: StopReason.USER_CANCELED,
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
    PROMPT_FAILURE = "prompt_failure"
    CANCELLATION = "cancellation"
    PERMISSION_FAILURE = "permission_failure"
    PROCESS_EXIT = "process_exit"
    TRANSPORT_FAILURE = "transport_failure"
    TIMEOUT = "timeout"
    UNKNOWN_FAILURE = "unknown_failure"
    PROVIDER_AUTH_FAILURE = "provider_auth_failure"


class HealthState(StrEnum):
    """The health record's `state`, also the compact status's `state`."""

    IDLE = "idle"
    PROMPTING = "prompting"
    STOPPED = "stopped"
    DETACHED = "detached"


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


class MarkerKind(StrEnum):
    PROMPT_CANCEL = "prompt_cancel"
    PROMPT_TIMEOUT = "prompt_timeout"
    PROMPT_INTERRUPTED = "prompt_interrupted"
    PROMPT_STEERED = "prompt_steered"
    PROMPT_QUEUED = "prompt_queued"
    PROMPT_ACCEPTED = "prompt_accepted"
    PROMPT_DROPPED = "prompt_dropped"
    PROMPT_EDITED = "prompt_edited"
    SESSION_RECOVERED = "session_recovered"
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


class Attention(StrEnum):
    STOP_VERIFICATION_FAILED = "stop_verification_failed"
    SUPERVISION_UNKNOWN = "supervision_source_unknown"
