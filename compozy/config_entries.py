"""The [[budgets]] and [[notify]] entries of config.toml, checked like every other key.

Layer 0 (beside compozy.config_problems): imports nothing from compozy. compozy.config reads them into
Config.budgets and Config.notifiers, handing in what checking them needs (the problems list, durations, the
attention kinds).
"""

import re
from dataclasses import dataclass

PERIODS = ("day", "week", "month")
BUDGET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
DEFAULT_NOTIFY_TIMEOUT = "10s"
DEFAULT_NOTIFY_PER_MINUTE = 6


@dataclass(frozen=True)
class Budget:
    """A limit on what the agents report, in tokens or in cost, per workspace, agent or the whole daemon."""

    name: str
    period: str  # day | week | month (UTC; a week starts on Monday)
    limit_tokens: int | None = None
    limit_cost: float | None = None
    currency: str = "USD"
    workspace: str | None = None  # a workspace's name or ID
    agent: str | None = None

    @property
    def unit(self):
        return "tokens" if self.limit_tokens is not None else self.currency

    @property
    def limit(self):
        return self.limit_tokens if self.limit_tokens is not None else self.limit_cost

    @property
    def scope(self):
        return {"workspace": self.workspace} if self.workspace else {"agent": self.agent} if self.agent else {}


@dataclass(frozen=True)
class Notifier:
    """A command run with an attention item as JSON on stdin when the item opens."""

    command: tuple
    kinds: tuple = ()  # empty: every kind
    workspaces: tuple = ()  # names or IDs; empty: every workspace
    timeout: float = 10.0
    per_minute: int = DEFAULT_NOTIFY_PER_MINUTE


def as_list(value, key, problems):
    if not isinstance(value, list):
        problems.add(key, "expected a list")
        return []
    return value


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_budgets(entries, problems):
    budgets, names = [], set()
    for i, entry in enumerate(as_list(entries, "budgets", problems)):
        key = f"budgets[{i + 1}]"
        if not isinstance(entry, dict):
            problems.add(key, "expected a table with period and limit_tokens or limit_cost")
            continue
        for unknown in sorted(set(entry) - {"name", "period", "limit_tokens", "limit_cost", "currency", "workspace",
                                            "agent"}):
            problems.add(f"{key}.{unknown}", "unknown key")
        name = entry.get("name", f"budget-{i + 1}")
        broken = _budget_problems(entry, name, names)
        for field, problem in broken:
            problems.add(f"{key}.{field}", problem)
        if not broken:
            names.add(name)
            budgets.append(Budget(name, entry["period"], entry.get("limit_tokens"), entry.get("limit_cost"),
                                  entry.get("currency", "USD"), entry.get("workspace"), entry.get("agent")))
    return tuple(budgets)


def _budget_problems(entry, name, names):
    found = []
    if not (isinstance(name, str) and BUDGET_NAME.fullmatch(name)) or name in names:
        found.append(("name", "expected a name of its own (letters, digits, _ . -; each budget's differs)"))
    if entry.get("period") not in PERIODS:
        found.append(("period", f"expected one of {', '.join(PERIODS)}, got {entry.get('period')!r}"))
    tokens, cost = entry.get("limit_tokens"), entry.get("limit_cost")
    if (tokens is None) == (cost is None):
        found.append(("limit_tokens", "give exactly one of limit_tokens and limit_cost"))
    elif tokens is not None and not (isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0):
        found.append(("limit_tokens", f"expected a whole number above 0, got {tokens!r}"))
    elif cost is not None and not (_number(cost) and cost > 0):
        found.append(("limit_cost", f"expected a number above 0, got {cost!r}"))
    if not isinstance(entry.get("currency", "USD"), str) or not entry.get("currency", "USD"):
        found.append(("currency", "expected a currency code such as \"USD\""))
    if entry.get("workspace") is not None and entry.get("agent") is not None:
        found.append(("agent", "a budget is per workspace, per agent or for the whole daemon: not both"))
    for field in ("workspace", "agent"):
        if entry.get(field) is not None and not (isinstance(entry[field], str) and entry[field]):
            found.append((field, "expected a name"))
    return found


def load_notifiers(entries, problems, parse_duration, kinds_known):
    notifiers = []
    for i, entry in enumerate(as_list(entries, "notify", problems)):
        key = f"notify[{i + 1}]"
        if not isinstance(entry, dict):
            problems.add(key, "expected a table with a command")
            continue
        for unknown in sorted(set(entry) - {"command", "kinds", "workspaces", "timeout", "max_per_minute"}):
            problems.add(f"{key}.{unknown}", "unknown key")
        command = entry.get("command")
        if isinstance(command, str) and command.strip():
            command = ["/bin/sh", "-c", command]
        broken = not (isinstance(command, list) and command and all(isinstance(p, str) and p for p in command))
        if broken:
            problems.add(f"{key}.command", "expected a shell command string or a non-empty list of strings")
        kinds = entry.get("kinds", [])
        if not (isinstance(kinds, list) and all(kind in kinds_known for kind in kinds)):
            problems.add(f"{key}.kinds", f"expected a list of: {', '.join(kinds_known)}")
            broken = True
        workspaces = entry.get("workspaces", [])
        if not (isinstance(workspaces, list) and all(isinstance(w, str) and w for w in workspaces)):
            problems.add(f"{key}.workspaces", "expected a list of workspace names or IDs")
            broken = True
        per_minute = entry.get("max_per_minute", DEFAULT_NOTIFY_PER_MINUTE)
        if not (isinstance(per_minute, int) and not isinstance(per_minute, bool) and per_minute >= 1):
            problems.add(f"{key}.max_per_minute", f"expected a whole number >= 1, got {per_minute!r}")
            broken = True
        try:
            timeout = parse_duration(entry.get("timeout", DEFAULT_NOTIFY_TIMEOUT))
            if timeout <= 0:
                raise ValueError("a notifier needs a time bound above zero")
        except ValueError as exc:
            problems.add(f"{key}.timeout", str(exc))
            continue
        if not broken:
            notifiers.append(Notifier(tuple(command), tuple(kinds), tuple(workspaces), timeout, per_minute))
    return tuple(notifiers)
