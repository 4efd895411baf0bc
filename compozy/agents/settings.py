"""The reference agent's settings, read once from the COMPOZY_REFERENCE_* environment variables."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compozy.agents.directives import log

DEFAULT_MODELS = ("echo-1", "echo-2", "echo-large")
AUTH_KINDS = ("agent", "env", "terminal")


def env_flag(env, name: str) -> bool:
    return env.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def default_state_dir(env) -> Path:
    if env.get("COMPOZY_REFERENCE_STATE"):
        return Path(env["COMPOZY_REFERENCE_STATE"])
    if env.get("COMPOZY_HOME"):
        return Path(env["COMPOZY_HOME"]) / "reference-agent"
    return Path.home() / ".compozy" / "reference-agent"


def parse_delay(raw: str) -> float:
    try:
        return max(0.0, float(raw or 0))
    except ValueError:
        log(f"ignoring an invalid delay {raw!r}")
        return 0.0


def parse_auth_methods(raw: str) -> tuple:
    """COMPOZY_REFERENCE_AUTH_METHODS: a comma list of agent, env and terminal (default: agent)."""
    kinds = tuple(kind.strip() for kind in raw.split(",") if kind.strip() in AUTH_KINDS)
    return kinds or ("agent",)


def _models_text(env) -> str:
    """COMPOZY_REFERENCE_MODELS_FILE (read once, at start) wins over COMPOZY_REFERENCE_MODELS: a test can
    offer a process started later models that a running one does not have."""
    path = env.get("COMPOZY_REFERENCE_MODELS_FILE")
    if path:
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            log(f"ignoring COMPOZY_REFERENCE_MODELS_FILE: {exc}")
    return env.get("COMPOZY_REFERENCE_MODELS", "")


GATED_STEPS = ("initialize", "session/new", "session/load", "exit")


def parse_gates(raw: str) -> dict:
    """COMPOZY_REFERENCE_GATES: `STEP=NAME,...`; a gated step waits for `<cwd>/.compozy-gates/NAME`."""
    gates = {}
    for item in filter(None, (part.strip() for part in (raw or "").split(","))):
        step, _, name = item.partition("=")
        if step not in GATED_STEPS or not name or "/" in name or name.startswith("."):
            log(f"ignoring COMPOZY_REFERENCE_GATES entry {item!r}")
            continue
        gates[step] = name
    return gates


@dataclass(frozen=True)
class Settings:
    require_auth: bool
    load_session: bool
    steering: bool
    mcp_http: bool
    fork: bool
    fork_fails: bool
    chunk_delay: float
    models: tuple
    state_dir: Path
    launch_args: tuple = ()  # the arguments after the command, reported by [launch-args]
    auth_methods: tuple = ("agent",)  # what authMethods lists: agent, env, terminal
    auth_refuse: bool = False  # authenticate with the agent-type method is refused
    resume: bool = False  # sessionCapabilities.resume and session/resume
    close: bool = False  # sessionCapabilities.close and session/close
    modes: bool = False  # session modes (default, plan) in session/new, load and resume
    commands: bool = False  # available_commands_update after a session is opened
    fail_open: bool = False  # session/new, load and resume fail with an error that carries data
    start_delay: float = 0.0  # seconds before initialize is answered
    gates: dict = None  # step -> gate name (COMPOZY_REFERENCE_GATES): hold a handshake step, or the exit

    @classmethod
    def from_env(cls, env, launch_args=()) -> Settings:
        models = tuple(name.strip() for name in _models_text(env).split(",") if name.strip())
        return cls(require_auth=env_flag(env, "COMPOZY_REFERENCE_REQUIRE_AUTH"),
                   load_session=not env_flag(env, "COMPOZY_REFERENCE_NO_LOAD"),
                   steering=env_flag(env, "COMPOZY_REFERENCE_STEERING"),
                   mcp_http=not env_flag(env, "COMPOZY_REFERENCE_NO_MCP_HTTP"),
                   fork=env_flag(env, "COMPOZY_REFERENCE_FORK"),
                   fork_fails=env_flag(env, "COMPOZY_REFERENCE_FORK_FAIL"),
                   chunk_delay=parse_delay(env.get("COMPOZY_REFERENCE_CHUNK_DELAY", "")),
                   models=models or DEFAULT_MODELS, state_dir=default_state_dir(env),
                   launch_args=tuple(launch_args),
                   auth_methods=parse_auth_methods(env.get("COMPOZY_REFERENCE_AUTH_METHODS", "")),
                   auth_refuse=env_flag(env, "COMPOZY_REFERENCE_AUTH_REFUSE"),
                   resume=env_flag(env, "COMPOZY_REFERENCE_RESUME"), close=env_flag(env, "COMPOZY_REFERENCE_CLOSE"),
                   modes=env_flag(env, "COMPOZY_REFERENCE_MODES"), commands=env_flag(env, "COMPOZY_REFERENCE_COMMANDS"),
                   fail_open=env_flag(env, "COMPOZY_REFERENCE_FAIL_OPEN"),
                   start_delay=parse_delay(env.get("COMPOZY_REFERENCE_START_DELAY", "")),
                   gates=parse_gates(env.get("COMPOZY_REFERENCE_GATES", "")))

    def choices(self) -> dict:
        return {"model": self.models, "reasoning_effort": ("low", "medium", "high"), "speed": ("normal", "fast")}
