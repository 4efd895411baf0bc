"""The reference agent's settings, read once from the COMPOZY_REFERENCE_* environment variables."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compozy.agents.directives import log

DEFAULT_MODELS = ("echo-1", "echo-2", "echo-large")


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
        log(f"ignoring invalid COMPOZY_REFERENCE_CHUNK_DELAY {raw!r}")
        return 0.0


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
                   launch_args=tuple(launch_args))

    def choices(self) -> dict:
        return {"model": self.models, "reasoning_effort": ("low", "medium", "high"), "speed": ("normal", "fast")}
