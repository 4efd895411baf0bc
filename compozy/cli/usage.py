"""`compozy usage` and `compozy session usage`: what agents reported they used, summed from the ledger.

Layer 6 (surface). Both are generated from the table (compozy/cli/generated.py) with their words here.
"""

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.output import table

HEADERS = ("KEY", "TURNS", "INPUT", "OUTPUT", "TOTAL TOKENS", "COST")


def cost_text(costs):
    return " + ".join(f"{c['amount']:.4f} {c['currency']}" for c in costs) or "-"


def sums_row(key, sums):
    tokens = sums["tokens"]
    turns = str(sums["turns"]) + (f" ({sums['archived_turns']} archived)" if sums["archived_turns"] else "")
    return key, turns, str(tokens["input"]), str(tokens["output"]), str(tokens["total"]), cost_text(sums["cost"])


def summary_text(document):
    usage = document["usage"]
    rows = [sums_row(group["key"] or "-", group) for group in usage["groups"] or []]
    if usage.get("groups_count", 0) > len(rows):
        rows.append((f"({usage['groups_count'] - len(rows)} more)", "", "", "", "", ""))
    rows.append(sums_row("total", usage["total"]))
    window = f"since {usage['since'] or 'the start'} until {usage['until'] or 'now'}"
    return table(rows, HEADERS, "") + f"\n({window})"


PRESENTATION["usage.summary"] = Presentation(
    "Tokens and cost the agents reported, per turn, summed across sessions.\n\n"
    "Turns a rewind archived still count (marked); a continued or forked session starts at zero.",
    "compozy usage --since 7d\ncompozy usage --by workspace --since 2026-12-01 -o json", summary_text,
    {"group_by": "one row per session, workspace, agent, provider, model or day",
     "since": "from: 7d, 24h or 30m ago, a day (2026-12-01) or a UTC time",
     "until": "before: the same forms as --since", "workspace": "only this workspace (name or ID)",
     "agent": "only this agent", "limit": "only the N groups with the most tokens, biggest first"},
    defaults={"group_by": "agent"})

PRESENTATION["session.usage"] = Presentation(
    "A session's turns as the usage ledger holds them, and their sums.",
    "compozy session usage sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --lineage",
    lambda d: _session_text(d), {"lineage": "add the sessions this one was continued or forked from"})


def _session_text(document):
    usage = document["usage"]
    rows = [sums_row(turn["turn_id"] + (" (archived)" if turn["archived"] else ""),
                     {"turns": 1, "archived_turns": 0, "tokens": turn["tokens"],
                      "cost": [turn["cost"]] if turn["cost"] else []}) for turn in usage["turns"]]
    rows.append(sums_row("total", usage["total"]))
    return table(rows, HEADERS, "")
