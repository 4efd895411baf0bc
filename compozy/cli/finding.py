"""`compozy search`: find messages across every session; `compozy search --reindex` rebuilds the index.

Layer 6 (surface). Generated from the table (compozy/cli/generated.py): search.query, and search.reindex
through its selector --reindex; their words are here.
"""

from compozy.cli.generated import PRESENTATION, Presentation
from compozy.text import one_line


def _hits(document):
    hits = document["search"]["hits"]
    lines = [f"{hit['session_id']}  #{hit['sequence']:<6} {hit['kind']:<10} {one_line(hit['snippet'])}" for hit in hits]
    if document["search"]["page"]["has_more"]:
        lines.append(f"more: --cursor {document['search']['page']['next_cursor']}")
    return "\n".join(lines) or "no matches"


def _reindexing(document):
    index = document["index"]
    return f"reindexing {index['pending_sessions']} sessions; the index holds {index['messages']} messages in " \
           f"{index['bytes']} bytes"


PRESENTATION.update({
    "search.query": Presentation(
        'Find messages of every session: words, "a phrase", prefix*, AND, OR, NOT.',
        "compozy search 'migration AND postgres'\n"
        "compozy search '\"connection refused\"' --workspace api --since 2026-01-01\n"
        "compozy search 'flak*' --kind user -o json\n"
        "compozy search --reindex", _hits,
        {"workspace": "one workspace (name or ID)", "agent": "sessions of one agent",
         "since": "messages at or after this time (ISO 8601: 2026-01-31 or 2026-01-31T08:00:00Z)",
         "kind": "one kind of message", "archive": "archived sessions: include (default), exclude or only",
         "rewound": "also what a rewind archived", "limit": "hits a page (default 20)",
         "cursor": "the page after an earlier one (its page.next_cursor)"}),
    "search.reindex": Presentation(
        text=_reindexing, options={"--reindex": "drop the index and build it again from every session's events (in "
                                                "the background); prints the index's size"}),
})
