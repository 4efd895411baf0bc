"""`compozy search`: find messages across every session; `compozy search --reindex` rebuilds the index.

Layer 6 (surface).
"""

import click

from compozy.cli.main import choice, cli
from compozy.cli.output import emit, output_option
from compozy.text import one_line


@cli.command("search")
@click.argument("q", required=False)
@click.option("--workspace", help="one workspace (name or ID)")
@click.option("--agent", help="sessions of one agent")
@click.option("--since", help="messages at or after this time (ISO 8601: 2026-01-31 or 2026-01-31T08:00:00Z)")
@click.option("--kind", type=choice("search.query", "kind"), help="one kind of message")
@click.option("--archive", type=choice("search.query", "archive"),
              help="archived sessions: include (default), exclude or only")
@click.option("--rewound", is_flag=True, help="also what a rewind archived")
@click.option("--limit", type=click.IntRange(1, 100), help="hits a page (default 20)")
@click.option("--cursor", help="the page after an earlier one (its page.next_cursor)")
@click.option("--reindex", is_flag=True, help="drop the index and build it again from every session's events "
              "(in the background); prints the index's size")
@output_option()
@click.pass_obj
def search(obj, q, output, reindex, **filters):
    """Find messages of every session: words, "a phrase", prefix*, AND, OR, NOT.

    \b
    Example:
      compozy search 'migration AND postgres'
      compozy search '"connection refused"' --workspace api --since 2026-01-01
      compozy search 'flak*' --kind user -o json
      compozy search --reindex
    """
    if reindex:
        _reindex(obj, output)
        return
    if not q:
        raise click.UsageError("search needs a query, e.g. compozy search 'migration AND postgres'")
    document = obj.call("search.query", q=q, **{k: (v or None) for k, v in filters.items()})
    emit(document, output, _hits)


def _hits(document):
    hits = document["search"]["hits"]
    lines = [f"{hit['session_id']}  #{hit['sequence']:<6} {hit['kind']:<10} {one_line(hit['snippet'])}" for hit in hits]
    if document["search"]["page"]["has_more"]:
        lines.append(f"more: --cursor {document['search']['page']['next_cursor']}")
    return "\n".join(lines) or "no matches"


def _reindex(obj, output):
    document = obj.call("search.reindex")
    index = document["index"]
    emit(document, output, lambda d: f"reindexing {index['pending_sessions']} sessions; the index holds "
                                     f"{index['messages']} messages in {index['bytes']} bytes")
