"""Settings: the SETTINGS table, config.toml loading, and validation that names file, key and problem.

Layer 1: imports only layer 0. Precedence: built-in defaults < config.toml.
"""

import errno
import os
import re
import stat
import tomllib
from dataclasses import dataclass, field

from compozy.config_entries import load_budgets, load_notifiers
from compozy.config_problems import ConfigError, Problems, as_list, named_tables
from compozy.errors import CompozyError
from compozy.fleet.settings import FleetSettings, load_fleet
from compozy.launch_aliases import parse_launch_aliases
from compozy.location import self_command
from compozy.states import ATTENTION_KINDS, BusyMode, PermissionMode


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
HOOK_EVENTS = ("session.post_create", "session.post_stop", "agent.stopped", "turn.end", "session.attention.changed",
               "session.runtime_recovery.started", "session.runtime_recovery.succeeded",
               "session.runtime_recovery.exhausted")
DEFAULT_HOOK_TIMEOUT = "30s"
DEFAULT_HANDSHAKE_TIMEOUT = 30.0
TITLE_CHAIN = "roles.auto_title.fallback_chain"
SETTINGS_BY_NAME = {s.name: s for s in SETTINGS}

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
RUNTIME_FIELDS = ("model", "reasoning_effort", "speed")


def parse_duration(text):
    """"500ms", "10s", "30m", "24h" or "0" -> seconds."""
    if text == "0":
        return 0.0
    match = _DURATION.match(text) if isinstance(text, str) else None
    if not match:
        raise ValueError(f'expected a duration such as "500ms", "10s", "30m", "24h" or "0", got {text!r}')
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def reference_command():
    """How to start the built-in reference agent: through this compozy itself (checkout, install or archive)."""
    return self_command("agent", "reference")


@dataclass(frozen=True)
class Provider:
    name: str
    command: tuple
    env: dict = field(default_factory=dict)
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT  # seconds for initialize (a first `npx -y` downloads)
    launch_aliases: tuple = ()  # LaunchAlias entries (compozy.launch_aliases)
    auth_method: str | None = None  # an ACP auth method id, authenticated before the first session is opened


@dataclass(frozen=True)
class Route:
    provider: str
    model: str | None = None
    reasoning_effort: str | None = None
    speed: str | None = None

    def runtime(self):
        return {k: v for k, v in (("provider", self.provider), ("model", self.model),
                                  ("reasoning_effort", self.reasoning_effort), ("speed", self.speed)) if v}


@dataclass(frozen=True)
class Agent:
    name: str
    provider: str
    model: str | None = None
    reasoning_effort: str | None = None
    speed: str | None = None
    fallback_chain: tuple = ()

    def defaults(self):
        return Route(self.provider, self.model, self.reasoning_effort, self.speed).runtime()


@dataclass(frozen=True)
class Hook:
    """One [[hooks]] entry: the command run (event JSON on stdin) when the event happens."""

    event: str
    command: tuple
    timeout: float


@dataclass(frozen=True)
class Config:
    values: dict
    providers: dict
    agents: dict
    path: str | None = None
    hooks: tuple = ()
    title_chain: tuple = ()  # roles.auto_title.fallback_chain
    budgets: tuple = ()  # [[budgets]] (compozy.config_entries.Budget)
    notifiers: tuple = ()  # [[notify]] (compozy.config_entries.Notifier)
    fleet: FleetSettings | None = None  # [fleet] (compozy.fleet.settings); None: this daemon is in no fleet

    def __getitem__(self, name):
        setting = SETTINGS_BY_NAME[name]
        value = self.values.get(name, setting.default)
        return parse_duration(value) if setting.kind == "duration" else value

    def agent(self, name):
        if name not in self.agents:
            raise CompozyError("agent_not_found", f"no agent named {name!r}; configured: {sorted(self.agents)}")
        return self.agents[name]

    def provider(self, name):
        return self.providers.get(name)


def builtin_providers():
    return {"reference": Provider("reference", tuple(reference_command()), {})}


def builtin_agents():
    return {"general": Agent("general", "reference")}


def load(path):
    """Read config.toml at path (missing file = defaults) and validate every key. The file (it names the
    commands the daemon runs) is opened without following a link and must be ours, writable by nobody else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return from_document({}, str(path))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"{path}: is a symbolic link; compozy reads only a regular file of your own there "
                              f"(replace the link with the file it names, after checking it)") from None
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        _check_owner_only(os.fstat(fd), path)
        try:
            document = tomllib.load(handle)
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read: {exc}") from exc
    return from_document(document, str(path))


def _check_owner_only(info, path):
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{path}: is not a regular file")
    if info.st_uid != os.geteuid():
        raise ConfigError(f"{path}: belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}): someone else "
                          f"controls it; remove it or set COMPOZY_HOME to a folder of your own")
    if info.st_mode & 0o022:
        raise ConfigError(f"{path}: is writable by group or others (mode {stat.S_IMODE(info.st_mode):o}): check "
                          f"that nobody else changed it, then run: chmod 600 {path}")


def from_document(document, path="config.toml"):
    problems = Problems(path)
    document = dict(document)
    providers = _load_providers(document.pop("providers", {}), problems)
    agents = _load_agents(document.pop("agents", {}), problems)
    hooks = _load_hooks(document.pop("hooks", []), problems)
    budgets = load_budgets(document.pop("budgets", []), problems)
    notifiers = load_notifiers(document.pop("notify", []), problems, parse_duration, ATTENTION_KINDS)
    fleet = load_fleet(document.pop("fleet"), problems) if "fleet" in document else None
    values = {}
    _flatten(document, "", values, problems)
    title_chain = tuple(r for r in (_route(entry, f"{TITLE_CHAIN}[{i + 1}]", problems) for i, entry in
                                    enumerate(as_list(values.pop(TITLE_CHAIN, []), TITLE_CHAIN, problems))) if r)
    for name, raw in values.items():
        _check_setting(name, raw, problems)
    all_providers = {**builtin_providers(), **providers}
    all_agents = {**builtin_agents(), **agents}
    for agent in all_agents.values():
        for route in (Route(agent.provider), *agent.fallback_chain):
            if route.provider not in all_providers:
                problems.add(f"agents.{agent.name}", f"names unknown provider {route.provider!r}")
    _check_title_role(values, title_chain, all_providers, all_agents, problems)
    problems.raise_if_any()
    return Config(values, all_providers, all_agents, path, tuple(hooks), title_chain, budgets, notifiers, fleet)


def _check_title_role(values, chain, providers, agents, problems):
    default = values.get("default_agent")
    if isinstance(default, str) and default not in agents:
        problems.add("default_agent", f"names unknown agent {default!r}; configured: {', '.join(sorted(agents))}")
    agent = values.get("roles.auto_title.agent", "general")
    if isinstance(agent, str) and agent not in agents:
        problems.add("roles.auto_title.agent", f"names unknown agent {agent!r}")
    provider = values.get("roles.auto_title.provider")
    for key, name in [("roles.auto_title.provider", provider)] + [(TITLE_CHAIN, r.provider) for r in chain]:
        if isinstance(name, str) and name and name not in providers:
            problems.add(key, f"names unknown provider {name!r}")


def _load_hooks(entries, problems):
    hooks = []
    for i, entry in enumerate(as_list(entries, "hooks", problems)):
        key = f"hooks[{i + 1}]"
        if not isinstance(entry, dict):
            problems.add(key, "expected a table with event, command and timeout")
            continue
        for unknown in sorted(set(entry) - {"event", "command", "timeout"}):
            problems.add(f"{key}.{unknown}", "unknown key")
        event, command = entry.get("event"), entry.get("command")
        if event not in HOOK_EVENTS:
            problems.add(f"{key}.event", f"expected one of {', '.join(HOOK_EVENTS)}, got {event!r}")
        if isinstance(command, str) and command.strip():
            command = ["/bin/sh", "-c", command]
        if not (isinstance(command, list) and command and all(isinstance(p, str) and p for p in command)):
            problems.add(f"{key}.command", "expected a shell command string or a non-empty list of strings")
        try:
            timeout = parse_duration(entry.get("timeout", DEFAULT_HOOK_TIMEOUT))
            if timeout <= 0:
                raise ValueError("a hook needs a time bound above zero")
        except ValueError as exc:
            problems.add(f"{key}.timeout", str(exc))
            continue
        if event in HOOK_EVENTS and isinstance(command, list):
            hooks.append(Hook(event, tuple(command), timeout))
    return hooks


def _flatten(table, prefix, out, problems):
    for key, value in table.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            _flatten(value, name + ".", out, problems)
        else:
            out[name] = value


def _check_setting(name, raw, problems):
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


def _load_providers(table, problems):
    providers = {}
    for name, spec in named_tables(table, "providers", problems):
        unknown = set(spec) - {"command", "env", "handshake_timeout", "launch_aliases", "auth_method"}
        for key in sorted(unknown):
            problems.add(f"providers.{name}.{key}", "unknown key")
        command = spec.get("command")
        if not (isinstance(command, list) and command and all(isinstance(p, str) and p for p in command)):
            problems.add(f"providers.{name}.command", "expected a non-empty list of strings")
            continue
        env = spec.get("env", {})
        if not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
            problems.add(f"providers.{name}.env", "expected a table of strings")
            continue
        try:
            handshake = parse_duration(spec.get("handshake_timeout", "30s"))
            if handshake <= 0:
                raise ValueError("a handshake needs a time bound above zero")
        except ValueError as exc:
            problems.add(f"providers.{name}.handshake_timeout", str(exc))
            continue
        aliases = parse_launch_aliases(spec.get("launch_aliases", []), f"providers.{name}.launch_aliases", problems)
        auth_method = spec.get("auth_method")
        if auth_method is not None and not (isinstance(auth_method, str) and auth_method.strip()):
            problems.add(f"providers.{name}.auth_method", "expected the id of one of the agent's authMethods")
            continue
        providers[name] = Provider(name, tuple(command), dict(env), handshake, aliases, auth_method)
    return providers


def _load_agents(table, problems):
    agents = {}
    for name, spec in named_tables(table, "agents", problems):
        key = f"agents.{name}"
        for unknown in sorted(set(spec) - {"provider", "fallback_chain", *RUNTIME_FIELDS}):
            problems.add(f"{key}.{unknown}", "unknown key")
        if not isinstance(spec.get("provider"), str):
            problems.add(f"{key}.provider", "expected a provider name")
            continue
        chain = [_route(entry, f"{key}.fallback_chain[{i + 1}]", problems)
                 for i, entry in enumerate(as_list(spec.get("fallback_chain", []), f"{key}.fallback_chain", problems))]
        fields = {f: spec.get(f) for f in RUNTIME_FIELDS}
        for f, value in fields.items():
            if value is not None and not isinstance(value, str):
                problems.add(f"{key}.{f}", "expected a string")
        agents[name] = Agent(name, spec["provider"], fallback_chain=tuple(r for r in chain if r), **fields)
    return agents


def _route(entry, key, problems):
    if not isinstance(entry, dict) or not isinstance(entry.get("provider"), str):
        problems.add(key, "expected { provider = \"...\", model = \"...\" }")
        return None
    for unknown in sorted(set(entry) - {"provider", *RUNTIME_FIELDS}):
        problems.add(f"{key}.{unknown}", "unknown key")
    return Route(entry["provider"], *(entry.get(f) for f in RUNTIME_FIELDS))
