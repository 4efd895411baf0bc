"""`compozy inbox`: what needs a person across every session, followed live, and answered.

Layer 6 (surface). The list is GET /api/attention, --follow its event stream (resumed by the last change
seen when the connection drops); `inbox answer` (one of an item's actions) and `session attention` are generated
from the table, with their words here.
"""

import http.client
import json
import time

import click

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.cli.main import choice, cli
from compozy.cli.output import emit, output_option, table
from compozy.errors import CompozyError

RETRY_EVERY = 0.5
ITEM_HEADERS = ("ID", "KIND", "SESSION", "AGE", "SUMMARY")


@cli.group(invoke_without_command=True)
@click.option("--kind", type=choice("attention.list", "kind"), help="only items of this kind")
@click.option("--workspace", help="only items of this workspace (name or ID)")
@click.option("--session", "session_id", help="only items of this session")
@click.option("--status", type=choice("attention.list", "status"), help="resolved: the recent resolutions")
@click.option("--limit", type=click.IntRange(1, 1000), help="at most this many items (default 200)")
@click.option("--follow", "-f", is_flag=True, help="then print each item opened or resolved, until interrupted")
@output_option()
@click.pass_context
def inbox(ctx, follow, output, **query):
    """Everything that needs a person, across sessions: permission requests, an agent's questions, stale or
    stuck sessions, failures, budget warnings; each with the actions that resolve it (`inbox answer ITEM
    ACTION`, a question's free form with `--content JSON`).

    \b
    Example:
      compozy inbox
      compozy inbox --follow -o json
      compozy inbox answer attn_01J9Z3K6Q4V8M2N5P7R9T1W3XY allow
    """
    if ctx.invoked_subcommand is not None:
        return
    obj = ctx.obj
    document = obj.call("attention.list", **query)
    if not follow:
        emit(document, output, _items_text)
        return
    if output == "json":
        click.echo(json.dumps({"type": "inbox", "sequence": document["sequence"], "items": document["items"]}))
    else:
        click.echo(_items_text(document))
    for change in _changes(obj, document["sequence"]):
        click.echo(json.dumps(change) if output == "json" else _change_text(change))


PRESENTATION["attention.answer"] = Presentation(
    "Resolve an open item with one of its actions: a permission request's option ID, a question's choice,\n"
    "`stop` or `dismiss` (the item lists its actions' IDs). A question that is not one choice (a free form)\n"
    "is answered with its `accept` action and --content, the form's fields as a JSON object (the item's\n"
    "action names the form: `compozy inbox -o json`).",
    "compozy inbox answer attn_01J9Z3K6Q4V8M2N5P7R9T1W3XY allow\n"
    "compozy inbox answer attn_01J9Z3K6Q4V8M2N5P7R9T1W3XY accept --content '{\"answer\": \"Ada\"}'",
    lambda d: f"{d['item']['id']}: {d['action']} -> {d['item']['status']}"
    + (f" ({d['item']['resolution']})" if d["item"].get("resolution") else ""),
    {"content": "a question's free form: its fields as a JSON object, with the accept action"},
    metavars={"content": "JSON"})


def _items_text(document):
    rows = [(item["id"], item["kind"], item.get("session_id") or "-", item["created_at"][11:19],
             item["summary"] + "  [" + " | ".join(a["id"] for a in item["actions"]) + "]")
            for item in document["items"]]
    total = document["open"]["total"]
    return table(rows, ITEM_HEADERS, "nothing needs you") + (f"\n({total} open)" if rows else "")


def _change_text(change):
    item = change["item"]
    if change["type"] == "item_opened":
        return f"+ {item['id']}  {item['kind']}  {item.get('session_id') or '-'}  {item['summary']}"
    return f"- {item['id']}  {item['kind']}  resolved: {item['resolution']}"


def _changes(obj, after):
    """Every change after `after`, once each and in order, across reconnections."""
    while True:
        try:
            for event, data in obj.stream("attention.stream", headers={"Last-Event-ID": str(after)}):
                if event in ("item_opened", "item_resolved") and data["sequence"] > after:
                    after = data["sequence"]
                    yield data
        except CompozyError as exc:
            if exc.code != "daemon_unavailable":
                raise
        except (OSError, http.client.HTTPException, ValueError):
            pass
        time.sleep(RETRY_EVERY)


PRESENTATION["session.attention.set"] = Presentation(
    "Opt a session in (or out) of an inbox item for each turn that ends while nobody watches it\n"
    "(no page, attach or follower open); the item resolves once someone looks.",
    "compozy session attention 01J9Z3K6 --turn-finished",
    lambda d: f"{d['attention']['session_id']}: turn_finished {'on' if d['attention']['turn_finished'] else 'off'}",
    {"turn_finished": "whether a turn that ends while nobody follows the session opens an inbox item"},
    defaults={"turn_finished": True})
