"""`compozy usage` and `compozy session usage`: what agents reported they used, summed from the ledger.

Layer 6 (surface).
"""

import click

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import choice, cli
from compozy.cli.output import emit, output_option, table

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


@cli.command("usage")
@click.option("--by", "group_by", type=choice("usage.summary", "group_by"), default="agent", show_default=True,
              help="one row per session, workspace, agent, provider, model or day")
@click.option("--since", help="from: 7d, 24h or 30m ago, a day (2026-12-01) or a UTC time")
@click.option("--until", help="before: the same forms as --since")
@click.option("--workspace", help="only this workspace (name or ID)")
@click.option("--agent", help="only this agent")
@click.option("--limit", type=click.IntRange(1, 10_000), help="only the N groups with the most tokens, biggest first")
@output_option()
@click.pass_obj
def usage(obj, output, **query):
    """Tokens and cost the agents reported, per turn, summed across sessions.

    Turns a rewind archived still count (marked); a continued or forked session starts at zero.

    \b
    Example:
      compozy usage --since 7d
      compozy usage --by workspace --since 2026-12-01 -o json
    """
    emit(obj.call("usage.summary", **query), output, summary_text)


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
