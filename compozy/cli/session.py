"""`compozy session ...`: create, read, list and remove sessions.

Layer 6 (surface). Prompt, input, lifecycle and history commands live beside this module. Each
command names its operation in the table (compozy/api.py), which gives the request's path,
query and body; `list`, `get`, `status`, `health` and `inspect` are generated from it
(compozy/cli/generated.py) with their words here.
"""

import os
import sys

import click

from compozy.api import SECRET_ENV, SECRET_HEADER, SESSION_ENV, SESSION_HEADER
from compozy.cli.bulk import for_each, sessions_argument
from compozy.cli.completion import complete_agents, complete_sessions, complete_workspaces
from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import choice, cli
from compozy.cli.output import emit, fence_line, output_option, session_block, session_table
from compozy.errors import CompozyError
from compozy.text import multi_line


@cli.group()
def session():
    """Create, prompt, control and inspect durable sessions.

    A session ID may be shortened to any unique prefix of it, with or without `sess_`.

    \b
    Example:
      compozy session prompt "$(compozy session new -q)" "hello"
      compozy session list
    """


@session.command("new")
@click.option("--agent", "agent_name", help="agent definition to use (default: default_agent in config.toml)",
              shell_complete=complete_agents)
@click.option("--cwd", type=click.Path(file_okay=False), help="workspace directory (default: the current directory)")
@click.option("--workspace", help="a registered workspace name or ID instead of --cwd",
              shell_complete=complete_workspaces)
@click.option("--name", help="optional session name")
@click.option("--parent", "parent_session_id", help="parent session ID (provenance lineage)",
              shell_complete=complete_sessions)
@click.option("--lineage-kind", type=click.Choice(["provenance", "recovery"]), help="with --parent only")
@click.option("--type", type=choice("session.create", "type"), help="session type")
@click.option("--node", help="in a fleet: the node to create it on, or auto (the one with the most free capacity "
              "that has the workspace)")
@click.option("-q", "--quiet", is_flag=True, help="print only the new session's ID")
@output_option()
@click.pass_obj
def new(obj, cwd, quiet, output, **fields):
    """Create a durable session (active, no agent process until the first prompt).

    Run by an agent the daemon bound (COMPOZY_SESSION_ID and COMPOZY_BINDING_SECRET in its
    environment), the new session records that agent's session as its parent unless --parent
    names another, when both share the workspace.

    \b
    Example:
      compozy session new --cwd ~/src/app --name refactor
      compozy session new --workspace app -q
      compozy session new --workspace app --node auto
    """
    if cwd or not fields["workspace"]:
        fields["workspace_path"] = os.path.abspath(cwd or os.getcwd())
    try:
        document = obj.call("session.create", headers=agent_identity(), **fields)
    except CompozyError as exc:
        if cwd or fields["workspace"] or not exc.details.get("reason"):
            raise
        raise CompozyError(exc.code, f"{exc.message}. Without --cwd the current directory "
                           f"({fields['workspace_path']}) is the workspace: run this from the project's folder or "
                           f"pass --cwd PATH", **exc.details) from None
    emit(document, output, lambda d: d["session"]["id"] if quiet else session_block(d["session"]))


def agent_identity():
    """The identity headers of the bound agent this command runs under, if any."""
    if os.environ.get(SESSION_ENV) and os.environ.get(SECRET_ENV):
        return {SESSION_HEADER: os.environ[SESSION_ENV], SECRET_HEADER: os.environ[SECRET_ENV]}
    return None


def _session_detail(resource):
    health = resource["health"]
    return "\n".join([session_block(resource),
                      f"Created       {resource['created_at']}  updated {resource['updated_at']}",
                      fence_line(resource["fences"]),
                      f"Health        {health['state']} ({health['health']}), attachable={health['attachable']}"])


@session.command("remove")
@sessions_argument
@click.option("--workspace", help="remove them from this workspace (name or ID) only")
@click.option("--yes", is_flag=True, help="remove active sessions without asking")
@output_option()
@click.pass_obj
def remove(obj, session_ids, workspace, yes, output):
    """Stop sessions if live and delete their records and history for good. Several IDs: each is removed on
    its own, one line (or -o json result) each; the exit status is 0 only when every removal succeeded.

    An active session is removed only once you confirm (or with --yes; without a terminal to ask
    on, --yes is required).

    \b
    Example:
      compozy session remove sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY
      compozy session remove 01J9Z3K6 01J9Z4P2 --yes
    """
    for_each(obj, session_ids, output, lambda session_id: _remove_one(obj, session_id, workspace, yes),
             lambda d: f"removed {d['removed']['session_id']}" if d["removed"] else "not removed",
             succeeded=lambda d: d["removed"] is not None)


def _remove_one(obj, session_id, workspace, yes):
    read = obj.call("session.get.scoped", session_id=session_id, workspace=workspace) if workspace else \
        obj.call("session.get", session_id=session_id)
    if not yes and not _confirm_removal(read["session"]):
        return {"removed": None}
    return obj.call("session.remove.scoped" if workspace else "session.remove", session_id=session_id,
                    workspace=workspace)


def _confirm_removal(resource):
    """True when the session may go: stopped, or confirmed on a terminal."""
    if resource["state"] == "stopped":
        return True
    what = f"session {resource['id']} is {resource['state']} ({resource['agent_name']}): removing stops it and " \
           f"deletes its history for good"
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise click.UsageError(f"{what}; pass --yes to remove it (there is no terminal to ask on)")
    return click.confirm(f"{what}. Remove it?", default=False, err=True)


LIST_OPTIONS = {"workspace": "workspace name or ID", "parent": "direct children of this session",
                "root": "the whole tree under this root, root included", "agent": "agent name",
                "archive": "archived sessions (default exclude)", "limit": "page size (default 100)",
                "cursor": "next_cursor of the previous page",
                "scope": "local: this daemon's sessions (default); fleet: every node's, from the fleet catalog",
                "--fleet": "the same as --scope fleet: every node's sessions, with a NODE column"}

PRESENTATION.update({
    "session.list": Presentation(
        "List sessions, newest first (a header line on a terminal; -q for IDs only).",
        "compozy session list --state active --limit 20\ncompozy session list -q | xargs -n1 compozy session stop\n"
        "compozy session list --fleet",
        lambda d, quiet: session_table(d["sessions"], quiet, d.get("open_items"), fleet=d.get("scope") == "fleet"),
        LIST_OPTIONS, "session IDs", shorthands={"--fleet": ("scope", "fleet")}),
    "session.get": Presentation(
        "The session resource: state, runtime, lineage, activity, health, supervision.",
        "compozy session get sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY -o json", lambda d: _session_detail(d["session"])),
    "session.get.scoped": Presentation(
        text=lambda d: _session_detail(d["session"]),
        options={"workspace": "read it in this workspace (name or ID); another workspace's session is not found"}),
    "session.status": Presentation(
        "Compact status: health state, lifecycle state, stop reason, failure, attention.",
        text=lambda d: session_block(d["session"])),
    "session.health": Presentation(
        "The health record: state, health, attachable, eligible_for_wake.",
        text=lambda d: "  ".join(f"{k}={v}" for k, v in d["health"].items())),
    "session.inspect": Presentation(
        "Everything about a session for debugging: resource, files, process, queue, recent events, the agent's\n"
        "stderr (its last lines here, the last 64 KiB with -o json) and the usage each turn recorded.",
        text=lambda d: _inspect_text(d)),
})


STDERR_LINES = 20


def _inspect_text(document):
    lines = [session_block(document["session"]), ""]
    lines += [f"{name:<13} {path}" for name, path in document["paths"].items()]
    process = document.get("process")
    if process:
        lines.append(f"Process       pid {process.get('pid')} started {process.get('start_time')}")
    lines.append(f"Queue         {len(document['queue'])} entries")
    lines.append(f"Pending       {len(document['pending_interactions'])} requests")
    for event in document["recent_events"][-10:]:
        lines.append(f"  #{event['sequence']:<5} {event['type']:<26} {event.get('turn_id') or ''}")
    total = (document.get("usage") or {}).get("total") or {}
    if total.get("turns"):
        tokens = " ".join(f"{k}={v}" for k, v in total["tokens"].items())
        costs = " ".join(f"{c['amount']:g} {c['currency']}" for c in total["cost"])
        lines.append(f"Usage         {total['turns']} turns  {tokens}" + (f"  cost {costs}" if costs else ""))
    stderr = document.get("agent_stderr")
    if stderr and stderr.get("text"):
        tail = stderr["text"].strip().splitlines()[-STDERR_LINES:]
        lines.append(f"Agent stderr  ({stderr['source']}, last {len(tail)} lines)")
        lines += [f"  {multi_line(line)}" for line in tail]
    return "\n".join(lines)
