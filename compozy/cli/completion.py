"""Shell completion: `compozy completion bash|zsh|fish`, and the values it completes from the daemon.

Layer 6 (surface). Completion runs the CLI with `_COMPOZY_COMPLETE` set (click's protocol); the
completers below ask the daemon for session IDs, agent names and workspace names with a short
timeout and offer nothing when no daemon answers, so a Tab never hangs or prints an error.
"""

import click
from click.shell_completion import CompletionItem, get_completion_class

from compozy.cli.main import Context, cli
from compozy.errors import CompozyError

COMPLETE_VAR = "_COMPOZY_COMPLETE"
SHELLS = ("bash", "zsh", "fish")
COMPLETION_TIMEOUT = 3.0
SESSION_LIMIT = 200


def _context(ctx):
    """A client for the daemon the command line names (--url), else the usual one."""
    context = Context(ctx.find_root().params.get("url"))
    context.timeout = COMPLETION_TIMEOUT
    return context


def _ask(ctx, name, **fields):
    try:
        return _context(ctx).call(name, **fields)
    except (CompozyError, OSError, ValueError, KeyError):
        return None


def complete_sessions(ctx, param, incomplete):
    """Live sessions' IDs starting with what is typed (with or without `sess_`), newest first."""
    page = _ask(ctx, "session.list", limit=SESSION_LIMIT) or {"sessions": []}
    bare = bool(incomplete) and not incomplete.lower().startswith("s")
    items = []
    for session in page["sessions"]:
        shown = session["id"][len("sess_"):] if bare else session["id"]
        if shown.upper().startswith(incomplete.upper()):
            described = " ".join(p for p in (session["state"], session["agent_name"], session.get("name")) if p)
            items.append(CompletionItem(shown, help=described))
    return items


def complete_agents(ctx, param, incomplete):
    document = _ask(ctx, "agent.list") or {"agents": []}
    return [CompletionItem(a["name"], help=a.get("provider")) for a in document["agents"]
            if a["name"].startswith(incomplete)]


def complete_workspaces(ctx, param, incomplete):
    document = _ask(ctx, "workspace.list") or {"workspaces": []}
    return [CompletionItem(w["name"], help=w["path"]) for w in document["workspaces"]
            if w["name"].startswith(incomplete)]


def _typed_session(ctx, param, value):
    """An empty ID is a command that should have printed it failing first (`"$(compozy session new -q)"`)."""
    if value is not None and not value.strip():
        raise click.BadParameter("is empty: if it came from another command (\"$(compozy session new -q)\"), "
                                 "that command failed; its error is above", param_hint="SESSION_ID")
    return value


session_argument = click.argument("session_id", shell_complete=complete_sessions, callback=_typed_session)


@cli.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell):
    """Print the shell completion script for SHELL (commands, flags, session IDs, agents, workspaces).

    \b
    Example:
      compozy completion bash > ~/.local/share/bash-completion/completions/compozy
      compozy completion zsh > "${fpath[1]}/_compozy"
      compozy completion fish > ~/.config/fish/completions/compozy.fish
      eval "$(compozy completion bash)"
    """
    click.echo(get_completion_class(shell)(cli, {}, "compozy", COMPLETE_VAR).source())
