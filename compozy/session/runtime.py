"""Runtime snapshots, their layering, and a bound agent: process, ACP session, options.

Layer 4. A snapshot is {provider, model, reasoning_effort, speed, acp_options}. Layers apply in
order (agent defaults, durable selection, prompt snapshot), each replacing only what it sets.
"""

import logging
import uuid

from compozy import validate as v
from compozy.acp import protocol
from compozy.acp.driver import AcpError, AgentExited, AgentProcess
from compozy.errors import CompozyError, invalid
from compozy.location import child_environment
from compozy.redact import redact

log = logging.getLogger("compozy.runtime")

FIELDS = ("provider", "model", "reasoning_effort", "speed")
# How a snapshot field finds the agent's config option: by id first, then by category.
OPTION_LOOKUP = {"model": (("model",), ("model",)),
                 "reasoning_effort": (("reasoning_effort", "reasoning", "effort"), ("thought_level",)),
                 "speed": (("speed",), ("_speed", "speed"))}
FIELD_ERROR = {"model": "model_unavailable"}
HANDSHAKE_TIMEOUT = 30.0
SESSION_TIMEOUT = 60.0
LOAD_TIMEOUT = 120.0
CLIENT_CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True},
                       "session": {"configOptions": {"boolean": {}}}}
CLIENT_INFO = {"name": "compozy", "title": "compozy daemon", "version": "0.1"}


def check_snapshot(body, where="runtime"):
    """A validated runtime snapshot; acp_options entries carry exactly one of value_id or bool_value."""
    snapshot = v.check_body(body, v.RUNTIME_FIELDS, where)
    options = []
    for index, entry in enumerate(snapshot.get("acp_options", [])):
        option = v.check_body(entry, v.ACP_OPTION_FIELDS, f"{where}.acp_options[{index}]")
        if ("value_id" in option) == ("bool_value" in option):
            raise invalid(f"{where}.acp_options[{index}] needs exactly one of value_id or bool_value")
        options.append(option)
    if "acp_options" in snapshot:
        snapshot["acp_options"] = options
    return snapshot


def layer(*snapshots):
    """Later layers replace only the fields and option IDs they set."""
    merged, options = {}, {}
    for snapshot in snapshots:
        for name in FIELDS:
            if (snapshot or {}).get(name):
                merged[name] = snapshot[name]
        for option in (snapshot or {}).get("acp_options", []):
            options[option["id"]] = option
    if options:
        merged["acp_options"] = list(options.values())
    return merged


def routes_for(agent, selected, prompt_snapshot):
    """[(route_number, target snapshot)]: the fallback chain when nothing names a provider."""
    overlay = layer(selected, prompt_snapshot)
    if overlay.get("provider") or not agent.fallback_chain:
        return [(None, layer(agent.defaults(), overlay))]
    return [(number, layer(route.runtime(), overlay)) for number, route in enumerate(agent.fallback_chain, 1)]


class BindFailure(Exception):
    """Binding refused before ACP acceptance; `error` is the CompozyError to report."""

    def __init__(self, error, failure_kind):
        self.error, self.failure_kind = error, failure_kind
        super().__init__(error.message)


class Runtime:
    """A live agent process with (after open) one ACP session bound to one compozy session."""

    def __init__(self, provider, process):
        self.provider, self.process = provider, process
        self.caps, self.agent_info, self.auth_methods = {}, {}, []
        self.acp_session_id = None
        self.config_options, self.legacy_models, self.modes = [], None, None
        self.effective = {"provider": provider.name}
        self.loading = False
        self.released = False

    @property
    def alive(self):
        return self.process.alive

    @property
    def supports_load(self):
        return self.caps.get("loadSession") is True

    @property
    def supports_steering(self):
        return (self.caps.get("_meta") or {}).get("compozy.dev/steering") is True

    def acp_caps(self):
        return dict(self.caps)


def launch(provider, session_id, cwd, handler, agent_home):
    """Spawn the provider's command and run the initialize handshake."""
    marker = f"COMPOZY_AGENT_MARK={uuid.uuid4().hex}"
    name, value = marker.split("=", 1)
    # COMPOZY_HOME lets the built-in agent keep its state beside the daemon's; the marker and
    # COMPOZY_AGENT_HOME let a later daemon find this agent (and its descendants) if we crash.
    env = child_environment({"COMPOZY_HOME": agent_home, **provider.env, "COMPOZY_SESSION_ID": session_id,
                             name: value, "COMPOZY_AGENT_HOME": agent_home})
    process = AgentProcess(provider.command, cwd, env, handler, marker=marker, label=f"{session_id}/{provider.name}")
    try:
        process.start()
    except OSError as exc:
        raise BindFailure(CompozyError("provider_unavailable", f"cannot start provider {provider.name!r}: {exc}"),
                          "startup_failure") from None
    runtime = Runtime(provider, process)
    try:
        result = process.call("initialize", {"protocolVersion": protocol.PROTOCOL_VERSION,
                                             "clientCapabilities": CLIENT_CAPABILITIES,
                                             "clientInfo": CLIENT_INFO}, HANDSHAKE_TIMEOUT)
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise _refused(runtime, "handshake_failure", f"provider {provider.name!r} failed initialize: {exc}")
    if not isinstance(result, dict) or result.get("protocolVersion") != protocol.PROTOCOL_VERSION:
        raise _refused(runtime, "handshake_failure",
                       f"provider {provider.name!r} speaks ACP {result and result.get('protocolVersion')!r}, not 1")
    runtime.caps = result.get("agentCapabilities") or {}
    runtime.agent_info = result.get("agentInfo") or {}
    runtime.auth_methods = result.get("authMethods") or []
    return runtime


def open_session(runtime, cwd, load_id=None):
    """session/load when asked and advertised, else session/new; returns True when loaded."""
    params = {"cwd": cwd, "mcpServers": []}
    if load_id and runtime.supports_load:
        runtime.loading = True  # history replayed by session/load is not new output
        try:
            result = runtime.process.call("session/load", {**params, "sessionId": load_id}, LOAD_TIMEOUT)
            runtime.acp_session_id = load_id
            _take_options(runtime, result)
            return True
        except (AcpError, TimeoutError) as exc:
            log.warning("session/load of %s failed (%s); starting a fresh ACP session", load_id, exc)
            if isinstance(exc, AcpError) and exc.code == protocol.AUTH_REQUIRED:
                raise _auth_refused(runtime) from None
        except AgentExited as exc:
            raise _refused(runtime, "load_session_failure", f"agent exited during session/load: {exc}")
        finally:
            runtime.loading = False
    try:
        result = runtime.process.call("session/new", params, SESSION_TIMEOUT)
    except AcpError as exc:
        if exc.code == protocol.AUTH_REQUIRED:
            raise _auth_refused(runtime) from None
        raise _refused(runtime, "startup_failure", f"session/new failed: {exc}")
    except (AgentExited, TimeoutError) as exc:
        raise _refused(runtime, "startup_failure", f"session/new failed: {exc}")
    if not isinstance(result, dict) or not isinstance(result.get("sessionId"), str):
        raise _refused(runtime, "protocol_failure", "session/new answered without a sessionId")
    runtime.acp_session_id = result["sessionId"]
    _take_options(runtime, result)
    return False


def needs_configuration(runtime, target):
    """True when some requested field or option differs from the agent's current value."""
    for name in ("model", "reasoning_effort", "speed"):
        if target.get(name) and runtime.effective.get(name) != target[name]:
            return True
    current = {o.get("id"): o.get("currentValue") for o in runtime.config_options}
    return any(current.get(o["id"]) != o.get("value_id", o.get("bool_value")) for o in target.get("acp_options", []))


def configure(runtime, target):
    """Apply the target's fields and ACP options in place; roll back what changed on refusal."""
    applied = []
    try:
        for name in ("model", "reasoning_effort", "speed"):
            if target.get(name):
                _apply_field(runtime, name, target[name], applied)
        for option in target.get("acp_options", []):
            _apply_option(runtime, option, applied)
    except BindFailure:
        _rollback(runtime, applied)
        raise
    runtime.effective = _effective(runtime, target)
    return bool(applied)


def _apply_field(runtime, name, value, applied):
    option = _find_option(runtime.config_options, name)
    if option is None and name == "model" and runtime.legacy_models:
        return _apply_legacy_model(runtime, value, applied)
    if option is None:
        raise _unsupported(name, f"provider {runtime.provider.name!r} exposes no {name} option")
    if value not in _choices(option):
        raise _unsupported(name, f"{name} {value!r} is not offered by provider {runtime.provider.name!r} "
                                 f"(offered: {', '.join(_choices(option))})")
    _set_option(runtime, option, value, applied)


def _apply_option(runtime, entry, applied):
    option = next((o for o in runtime.config_options if o.get("id") == entry["id"]), None)
    if option is None and entry["id"] == "mode" and runtime.modes and "value_id" in entry:
        return _apply_mode(runtime, entry["value_id"])
    if option is None:
        raise _unsupported("acp_option", f"provider {runtime.provider.name!r} has no option {entry['id']!r}")
    if "bool_value" in entry:
        if option.get("type") != "boolean":
            raise _unsupported("acp_option", f"option {entry['id']!r} is not a boolean")
        _set_option(runtime, option, entry["bool_value"], applied)
    else:
        if option.get("type") == "boolean" or entry["value_id"] not in _choices(option):
            raise _unsupported("acp_option", f"option {entry['id']!r} does not offer {entry['value_id']!r}")
        _set_option(runtime, option, entry["value_id"], applied)


def _set_option(runtime, option, value, applied):
    if option.get("currentValue") == value:
        return
    params = {"sessionId": runtime.acp_session_id, "configId": option["id"], "value": value}
    if isinstance(value, bool):
        params["type"] = "boolean"
    previous = option.get("currentValue")
    try:
        result = runtime.process.call("session/set_config_option", params, SESSION_TIMEOUT)
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise _unsupported("model" if option.get("category") == "model" else "acp_option",
                           f"provider refused {option['id']}={value!r}: {exc}") from None
    applied.append((option["id"], previous))
    if isinstance(result, dict) and isinstance(result.get("configOptions"), list):
        runtime.config_options = result["configOptions"]
    else:
        option["currentValue"] = value


# Older ways to choose a value, for agents without the config option:
# (state attribute, list key, id key, current key, method, param, snapshot field)
MODES = ("modes", "availableModes", "id", "currentModeId", "session/set_mode", "modeId", "acp_option")
LEGACY_MODELS = ("legacy_models", "availableModels", "modelId", "currentModelId", "session/set_model", "modelId",
                 "model")


def _apply_mode(runtime, mode_id):
    """Agents that expose session modes (not config options) take `mode` through session/set_mode."""
    _apply_choice(runtime, MODES, mode_id)


def _apply_legacy_model(runtime, value, applied):
    _apply_choice(runtime, LEGACY_MODELS, value)


def _apply_choice(runtime, kind, value):
    attribute, list_key, id_key, current_key, method, param, field = kind
    state = getattr(runtime, attribute)
    available = [entry.get(id_key) for entry in state.get(list_key, []) if isinstance(entry, dict)]
    if value not in available:
        raise _unsupported(field, f"{value!r} is not offered (offered: {', '.join(map(str, available))})")
    if state.get(current_key) == value:
        return
    try:
        runtime.process.call(method, {"sessionId": runtime.acp_session_id, param: value}, SESSION_TIMEOUT)
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise _unsupported(field, f"provider refused {value!r}: {exc}") from None
    state[current_key] = value


def _rollback(runtime, applied):
    for option_id, previous in reversed(applied):
        if previous is None:
            continue
        try:
            params = {"sessionId": runtime.acp_session_id, "configId": option_id, "value": previous}
            if isinstance(previous, bool):
                params["type"] = "boolean"
            runtime.process.call("session/set_config_option", params, SESSION_TIMEOUT)
        except (AcpError, AgentExited, TimeoutError):
            log.warning("rollback of %s failed; the runtime will be replaced at the next prompt", option_id)
            runtime.effective = {"provider": runtime.provider.name, "stale": True}


def _effective(runtime, target):
    effective = {"provider": runtime.provider.name}
    for name in ("model", "reasoning_effort", "speed"):
        option = _find_option(runtime.config_options, name)
        value = option.get("currentValue") if option else None
        if value is None and name == "model" and runtime.legacy_models:
            value = runtime.legacy_models.get("currentModelId")
        if value is not None or target.get(name):
            effective[name] = value if value is not None else target.get(name)
    if target.get("acp_options"):
        effective["acp_options"] = target["acp_options"]
    return effective


def _find_option(options, name):
    ids, categories = OPTION_LOOKUP[name]
    return (next((o for o in options if o.get("id") in ids), None)
            or next((o for o in options if o.get("category") in categories), None))


def _choices(option):
    values = []
    for entry in option.get("options") or []:
        if isinstance(entry, dict) and "options" in entry:  # a group of options
            values += [o.get("value") for o in entry["options"] if isinstance(o, dict)]
        elif isinstance(entry, dict):
            values.append(entry.get("value"))
    return values


def _take_options(runtime, result):
    result = result if isinstance(result, dict) else {}
    runtime.config_options = [o for o in result.get("configOptions") or [] if isinstance(o, dict)]
    models, modes = result.get("models"), result.get("modes")
    runtime.legacy_models = models if isinstance(models, dict) else None
    runtime.modes = modes if isinstance(modes, dict) else None


def _unsupported(name, message):
    return BindFailure(CompozyError(FIELD_ERROR.get(name, "runtime_option_unsupported"), message),
                       "startup_failure")


def _auth_refused(runtime):
    return _refused(runtime, "provider_auth_failure",
                    f"provider {runtime.provider.name!r} requires authentication", code="provider_auth_failure")


def _refused(runtime, failure_kind, message, code="provider_unavailable"):
    tail = runtime.process.stderr_tail().strip().splitlines()[-3:]
    if tail:
        message += " | stderr: " + " / ".join(tail)[:400]
    return BindFailure(CompozyError(code, redact(message, runtime.provider.env)), failure_kind)
