"""`compozy session events|history`: durable reads of the event store.

Layer 6 (surface).
"""

import click

from compozy.cli.output import emit, output_option
from compozy.cli.session import scoped, session


@session.command("events")
@click.argument("session_id")
@click.option("--last", "limit", type=click.IntRange(1, 1000), help="the newest N events (default 200)")
@click.option("--after", "after_sequence", type=click.IntRange(0), help="the oldest events after this sequence")
@click.option("--before", "before_sequence", type=click.IntRange(1), help="events before this sequence")
@click.option("--turn", "turn_id", help="one turn's events")
@click.option("--type", "types", help="comma-separated event types")
@click.option("--archive", type=click.Choice(["active", "archived", "all"]), help="archived events (default active)")
@output_option()
@click.pass_obj
def events(obj, session_id, output, types, **filters):
    """Event records in ascending sequence."""
    query = {k: v for k, v in {**filters, "type": types}.items() if v is not None}
    _, document = obj.client.call("GET", scoped(obj, session_id, "events"), query=query)
    emit(document, output, lambda d: "\n".join(_event_line(e) for e in d["events"]) or "no events")


def _event_line(event):
    content = event["content"]
    detail = content.get("text") or content.get("stop_reason") or content.get("error") or \
        (content.get("marker") or {}).get("summary") or content.get("title") or \
        " ".join(str(content[k]) for k in ("tool_call_id", "status", "request_id", "decision") if content.get(k))
    return f"#{event['sequence']:<6} {event['timestamp'][11:23]}  {event['type']:<26} {str(detail)[:80]}"


@session.command("history")
@click.argument("session_id")
@click.option("--archive", type=click.Choice(["active", "archived", "all"]), help="archived messages (default active)")
@output_option()
@click.pass_obj
def history(obj, session_id, archive, output):
    """The conversation: one message per prompt and per answer."""
    query = {"archive": archive} if archive else None
    _, document = obj.client.call("GET", scoped(obj, session_id, "history"), query=query)
    emit(document, output, lambda d: "\n\n".join(f"[{m['role']}] {m['text']}" for m in d["messages"]) or "no messages")
