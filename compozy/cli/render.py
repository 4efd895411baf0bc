"""Event records as a terminal shows them: the answer on stdout, everything about it on stderr.

Layer 6 (surface). Shared by `session prompt`, `session events --follow` and `session attach`.
"""

import json

import click

from compozy.cli.output import colour, readable

def admission_line(admission):
    if admission.get("note"):  # a steer that had to interrupt says so: "interrupted the running turn: ..."
        line = f"{admission['note']}; your message runs next as turn {admission['turn_id']}"
    else:
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
        offered = ", ".join(f"{o['option_id']} ({option_label(o)})" for o in options_of(content)) or "none"
        click.echo(f"\n[permission pending: {content.get('request_id')} {content.get('title') or ''}; "
                   f"options: {offered}]", err=True)
    elif kind == "done":
        click.echo("")
        if content.get("stop_reason") != "end_turn":
            click.echo(f"[{content.get('stop_reason')}]", err=True)
    elif kind == "error":
        click.echo(f"\nError: {content.get('error')}", err=True)
    elif kind == "runtime_warning":
        click.echo(colour(f"\n[{warning_text(content)}]", err=True, dim=True), err=True)


def warning_text(content):
    """A runtime_warning in words (a prompt with no output yet: `no output from claude after 40 s; ...`)."""
    return str(content.get("text") or content.get("kind") or "runtime warning")


def options_of(content):
    """The options a person may pick, exactly as the agent offered them (in its order)."""
    options = content.get("options")
    if not isinstance(options, list):
        return []
    return [o for o in options if isinstance(o, dict) and isinstance(o.get("option_id"), str)]


def option_label(option):
    """An option as the agent named it (its ID when it gave no name)."""
    return option.get("name") or option["option_id"]


def matching_option(options, typed):
    """The option a typed answer names: its number, else its name, else its ID (letter case aside); None."""
    if typed.isdigit() and 1 <= int(typed) <= len(options):
        return options[int(typed) - 1]
    wanted = typed.casefold()
    for key in ("name", "option_id"):
        for option in options:
            if str(option.get(key, "")).casefold() == wanted:
                return option
    return None


def permission_prompt(content):
    """A pending request with numbered options, answered by typing the number or the name."""
    content = readable(content)
    options = options_of(content)
    choices = "  ".join(f"{n}) {option_label(o)}" for n, o in enumerate(options, 1)) or "(no options offered)"
    what = content.get("title") or content.get("action") or "a request"
    where = f" {content['resource']}" if content.get("resource") else ""
    return colour(f"\n[permission] {what}{where}: {choices}  (type a number or a name)", err=True, bold=True)


def permission_summary(content):
    """A permission event in a few words, its ID last: what it offers, or the answer it got."""
    if content.get("decision"):
        return f"{chosen_option(content)} {content.get('request_id')}"
    choices = ", ".join(option_label(o) for o in options_of(content)) or "no options"
    return f"{content.get('title') or content.get('action') or ''}: {choices} {content.get('request_id')}"


def answered_permission(content):
    """An answered request as attach shows it."""
    return f"[permission {content['request_id']}: {chosen_option(content)}]"


def chosen_option(content):
    """The option an answer chose (as the agent named it), its decision and who or what chose it."""
    option = content.get("option")
    named = f"{option_label(option)} " if isinstance(option, dict) and option.get("option_id") else ""
    if isinstance(option, dict) and isinstance(option.get("content"), dict):  # a question's form, as answered
        named += json.dumps(readable(option["content"]), ensure_ascii=False) + " "
    return f"{named}({content['decision']}, {content.get('reason') or 'answered'})"


def conversation_line(record):
    """A prompt someone else sent, a stop, a recovery: what an attached terminal shows between answers."""
    kind, content = record["type"], readable(record["content"])
    if kind == "user_message":
        return colour(f"\n> {content.get('text', '')}", err=True, bold=True)
    if kind == "session_stopped":
        return f"\n[session stopped: {content.get('stop_reason') or content.get('reason') or ''}]"
    if kind == "runtime_warning":
        return f"\n[{warning_text(content)}]"
    if kind.startswith("runtime_recovery"):
        return f"\n[{kind}]"
    if kind == "permission" and content.get("decision"):
        return answered_permission(content)
    return None
