"""The settings table: each scalar setting of config.toml with its default, kind and help, and the check of
one value (durations among them).

Layer 1, beside compozy.config, which reads config.toml and checks every scalar key here; `compozy config
settings`, the page's settings and docs/configuration.md show this table.
"""

import re
from dataclasses import dataclass

from compozy.states import BusyMode, PermissionMode


@dataclass(frozen=True)
class Setting:
    name: str
    default: object
    kind: str  # duration | int | str | bool | choice
    help: str
    choices: tuple = ()
    minimum: int = 0


SETTINGS = (
    Setting("default_agent", "general", "str", "the agent a session gets when its creation names none"),
    Setting("daemon.auth", "token", "choice",
            "token: every TCP request carries the daemon's secret (<home>/auth_token) or the page's login cookie; "
            "none: no authentication, allowed only on loopback and logged at every start (read at start)",
            choices=("token", "none")),
    Setting("daemon.http", "127.0.0.1:2123", "str", "loopback HOST:PORT to serve HTTP on (read at start; --http wins)"),
    Setting("daemon.max_streams", 512, "int",
            "event streams open at once; one more is refused with stream_limit_reached (503, Retry-After)",
            minimum=1),
    Setting("permissions.mode", "approve-all", "choice",
            "approve-all allows every request once; approve-reads allows reads and holds the rest "
            "for POST .../approve; deny-all rejects every request",
            choices=tuple(m.value for m in PermissionMode)),
    Setting("permissions.timeout", "5m", "duration",
            "how long a pending permission request waits for an answer before reject-once"),
    Setting("session.busy_input.default_mode", "steer", "choice",
            "what a prompt sent while a turn runs does when it names no mode",
            choices=tuple(m.value for m in BusyMode)),
    Setting("session.busy_input.queue_cap", 10, "int",
            "how many prompts the durable input queue holds; a full queue refuses new entries", minimum=1),
    Setting("session.supervision.quiet_after", "30m", "duration",
            "silence in a turn before one session.supervision_warning; \"0\" disables the watchdog"),
    Setting("session.supervision.stop_grace", "10m", "duration",
            "further silence before the stop ladder runs with cause inactivity; \"0\" keeps only the warning"),
    Setting("session.supervision.idle_release_after", "30m", "duration",
            "idle time before the agent process of a session without work is released; \"0\" disables"),
    Setting("session.supervision.prompt_deadline", "0", "duration",
            "an explicit budget for one prompt turn; \"0\" means none"),
    Setting("session.supervision.progress_notify_interval", "10m", "duration",
            "how often a running turn records a runtime_progress event; \"0\" disables"),
    Setting("session.supervision.activity_heartbeat_interval", "30s", "duration",
            "how often a waiting session's activity.last_activity_at moves (metadata only); \"0\" disables"),
    Setting("session.supervision.first_output_after", "20s", "duration",
            "a prompt's wait for its first output before a no_output runtime_warning (doubling); \"0\" disables"),
    Setting("session.stop.cooperative_grace", "10s", "duration",
            "how long the stop ladder waits after asking the agent to cancel and closing stdin before signals"),
    Setting("session.derive.max_replay_bytes", 131072, "int",
            "hard bound on the carried transcript of a bounded replay", minimum=4096),
    Setting("session.derive.max_message_bytes", 16384, "int",
            "cap on each message body inside a bounded replay", minimum=1024),
    Setting("session.messaging.reply_watch_ttl", "24h", "duration",
            "how long a notify_on_complete watch keeps a sender alive"),
    Setting("session.tools.max_concurrent_calls", 4, "int",
            "native tool calls one session's agent may have in flight (running, held for approval or waiting "
            "on a turn); one more is refused with tool_call_limit_reached", minimum=1),
    Setting("storage.max_bytes", 0, "int",
            "a disk budget for the home: at 90% of it the daemon raises the storage_budget attention item (it never "
            "deletes anything for it); 0: no budget"),
    Setting("retention.interval", "1h", "duration", "how often the retention policy and the disk budget are checked"),
    Setting("retention.compact_archived_after_days", 30, "int",
            "compact sessions archived this many days ago (fold chunk runs, checkpoint, VACUUM); 0: never"),
    Setting("retention.delete_archived_after_days", 0, "int",
            "delete sessions archived this many days ago (recorded in the daemon's log); 0: never"),
    Setting("retention.logs_max_bytes", 50 * 1024 * 1024, "int",
            "rotate logs/compozy.log past this size; rotated logs beyond it in total are removed, oldest first"),
    Setting("retention.logs_max_age_days", 30, "int", "remove rotated logs older than this; 0: by size only"),
    Setting("retention.crash_bundles_max_bytes", 100 * 1024 * 1024, "int",
            "remove the oldest crash bundles while they hold more than this"),
    Setting("retention.crash_bundles_max_age_days", 30, "int", "remove crash bundles older than this; 0: by size only"),
    Setting("search.thoughts", False, "bool",
            "index agents' thoughts for search too (off: only prompts, answers, tool call and permission titles)"),
    Setting("checkpoints.enabled", True, "bool",
            "record the workspace's files (a shadow git repository under the home) when each turn starts and ends"),
    Setting("checkpoints.max_file_bytes", 10 << 20, "int",
            "files larger than this are left out of checkpoints (and named in the checkpoint event)", minimum=1),
    Setting("checkpoints.max_files", 100_000, "int",
            "a checkpoint that would read more files than this is not taken (the event says why)", minimum=1),
    Setting("checkpoints.timeout", "30s", "duration",
            "the bound of one git call of a checkpoint; the turn waits at most this long for its start checkpoint"),
    Setting("checkpoints.keep_last", 0, "int",
            "checkpoints kept per session by `compozy gc` (the newest); 0 keeps every one"),
    Setting("checkpoints.keep_for", "0", "duration",
            "checkpoints older than this are dropped by `compozy gc` (e.g. \"720h\"); \"0\" keeps them"),
    Setting("roles.auto_title.enabled", False, "bool", "run one bounded title pass after the first answer"),
    Setting("roles.auto_title.agent", "general", "str", "the agent that writes titles"),
    Setting("roles.auto_title.provider", "", "str", "the title pass's provider (\"\": the agent's)"),
    Setting("roles.auto_title.model", "", "str", "the title pass's model (\"\": the agent's)"),
    Setting("roles.auto_title.reasoning_effort", "", "str", "the title pass's reasoning effort (\"\": the agent's)"),
    Setting("roles.auto_title.timeout", "2m", "duration", "how long one title pass may take before it fails"),
)
SETTINGS_BY_NAME = {s.name: s for s in SETTINGS}

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def parse_duration(text):
    """"500ms", "10s", "30m", "24h" or "0" -> seconds."""
    if text == "0":
        return 0.0
    match = _DURATION.match(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f'expected a duration such as "500ms", "10s", "30m", "24h" or "0", got {text!r}')
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def check_setting(name, raw, problems):
    """Add to problems why a scalar key of config.toml is unknown or its value wrong."""
    setting = SETTINGS_BY_NAME.get(name)
    if setting is None:
        problems.add(name, "unknown key")
        return
    try:
        _check_value(setting, raw)
    except ValueError as exc:
        problems.add(name, str(exc))


def _check_value(setting, raw):
    if setting.kind == "duration":
        parse_duration(raw)
    elif setting.kind == "int":
        if not isinstance(raw, int) or isinstance(raw, bool) or raw < setting.minimum:
            raise ValueError(f"expected a whole number >= {setting.minimum}, got {raw!r}")
    elif setting.kind == "bool":
        if not isinstance(raw, bool):
            raise ValueError(f"expected true or false, got {raw!r}")
    elif setting.kind == "choice":
        if raw not in setting.choices:
            raise ValueError(f"expected one of {', '.join(setting.choices)}, got {raw!r}")
    elif not isinstance(raw, str):
        raise ValueError(f"expected a string, got {raw!r}")

