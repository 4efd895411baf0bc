"""config.toml: loading it, its tables (providers, agents, hooks, the title role's routes) and validation that
names file, key and problem; the scalar settings' table is compozy.config_settings.

Layer 1: imports only layer 0 and config_settings. Precedence: built-in defaults < config.toml.
"""

import errno
import os
import stat
import tomllib
from dataclasses import dataclass, field

from compozy.config_entries import load_budgets, load_notifiers
from compozy.config_problems import ConfigError, Problems, as_list, named_tables
from compozy.config_settings import SETTINGS_BY_NAME, check_setting, parse_duration
from compozy.errors import CompozyError
from compozy.fleet.settings import FleetSettings, load_fleet
from compozy.launch_aliases import parse_launch_aliases
from compozy.location import self_command
from compozy.states import ATTENTION_KINDS

HOOK_EVENTS = ("session.post_create", "session.post_stop", "agent.stopped", "turn.end", "session.attention.changed",
               "session.runtime_recovery.started", "session.runtime_recovery.succeeded",
               "session.runtime_recovery.exhausted")
DEFAULT_HOOK_TIMEOUT = "30s"
DEFAULT_HANDSHAKE_TIMEOUT = 30.0
TITLE_CHAIN = "roles.auto_title.fallback_chain"
RUNTIME_FIELDS = ("model", "reasoning_effort", "speed")


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
        check_setting(name, raw, problems)
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
