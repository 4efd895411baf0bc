"""`compozy session stop|rename|archive|unarchive|repair`.

Layer 6 (surface).
"""

import sys

import click

from compozy.cli.completion import session_argument
from compozy.cli.output import emit, output_option, session_block
from compozy.cli.session import session
from compozy.errors import CompozyError


@session.command("stop")
@session_argument
@click.option("--wait", is_flag=True, help="wait for the verified outcome and print it")
@output_option()
@click.pass_obj
def stop(obj, session_id, wait, output):
    """Stop the session: cooperative cancel, then signals, with exit verified.

    \b
    Example:
      compozy session stop sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --wait
    """
    document = obj.call("session.stop", session_id=session_id, wait=wait)
    if wait:
        emit(document, output, _outcome_text)
        sys.exit(0 if document.get("verified") else 1)
    document = obj.call("session.get", session_id=session_id)
    emit(document, output, lambda d: session_block(d["session"]))


@session.command("rename")
@session_argument
@click.argument("name")
@output_option()
@click.pass_obj
def rename(obj, session_id, name, output):
    """Name the session; an explicit name always wins over an auto title.

    \b
    Example:
      compozy session rename sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY "release notes"
    """
    document = obj.call("session.rename", session_id=session_id, name=name)
    emit(document, output, lambda d: session_block(d["session"]))


def _outcome_text(outcome):
    text = f"{outcome['state']} (verified={outcome['verified']}, escalated={outcome['escalated']}, " \
           f"phase={outcome['phase']}, after {outcome['stopped_after']}s)"
    return text + (f"\nattention: {outcome['attention']}" if outcome.get("attention") else "")


@session.command("archive")
@session_argument
@click.option("--stop", is_flag=True, help="stop a running session first, then archive it")
@output_option()
@click.pass_obj
def archive(obj, session_id, stop, output):
    """Hide a stopped session from the default catalog; its history stays readable.

    \b
    Example:
      compozy session archive sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --stop
    """
    try:
        document = obj.call("session.archive", session_id=session_id, stop=stop or None)
    except CompozyError as exc:
        if exc.code != "session_not_stopped":
            raise
        sid = obj.resolve_session(session_id)
        raise CompozyError(exc.code, f"session {sid} is still running: only a stopped session is archived; pass "
                           f"--stop to stop it first (`compozy session archive --stop {sid}`)", **exc.details) from None
    emit(document, output, lambda d: f"archived {d['session']['id']}")


@session.command("unarchive")
@session_argument
@output_option()
@click.pass_obj
def unarchive(obj, session_id, output):
    """Return an archived session to the default catalog (it stays stopped).

    \b
    Example:
      compozy session unarchive sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY
    """
    document = obj.call("session.unarchive", session_id=session_id)
    emit(document, output, lambda d: f"unarchived {d['session']['id']}")


@session.command("repair")
@session_argument
@click.option("--dry-run", is_flag=True, help="report what would be appended without writing")
@click.option("--force", is_flag=True, help="repair even when the stop reason is not agent_crashed or error")
@output_option()
@click.pass_obj
def repair(obj, session_id, dry_run, force, output):
    """Terminalize an interrupted last turn by appending events (never rewriting).

    \b
    Example:
      compozy session repair sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --dry-run
    """
    document = obj.call("session.repair", session_id=session_id, dry_run=dry_run, force=force)
    emit(document, output, _repair_text)


def _repair_text(document):
    result = document["repair"]
    if not result["actions"]:
        return "nothing to repair"
    verb = "would append" if result["dry_run"] else "appended"
    return "\n".join(f"{verb}: {a['action']} {a.get('tool_call_id') or ''}".rstrip() for a in result["actions"])
