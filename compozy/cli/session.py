"""`compozy session ...`: create, read, list and remove sessions.

Layer 6 (surface). Prompt, input, lifecycle and history commands live beside this module.
"""

import os

import click

from compozy.cli.main import cli
from compozy.cli.output import emit, output_option, session_block, session_line
from compozy.client import path_of


@cli.group()
def session():
    """Create, prompt, control and inspect durable sessions."""


def scoped(obj, session_id, *rest):
    """The workspace-scoped path of a session (one read to learn its workspace)."""
    _, document = obj.client.call("GET", path_of("api", "sessions", session_id))
    return path_of("api", "workspaces", document["session"]["workspace_id"], "sessions", session_id, *rest)


@session.command("new")
@click.option("--agent", "agent_name", default="general", show_default=True, help="agent definition to use")
@click.option("--cwd", type=click.Path(file_okay=False), help="workspace directory (default: the current directory)")
@click.option("--workspace", help="a registered workspace name or ID instead of --cwd")
@click.option("--name", help="optional session name")
@click.option("--parent", "parent_session_id", help="parent session ID (provenance lineage)")
@click.option("--lineage-kind", type=click.Choice(["provenance", "recovery"]), help="with --parent only")
@click.option("--type", "session_type", type=click.Choice(["user", "system", "coordinator"]), help="session type")
@click.option("-q", "--quiet", is_flag=True, help="print only the new session's ID")
@output_option()
@click.pass_obj
def new(obj, agent_name, cwd, workspace, name, parent_session_id, lineage_kind, session_type, quiet, output):
    """Create a durable session (active, no agent process until the first prompt)."""
    body = {"agent_name": agent_name, "name": name, "parent_session_id": parent_session_id,
            "lineage_kind": lineage_kind, "type": session_type}
    if workspace:
        body["workspace"] = workspace
    if cwd or not workspace:
        body["workspace_path"] = os.path.abspath(cwd or os.getcwd())
    _, document = obj.client.call("POST", "/api/sessions", {k: v for k, v in body.items() if v is not None})
    emit(document, output, lambda d: d["session"]["id"] if quiet else session_block(d["session"]))


@session.command("list")
@click.option("--workspace", help="workspace name or ID")
@click.option("--parent", help="direct children of this session")
@click.option("--root", help="the whole tree under this root, root included")
@click.option("--state", type=click.Choice(["starting", "active", "stopping", "stopped"]))
@click.option("--agent", help="agent name")
@click.option("--archive", type=click.Choice(["exclude", "only", "include"]), help="archived sessions (default exclude)")
@click.option("--limit", type=click.IntRange(1, 1000), help="page size (default 100)")
@click.option("--cursor", help="next_cursor of the previous page")
@output_option()
@click.pass_obj
def list_(obj, output, **filters):
    """List sessions, newest first."""
    query = {k: v for k, v in filters.items() if v is not None}
    _, document = obj.client.call("GET", "/api/sessions", query=query)
    emit(document, output, lambda d: "\n".join(session_line(s) for s in d["sessions"]) or "no sessions")


@session.command("status")
@click.argument("session_id")
@output_option()
@click.pass_obj
def status(obj, session_id, output):
    """Compact status: health state, lifecycle state, stop reason, failure, attention."""
    _, document = obj.client.call("GET", scoped(obj, session_id, "status"))
    emit(document, output, lambda d: session_block(d["session"]))


@session.command("remove")
@click.argument("session_id")
@output_option()
@click.pass_obj
def remove(obj, session_id, output):
    """Stop the session if live and delete its record and history for good."""
    _, document = obj.client.call("DELETE", scoped(obj, session_id))
    emit(document, output, lambda d: f"removed {d['removed']['session_id']}")


@session.command("health")
@click.argument("session_id")
@output_option()
@click.pass_obj
def health(obj, session_id, output):
    """The health record: state, health, attachable, eligible_for_wake."""
    _, document = obj.client.call("GET", scoped(obj, session_id, "health"))
    emit(document, output, lambda d: "  ".join(f"{k}={v}" for k, v in d["health"].items()))


@session.command("inspect")
@click.argument("session_id")
@output_option()
@click.pass_obj
def inspect(obj, session_id, output):
    """Everything about a session for debugging: resource, files, process, queue, recent events."""
    _, document = obj.client.call("GET", scoped(obj, session_id, "inspect"))
    emit(document, output, _inspect_text)


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
    return "\n".join(lines)
