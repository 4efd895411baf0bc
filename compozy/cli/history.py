"""`compozy session events|history`: durable reads of the event store.

Layer 6 (surface).
"""

import json
import sys

import click

from compozy.cli.completion import session_argument
from compozy.cli.follow import Follower
from compozy.cli.main import choice
from compozy.cli.output import emit, output_option
from compozy.cli.render import permission_summary
from compozy.cli.session import session
from compozy.text import one_line


@session.command("events")
@session_argument
@click.option("--last", "limit", type=click.IntRange(1, 1000), help="the newest N events (default 200)")
@click.option("--after", "after_sequence", type=click.IntRange(0), help="the oldest events after this sequence")
@click.option("--before", "before_sequence", type=click.IntRange(1), help="events before this sequence")
@click.option("--turn", "turn_id", help="one turn's events")
@click.option("--type", help="comma-separated event types")
@click.option("--archive", type=choice("session.events", "archive"), help="archived events (default active)")
@click.option("-f", "--follow", is_flag=True, help="then print events as they are committed, until interrupted "
              "(-o json: one record a line)")
@output_option()
@click.pass_obj
def events(obj, output, follow, **filters):
    """Event records in ascending sequence.

    \b
    Example:
      compozy session events sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --last 50 --type agent_message,done
      compozy session events 01J9Z3K6 --follow
    """
    if follow and (filters["before_sequence"] is not None or filters["archive"] not in (None, "active")):
        raise click.UsageError("--follow reads what comes next: not with --before or --archive")
    if not follow:
        document = obj.call("session.events", **filters)
        emit(document, output, lambda d: "\n".join(_event_line(e) for e in d["events"]) or "no events")
        return
    try:
        _follow(obj, output, filters)
    except KeyboardInterrupt:
        sys.exit(130)


def _follow(obj, output, filters):
    # The session first: its last sequence is where following starts when the read shows nothing.
    follower = Follower(obj, obj.call("session.get", session_id=filters["session_id"])["session"])
    shown = obj.call("session.events", **filters)["events"]
    if shown:
        follower.last = shown[-1]["sequence"]  # what a filter left out before it was not wanted either
    wanted = set(filters["type"].split(",")) if filters["type"] else None
    for record in shown:
        _print_line(record, output)
    for record in follower.records():
        if (wanted is None or record["type"] in wanted) and filters["turn_id"] in (None, record.get("turn_id")):
            _print_line(record, output)


def _print_line(record, output):
    click.echo(json.dumps(record, separators=(",", ":")) if output == "json" else _event_line(record))


def _event_line(event):
    content = event["content"]
    detail = permission_summary(content) if event["type"] == "permission" else _detail(content)
    return f"#{event['sequence']:<6} {event['timestamp'][11:23]}  {event['type']:<26} {one_line(detail)[:80]}"


def _detail(content):
    return content.get("text") or content.get("stop_reason") or content.get("error") or \
        (content.get("marker") or {}).get("summary") or content.get("title") or \
        " ".join(str(content[k]) for k in ("tool_call_id", "status", "request_id") if content.get(k))


@session.command("history")
@session_argument
@click.option("--limit", type=click.IntRange(1, 1000), help="messages a page (default 200: the newest)")
@click.option("--before", "before_sequence", type=click.IntRange(0),
              help="messages that begin before this sequence (a page's page.before_sequence: the older page)")
@click.option("--after", "after_sequence", type=click.IntRange(0),
              help="the oldest messages that begin after this sequence")
@click.option("--all", "every", is_flag=True, help="every message: page back until the first")
@click.option("--archive", type=choice("session.history", "archive"), help="archived messages (default active)")
@output_option()
@click.pass_obj
def history(obj, output, every, **query):
    """The conversation: one message per prompt and per answer, a page at a time.

    \b
    Example:
      compozy session history sess_01J9Z3K6Q4V8M2N5P7R9T1W3XY --archive all
      compozy session history 01J9Z3K6 --limit 20 --before 4210
      compozy session history 01J9Z3K6 --all
    """
    if every and query["after_sequence"] is not None:
        raise click.UsageError("--all pages back from --before (or the newest): not with --after")
    document = obj.call("session.history", **query)
    if every:
        document = _every_page(obj, query, document)
    emit(document, output, _messages_text)


def _messages_text(document):
    """Each message under its role and ID: user messages' IDs are what rewind and fork take."""
    return "\n\n".join(f"[{m['role']} {'carried from the source' if m.get('carried') else m['message_id']}] "
                       f"{m['text']}" for m in document["messages"]) or "no messages"


def _every_page(obj, query, document):
    """The older pages in front of this one, until the first message (-o json: one document)."""
    messages, page = document["messages"], document["page"]
    while page["has_more"]:
        older = obj.call("session.history", **{**query, "before_sequence": page["before_sequence"]})
        messages = older["messages"] + messages
        page = {**page, "has_more": older["page"]["has_more"], "before_sequence": older["page"]["before_sequence"]}
    return {"messages": messages, "page": page}
