"""A runtime snapshot applied to an agent's advertised choices: config options, modes, legacy models.

Layer 3 (the ACP seam). A snapshot names `model`, `reasoning_effort`, `speed` and raw
`acp_options`; the agent advertises config options (by id or category), session modes (chosen as the
option `mode` when no config option has that id), or the older model list. Whatever changed is rolled
back when a later choice is refused. What the agent announces later (config_option_update,
current_mode_update, available_commands_update) keeps the client's view current.
"""

import logging

from compozy.acp.driver import AcpError, AgentExited
from compozy.acp.refusal import BindFailure
from compozy.errors import CompozyError

log = logging.getLogger("compozy.acp.options")

SET_CONFIG_OPTION = "session/set_config_option"
SET_TIMEOUT = 60.0
NAMED_FIELDS = ("model", "reasoning_effort", "speed")
# How a snapshot field finds the agent's config option: by id first, then by category.
OPTION_LOOKUP = {"model": (("model",), ("model",)),
                 "reasoning_effort": (("reasoning_effort", "reasoning", "effort"), ("thought_level",)),
                 "speed": (("speed",), ("_speed", "speed"))}
FIELD_ERROR = {"model": "model_unavailable"}
# Older ways to choose a value, for agents without the config option:
# (state attribute, list key, id key, current key, method, param, snapshot field)
MODES = ("modes", "availableModes", "id", "currentModeId", "session/set_mode", "modeId", "acp_option")
LEGACY_MODELS = ("legacy_models", "availableModels", "modelId", "currentModelId", "session/set_model", "modelId",
                 "model")
MAX_COMMANDS = 200


def take_options(client, result):
    """Remember what session/new or session/load advertised."""
    result = result if isinstance(result, dict) else {}
    client.config_options = [o for o in result.get("configOptions") or [] if isinstance(o, dict)]
    models, modes = result.get("models"), result.get("modes")
    client.legacy_models = models if isinstance(models, dict) else None
    client.modes = modes if isinstance(modes, dict) else None


def offered_models(client):
    """The models the live agent offers (its model config option, else its legacy list), or None when it
    says nothing about them or a launch alias bakes the model into the process instead."""
    if client.launch_alias is not None or getattr(client.provider, "launch_aliases", ()):
        return None
    option = _find_option(client.config_options, "model")
    if option is not None:
        return _choices(option)
    if client.legacy_models:
        return [e.get("modelId") for e in client.legacy_models.get("availableModels", []) if isinstance(e, dict)]
    return None


def take_update(client, update):
    """Keep what the agent announces about its own state: its config options, its mode, its commands."""
    variant = update.get("sessionUpdate")
    if variant == "config_option_update" and isinstance(update.get("configOptions"), list):
        client.config_options = [o for o in update["configOptions"] if isinstance(o, dict)]
    elif variant == "current_mode_update" and isinstance(client.modes, dict) and update.get("currentModeId"):
        client.modes["currentModeId"] = update["currentModeId"]
    elif variant == "available_commands_update" and isinstance(update.get("availableCommands"), list):
        client.available_commands = [_command(c) for c in update["availableCommands"]
                                     if isinstance(c, dict) and isinstance(c.get("name"), str)][:MAX_COMMANDS]


def _command(entry):
    command = {"name": entry["name"][:100], "description": str(entry.get("description") or "")[:300]}
    hint = (entry.get("input") or {}).get("hint") if isinstance(entry.get("input"), dict) else None
    if hint:
        command["hint"] = str(hint)[:200]
    return command


def needs_configuration(client, target):
    """True when some requested field or option differs from the agent's current value."""
    target = _live_part(client, target)
    for name in NAMED_FIELDS:
        if target.get(name) and client.effective.get(name) != target[name]:
            return True
    current = {o.get("id"): o.get("currentValue") for o in client.config_options}
    if "mode" not in current and isinstance(client.modes, dict):
        current["mode"] = client.modes.get("currentModeId")
    return any(current.get(o["id"]) != o.get("value_id", o.get("bool_value")) for o in target.get("acp_options", []))


def configure(client, target):
    """Apply the target's fields and ACP options in place; roll back what changed on refusal.
    Choices the process's launch alias baked in are not set, and stay logical in `effective`."""
    logical, target = target, _live_part(client, target)
    applied = []
    try:
        for name in NAMED_FIELDS:
            if target.get(name):
                _apply_field(client, name, target[name], applied)
        for option in target.get("acp_options", []):
            _apply_option(client, option, applied)
    except BindFailure:
        _rollback(client, applied)
        raise
    client.effective = _effective(client, target)
    if client.launch_alias is not None:
        client.effective.update(client.launch_alias.logical_fields())
        if logical.get("acp_options"):
            client.effective["acp_options"] = logical["acp_options"]
    return bool(applied)


def _live_part(client, target):
    return client.launch_alias.live_part(target) if client.launch_alias is not None else target


def _apply_field(client, name, value, applied):
    option = _find_option(client.config_options, name)
    if option is None and name == "model" and client.legacy_models:
        return _apply_choice(client, LEGACY_MODELS, value, applied)
    if option is None:
        raise _unsupported(name, f"provider {client.provider.name!r} exposes no {name} option")
    if value not in _choices(option):
        raise _unsupported(name, f"{name} {value!r} is not offered by provider {client.provider.name!r} "
                                 f"(offered: {', '.join(_choices(option))})")
    _set_option(client, option, value, applied)


def _apply_option(client, entry, applied):
    option = next((o for o in client.config_options if o.get("id") == entry["id"]), None)
    if option is None and entry["id"] == "mode" and client.modes and "value_id" in entry:
        # Agents that expose session modes (not config options) take `mode` through set_mode.
        return _apply_choice(client, MODES, entry["value_id"], applied)
    if option is None:
        raise _unsupported("acp_option", f"provider {client.provider.name!r} has no option {entry['id']!r}")
    if "bool_value" in entry:
        if option.get("type") != "boolean":
            raise _unsupported("acp_option", f"option {entry['id']!r} is not a boolean")
        _set_option(client, option, entry["bool_value"], applied)
    else:
        if option.get("type") == "boolean" or entry["value_id"] not in _choices(option):
            raise _unsupported("acp_option", f"option {entry['id']!r} does not offer {entry['value_id']!r}")
        _set_option(client, option, entry["value_id"], applied)


def _set_option(client, option, value, applied):
    if option.get("currentValue") == value:
        return
    previous = option.get("currentValue")
    try:
        result = client.process.call(SET_CONFIG_OPTION, _option_params(client, option["id"], value), SET_TIMEOUT)
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise _unsupported("model" if option.get("category") == "model" else "acp_option",
                           f"provider refused {option['id']}={value!r}: {exc}") from None
    applied.append((option["id"], previous, None))
    if isinstance(result, dict) and isinstance(result.get("configOptions"), list):
        client.config_options = result["configOptions"]
    else:
        option["currentValue"] = value


def _option_params(client, option_id, value):
    params = {"sessionId": client.acp_session_id, "configId": option_id, "value": value}
    if isinstance(value, bool):
        params["type"] = "boolean"
    return params


def _apply_choice(client, kind, value, applied):
    attribute, list_key, id_key, current_key, method, param, field = kind
    state = getattr(client, attribute)
    available = [entry.get(id_key) for entry in state.get(list_key, []) if isinstance(entry, dict)]
    if value not in available:
        raise _unsupported(field, f"{value!r} is not offered by provider {client.provider.name!r} "
                                  f"(offered: {', '.join(map(str, available))})")
    previous = state.get(current_key)
    if previous == value:
        return
    _choose(client, kind, value, field)
    applied.append((param, previous, kind))


def _choose(client, kind, value, field):
    _, _, _, current_key, method, param, _ = kind
    try:
        client.process.call(method, {"sessionId": client.acp_session_id, param: value}, SET_TIMEOUT)
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise _unsupported(field, f"provider refused {value!r}: {exc}") from None
    getattr(client, kind[0])[current_key] = value


def _rollback(client, applied):
    for option_id, previous, kind in reversed(applied):
        if previous is None:
            continue
        try:
            if kind is None:
                client.process.call(SET_CONFIG_OPTION, _option_params(client, option_id, previous), SET_TIMEOUT)
            else:
                _choose(client, kind, previous, kind[-1])
        except (AcpError, AgentExited, TimeoutError, BindFailure):
            log.warning("rollback of %r failed; the runtime will be replaced at the next prompt", option_id)
            client.effective = {"provider": client.provider.name, "stale": True}


def _effective(client, target):
    effective = {"provider": client.provider.name}
    for name in NAMED_FIELDS:
        option = _find_option(client.config_options, name)
        value = option.get("currentValue") if option else None
        if value is None and name == "model" and client.legacy_models:
            value = client.legacy_models.get("currentModelId")
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


def _unsupported(name, message):
    return BindFailure(CompozyError(FIELD_ERROR.get(name, "runtime_option_unsupported"), message),
                       "startup_failure")
