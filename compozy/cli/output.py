"""CLI output: `-o json` prints the daemon's document as is; text is a short readable form.

Layer 6 (surface).
"""

import json
import os
import sys

import click

from compozy.text import multi_line, one_line

FORMATS = ("text", "json")


def on_terminal(stream=None):
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty()


def colour(text, err=False, **styles):
    """click.style only on a terminal and never with NO_COLOR set (https://no-color.org)."""
    if os.environ.get("NO_COLOR") or not on_terminal(sys.stderr if err else sys.stdout):
        return text
    return click.style(text, **styles)


def quiet_option(what="IDs"):
    return click.option("-q", "--quiet", is_flag=True, help=f"print {what} only, one a line")


def table(rows, headers, empty):
    """Aligned columns; the header line only on a terminal, so pipes get bare rows."""
    rows = [[one_line(cell) for cell in row] for row in rows]
    if not rows:
        return empty
    shown = ([headers] if on_terminal() else []) + rows
    widths = [max(len(row[i]) for row in shown) for i in range(len(headers) - 1)]
    lines = ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip() for row in shown]
    if on_terminal():
        lines[0] = colour(lines[0], bold=True)
    return "\n".join(lines)


def output_option(formats=FORMATS):
    return click.option("-o", "--output", "output", type=click.Choice(formats), default="text",
                        show_default=True, help="json prints the document the HTTP API returns")


def emit(document, output, text=None):
    if output == "json":
        click.echo(json.dumps(document, indent=2))
    elif output == "jsonl":
        click.echo(json.dumps(document, separators=(",", ":")))
    else:
        shown = text(readable(document)) if text else json.dumps(document, indent=2)
        if shown:  # a quiet list with nothing in it prints nothing
            click.echo(shown)


MULTI_LINE_FIELDS = ("text", "patch")  # message bodies and diffs keep their lines; every other field is one line


def readable(value, key=None):
    """The document as a person's terminal may show it: control characters, CR and LF and bidi overrides
    in names, paths and summaries escaped (they could retitle or clear the terminal, write its clipboard,
    forge a row or reverse text); message bodies and a diff's patch keep their newlines. `-o json` stays exact."""
    if isinstance(value, str):
        return multi_line(value) if key in MULTI_LINE_FIELDS else one_line(value)
    if isinstance(value, dict):
        return {name: readable(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [readable(item, key) for item in value]
    return value


SESSION_HEADERS = ("ID", "STATE", "AGENT", "RUNTIME", "NAME")
FLEET_SESSION_HEADERS = ("ID", "STATE", "AGENT", "RUNTIME", "NODE", "NAME")


def session_row(session, open_items=0):
    runtime = session.get("runtime") or {}
    state = session["state"] + (f" ({session['attention']})" if session.get("attention") else "")  # needs attention
    state += f" [{open_items} in inbox]" if open_items else ""
    return session["id"], state, session["agent_name"], runtime_cell(runtime), session.get("name") or "-"


def runtime_cell(runtime):
    """The runtime a list row shows (runtime.display: effective, else last known, else the selection or the
    agent's defaults), then the runtime's status: `reference echo-1 (ready)`."""
    display = runtime.get("display") or {}
    named = " ".join(str(display[k]) for k in ("provider", "model", "reasoning_effort", "speed") if display.get(k))
    return f"{named or '-'} ({runtime.get('status', '-')})"


def session_table(sessions, quiet=False, open_items=None, fleet=False):
    """fleet: a fleet list's rows, with the node that holds each session (and whether it answers)."""
    if quiet:
        return "\n".join(s["id"] for s in sessions)
    if fleet:
        return table([(*session_row(s, (open_items or {}).get(s["id"], 0))[:-1], node_cell(s.get("node")),
                       s.get("name") or "-") for s in sessions], FLEET_SESSION_HEADERS, "no sessions")
    return table([session_row(s, (open_items or {}).get(s["id"], 0)) for s in sessions], SESSION_HEADERS,
                 "no sessions")


def node_cell(node):
    node = node or {}
    return (node.get("name") or "-") + (" (unreachable)" if node.get("status") == "node_unreachable" else "")


def session_block(session):
    lines = [f"Session       {session['id']}" + (f"  ({session['name']})" if session.get("name") else ""),
             f"State         {session['state']}" + (
                 f" (lifecycle {session['lifecycle_state']})" if "lifecycle_state" in session else ""),
             f"Agent         {session['agent_name']}",
             f"Workspace     {session['workspace_id']}  {session.get('cwd') or ''}",
             f"Runtime       {session['runtime']['status']}" + _effective(session['runtime'])]
    lineage, derivation = session.get("lineage") or {}, session.get("derivation")
    if derivation:
        origin, _, seed, first = derivation_lines(derivation)
        lines += [origin, f"Derivation    {seed[14:]} · first prompt {first[14:]} · {context_line(derivation)}"]
    elif lineage.get("parent_session_id"):
        lines.append(f"Lineage       {lineage['kind']} of {lineage['parent_session_id']} (depth {lineage['spawn_depth']})")
    for field in ("stop_reason", "stop_detail", "attention"):
        if session.get(field):
            lines.append(f"{field.replace('_', ' ').capitalize():<14}{session[field]}")
    waiting = (session.get("activity") or {}).get("waiting")
    if waiting:
        on = waiting.get("session_id") or waiting.get("request_id")
        lines.append(f"Waiting       on a {waiting['on']}" + (f" ({on})" if on else "") + f" since {waiting['since']}")
    if session.get("failure"):
        failure = session["failure"]
        lines.append(f"Failure       {failure.get('kind')}: {failure.get('summary', '')}")
        error = failure.get("agent_error")
        if error:
            lines.append(f"Agent error   {error.get('message')} ({error.get('code')})"
                         + (f": {one_line(json.dumps(error['data']))[:300]}" if "data" in error else ""))
    if session.get("archived"):
        lines.append("Archived      yes")
    return "\n".join(lines)


def _effective(runtime):
    shown = runtime.get("effective") or runtime.get("last_known")
    if not shown:
        return ""
    return "  " + " ".join(f"{k}={v}" for k, v in shown.items() if k in ("provider", "model", "reasoning_effort", "speed") and v)


def context_line(carried):
    """`42 messages · 61.3 KiB · nothing omitted`, as the seed prints it."""
    omitted = carried["omitted_count"]
    detail = f"{omitted} omitted" if omitted else "bodies cut" if carried["truncated"] else "nothing omitted"
    return f"{carried['message_count']} messages · {carried['replay_bytes'] / 1024:.1f} KiB · {detail}"


def fence_line(fences):
    return f"Fences        epoch {fences['epoch']}  generation {fences['generation']}  " \
           f"max sequence {fences['max_sequence']}"


def derivation_lines(derivation):
    """Origin, Context, Seed and First prompt of a continued or forked session, as the seed prints them."""
    through = f"turn {derivation['through_turn_id']}" if derivation.get("through_turn_id") else "no settled turn"
    if derivation["kind"] == "continue":
        origin = f"continue · from {derivation['source_session_id']} · {derivation['source_agent_name']} · " \
                 f"through {through}"
    elif derivation.get("origin_message_id"):
        origin = f"fork · from {derivation['source_session_id']} · through {derivation['origin_message_id']} " \
                 f"({through})"
    else:
        origin = f"fork · from {derivation['source_session_id']} · through {through}"
    seed = derivation["seed"] + (f" ({derivation['native_state']})" if derivation.get("native_state") else "")
    if derivation.get("native_fork_error"):
        seed += f" (the agent's clone failed: {derivation['native_fork_error']})"
    lines = [f"Origin        {origin}", f"Context       {context_line(derivation)}", f"Seed          {seed}",
             f"First prompt  {derivation['first_prompt']}"]
    if derivation.get("route"):
        lines.append(f"Route         {derivation['route']} (the agent's fallback_chain)")
    if derivation.get("route_warning"):
        lines.append(f"Warning       {derivation['route_warning']}")
    return lines
