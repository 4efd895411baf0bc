"""Event records as a terminal shows them: the answer on stdout, everything about it on stderr.

Layer 6 (surface). Shared by `session prompt`, `session events --follow` and `session attach`.
"""

import click

from compozy.cli.output import colour, readable

# The decisions POST S/approve accepts, for a request that does not name its options.
DECISIONS = [{"option_id": d, "name": d.replace("-", " ").capitalize(), "kind": d.replace("-", "_")}
             for d in ("allow-once", "allow-always", "reject-once", "reject-always")]


def admission_line(admission):
    line = f"{admission['disposition']} turn {admission['turn_id']}"
    if admission.get("steer_delivery"):
        line += f" ({admission['steer_delivery']})"
    if admission.get("entry_id"):
        line += f" entry {admission['entry_id']}"
    return line + (" (replayed)" if admission.get("replayed") else "")


def print_event(record):
    kind, content = record["type"], readable(record["content"])
    if kind == "agent_message":
        click.echo(content.get("text", ""), nl=False)
    elif kind == "thought":
        click.echo(colour(content.get("text", ""), err=True, dim=True), nl=False, err=True)
    elif kind == "tool_call" and not content.get("update"):
        click.echo(f"\n[tool {content.get('title') or content.get('tool_call_id')}]", err=True)
    elif kind == "permission" and "decision" not in content:
        click.echo(f"\n[permission pending: {content.get('request_id')} {content.get('title') or ''}]", err=True)
    elif kind == "done":
        click.echo("")
        if content.get("stop_reason") != "end_turn":
            click.echo(f"[{content.get('stop_reason')}]", err=True)
    elif kind == "error":
        click.echo(f"\nError: {content.get('error')}", err=True)


def options_of(content):
    """The options a person may pick, as the agent offered them (else the four decisions)."""
    options = content.get("options")
    if isinstance(options, list) and options and all(isinstance(o, dict) and o.get("option_id") for o in options):
        return options
    return DECISIONS


def decision_of(option):
    """The decision POST S/approve takes for an offered option (its kind, as ACP spells it, with dashes)."""
    return str(option.get("kind") or option["option_id"]).replace("_", "-")


def permission_prompt(content):
    """A pending request with numbered options, answered by typing the number or the name."""
    content = readable(content)
    choices = "  ".join(f"{n}) {o.get('name') or o['option_id']}" for n, o in enumerate(options_of(content), 1))
    what = content.get("title") or content.get("action") or "a request"
    where = f" {content['resource']}" if content.get("resource") else ""
    return colour(f"\n[permission] {what}{where}: {choices}  (type a number or a name)", err=True, bold=True)


def conversation_line(record):
    """A prompt someone else sent, a stop, a recovery: what an attached terminal shows between answers."""
    kind, content = record["type"], readable(record["content"])
    if kind == "user_message":
        return colour(f"\n> {content.get('text', '')}", err=True, bold=True)
    if kind == "session_stopped":
        return f"\n[session stopped: {content.get('stop_reason') or content.get('reason') or ''}]"
    if kind.startswith("runtime_recovery") or kind == "runtime_warning":
        return f"\n[{kind}]"
    if kind == "permission" and content.get("decision"):
        return f"[permission {content['request_id']}: {content['decision']}]"
    return None
