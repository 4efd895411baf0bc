"""Several sessions in one command: `compozy session stop|archive|remove ID [ID ...]`.

Layer 6 (surface). Each ID is resolved (a unique prefix), addressed through its own workspace and sent its
own request, whatever happened to the others, as the page's bulk actions do. One ID prints what the command
always printed; several print one line per session (what was done on stdout, a refusal as `Error: <code>:
<id>: <message>` on stderr) and, with -o json, {"results": [...]}: one result per session, in the order
given. The exit status is 0 only when every session succeeded.
"""

import json
import sys

import click

from compozy.cli.completion import complete_sessions
from compozy.cli.output import colour, emit
from compozy.errors import CompozyError
from compozy.text import one_line

sessions_argument = click.argument("session_ids", metavar="SESSION_ID...", nargs=-1, required=True,
                                   shell_complete=complete_sessions)


def for_each(obj, typed_ids, output, request, text, line=None, succeeded=None):
    """request(session_id) -> the document of one session's request; text(document): what one ID prints;
    line(document): a session's line among several (default: text); succeeded(document): False makes it a
    failure (a stop that could not be verified)."""
    succeeded = succeeded or (lambda document: True)
    if len(typed_ids) == 1:
        document = request(typed_ids[0])
        emit(document, output, text)
        sys.exit(0 if succeeded(document) else 1)
    results, seen = [], set()
    for typed in typed_ids:
        result = _one(obj, typed, request, succeeded)
        if result["session_id"] in seen:
            continue  # the same session named twice is handled once
        seen.add(result["session_id"])
        results.append(result)
        if output != "json":
            _print_line(result, line or text)
    if output == "json":
        click.echo(json.dumps({"results": results}, indent=2))
    sys.exit(0 if all(result["ok"] for result in results) else 1)


def _one(obj, typed, request, succeeded):
    session_id = typed
    try:
        session_id = obj.resolve_session(typed)
        document = request(session_id)
    except CompozyError as exc:
        return {"session_id": session_id, "ok": False, "error": exc.to_body()}
    return {"session_id": session_id, "ok": bool(succeeded(document)), **document}


def _print_line(result, line):
    if not result["ok"] and "error" in result:
        error = result["error"]
        click.echo(colour(f"Error: {error['code']}: {one_line(result['session_id'])}: {one_line(error['error'])}",
                          err=True, fg="red"), err=True)
    else:
        emit(result, "text", line)
