"""`compozy session stop|rename|archive|unarchive|repair`.

Layer 6 (surface).
"""

import click

from compozy.cli.bulk import for_each, sessions_argument
from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.output import output_option, session_block
from compozy.cli.session import session
from compozy.errors import CompozyError


@session.command("stop")
@sessions_argument
@click.option("--wait", is_flag=True, help="wait for the verified outcome and print it")
@output_option()
@click.pass_obj
def stop(obj, session_ids, wait, output):
    """Stop sessions: cooperative cancel, then signals, with exit verified. Several IDs: each is stopped on its
    own, one line (or -o json result) each; the exit status is 0 only when every stop succeeded.

    \b
    Example:
      compozy session stop sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --wait
      compozy session stop 01J9Z3K6 01J9Z4P2 01J9Z5M1
    """
    def request(session_id):
        document = obj.call("session.stop", session_id=session_id, wait=wait)
        return document if wait else obj.call("session.get", session_id=session_id)

    if wait:
        for_each(obj, session_ids, output, request, _outcome_text,
                 line=lambda d: f"{d['session_id']}: {_outcome_text(d)}", succeeded=lambda d: d.get("verified"))
    else:
        for_each(obj, session_ids, output, request, lambda d: session_block(d["session"]),
                 line=lambda d: f"{_stop_verb(d['session'])} {d['session_id']}")


def _stop_verb(session):
    return "stopped" if session["state"] == "stopped" else f"stopping ({session['state']})"


def _outcome_text(outcome):
    text = f"{outcome['state']} (verified={outcome['verified']}, escalated={outcome['escalated']}, " \
           f"phase={outcome['phase']}, after {outcome['stopped_after']}s)"
    return text + (f"\nattention: {outcome['attention']}" if outcome.get("attention") else "")


@session.command("archive")
@sessions_argument
@click.option("--stop", is_flag=True, help="stop a running session first, then archive it")
@output_option()
@click.pass_obj
def archive(obj, session_ids, stop, output):
    """Hide stopped sessions from the default catalog; their history stays readable. Several IDs, running and
    stopped together with --stop: each is archived on its own, one line (or -o json result) each.

    \b
    Example:
      compozy session archive sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --stop
      compozy session archive --stop 01J9Z3K6 01J9Z4P2
    """
    for_each(obj, session_ids, output, lambda session_id: _archive_one(obj, session_id, stop),
             lambda d: f"archived {d['session']['id']}")


def _archive_one(obj, session_id, stop):
    try:
        return obj.call("session.archive", session_id=session_id, stop=stop or None)
    except CompozyError as exc:
        if exc.code != "session_not_stopped":
            raise
        raise CompozyError(exc.code, f"session {session_id} is still running: only a stopped session is archived; "
                           f"pass --stop to stop it first (`compozy session archive --stop {session_id}`)",
                           **exc.details) from None


PRESENTATION.update({
    "session.rename": Presentation(
        "Name the session; an explicit name always wins over an auto title.",
        'compozy session rename sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY "release notes"',
        lambda d: session_block(d["session"])),
    "session.unarchive": Presentation(
        "Return an archived session to the default catalog (it stays stopped).",
        text=lambda d: f"unarchived {d['session']['id']}"),
    "session.repair": Presentation(
        "Terminalize an interrupted last turn by appending events (never rewriting).",
        "compozy session repair sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --dry-run", lambda d: _repair_text(d),
        {"dry_run": "report what would be appended without writing",
         "force": "repair even when the stop reason is not agent_crashed or error"}),
})


def _repair_text(document):
    result = document["repair"]
    if not result["actions"]:
        return "nothing to repair"
    verb = "would append" if result["dry_run"] else "appended"
    return "\n".join(f"{verb}: {a['action']} {a.get('tool_call_id') or ''}".rstrip() for a in result["actions"])
