"""Runtime snapshots and their layering.

Layer 4. A snapshot is {provider, model, reasoning_effort, speed, acp_options}. Layers apply in
order (agent defaults, durable selection, prompt snapshot), each replacing only what it sets.
The agent applies one through the ACP seam (compozy.acp.options).
"""

from compozy import validate as v
from compozy.errors import invalid

FIELDS = ("provider", "model", "reasoning_effort", "speed")


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
