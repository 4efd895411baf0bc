"""CLI output: `-o json` prints the daemon's document as is; text is a short readable form.

Layer 6 (surface).
"""

import json

import click

FORMATS = ("text", "json")


def output_option(formats=FORMATS):
    return click.option("-o", "--output", "output", type=click.Choice(formats), default="text",
                        show_default=True, help="json prints the document the HTTP API returns")


def emit(document, output, text=None):
    if output == "json":
        click.echo(json.dumps(document, indent=2))
    elif output == "jsonl":
        click.echo(json.dumps(document, separators=(",", ":")))
    else:
        click.echo(text(document) if text else json.dumps(document, indent=2))


def session_line(session):
    name = session.get("name") or "-"
    runtime = session.get("runtime") or {}
    return f"{session['id']}  {session['state']:<8}  {session['agent_name']:<12}  {runtime.get('status', '-'):<12}  {name}"


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
    if session.get("failure"):
        failure = session["failure"]
        lines.append(f"Failure       {failure.get('kind')}: {failure.get('summary', '')}")
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
    return [f"Origin        {origin}", f"Context       {context_line(derivation)}", f"Seed          {seed}",
            f"First prompt  {derivation['first_prompt']}"]
