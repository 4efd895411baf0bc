"""Provider launch aliases: runtime choices a provider takes as launch arguments, not as ACP options.

Layer 0: stdlib only. `[[providers.NAME.launch_aliases]]` entries map runtime choices (`model`,
`reasoning_effort`, `speed`, and ACP `options` such as a `thinking` toggle) to arguments appended
to the provider's command. The first entry whose `match` the runtime satisfies is its alias. The
matched choices are baked into the process: they are never set through ACP, a runtime resolving to
another alias replaces the process, and reads keep the logical values the user chose.
"""

from dataclasses import dataclass

MATCH_FIELDS = ("model", "reasoning_effort", "speed")
MATCH_KEYS = (*MATCH_FIELDS, "options")


@dataclass(frozen=True)
class LaunchAlias:
    fields: tuple  # ((field, value), ...) from MATCH_FIELDS
    options: tuple  # ((option id, str or bool), ...)
    args: tuple

    def matches(self, target):
        chosen = _chosen_options(target)
        return (all(target.get(name) == value for name, value in self.fields)
                and all(_same(chosen.get(option_id), value) for option_id, value in self.options))

    def live_part(self, target):
        """The target without the choices this alias bakes into the process."""
        baked_fields, baked_options = dict(self.fields), dict(self.options)
        live = {k: v for k, v in target.items() if k not in baked_fields}
        if target.get("acp_options"):
            live["acp_options"] = [o for o in target["acp_options"] if o["id"] not in baked_options]
        return live

    def logical_fields(self):
        return dict(self.fields)


def resolve(provider, target):
    """The provider's alias for target's runtime, or None (the plain command)."""
    return next((alias for alias in getattr(provider, "launch_aliases", ()) if alias.matches(target)), None)


def parse_launch_aliases(entries, key, problems):
    """The aliases of one provider's `launch_aliases` list; problems name each bad key."""
    if not isinstance(entries, list):
        problems.add(key, "expected a list of { match = {...}, args = [...] }")
        return ()
    aliases = []
    for index, entry in enumerate(entries, start=1):
        alias = _parse_entry(entry, f"{key}[{index}]", problems)
        if alias is not None:
            aliases.append(alias)
    return tuple(aliases)


def _parse_entry(entry, key, problems):
    if not isinstance(entry, dict):
        problems.add(key, "expected { match = {...}, args = [...] }")
        return None
    for unknown in sorted(set(entry) - {"match", "args"}):
        problems.add(f"{key}.{unknown}", "unknown key")
    match, args = entry.get("match"), entry.get("args")
    ok = True
    if not (isinstance(args, list) and args and all(isinstance(a, str) and a for a in args)):
        problems.add(f"{key}.args", "expected a non-empty list of strings")
        ok = False
    if not (isinstance(match, dict) and match):
        problems.add(f"{key}.match", f"expected a table naming some of {', '.join(MATCH_KEYS)}")
        return None
    for unknown in sorted(set(match) - set(MATCH_KEYS)):
        problems.add(f"{key}.match.{unknown}", f"unknown key (expected {', '.join(MATCH_KEYS)})")
        ok = False
    for name in MATCH_FIELDS:
        if name in match and not (isinstance(match[name], str) and match[name]):
            problems.add(f"{key}.match.{name}", "expected a non-empty string")
            ok = False
    options = match.get("options", {})
    if not (isinstance(options, dict) and all(isinstance(v, (str, bool)) for v in options.values())):
        problems.add(f"{key}.match.options", "expected a table of option id = value (a string or true/false)")
        ok = False
    if not ok:
        return None
    fields = tuple((name, match[name]) for name in MATCH_FIELDS if name in match)
    return LaunchAlias(fields, tuple(sorted(options.items())), tuple(args))


def _chosen_options(target):
    return {o["id"]: o.get("value_id", o.get("bool_value")) for o in target.get("acp_options") or []}


def _same(chosen, wanted):
    return chosen is not None and type(chosen) is type(wanted) and chosen == wanted
