"""The façade's search over every session (mixed into SessionManager, which supplies workspaces and the
indexer, compozy.session.records.indexer).

Layer 4. The query is FTS5's own syntax (words, "phrases", prefix*, AND, OR, NOT); one SQLite cannot parse
is answered invalid_query, with SQLite's words for what is wrong.
"""

from datetime import datetime, timezone

from compozy import validate as v
from compozy.errors import CompozyError, invalid
from compozy.store.searchindex import QuerySyntaxError

DEFAULT_LIMIT = 20


def search_filters(query, workspaces):
    """The index's filters from a query (validated: invalid_request, workspace_not_found)."""
    unknown = sorted(set(query) - set(v.SEARCH_QUERY))
    if unknown:
        raise invalid(f"unknown parameter(s): {', '.join(unknown)}", filters=unknown)
    equal = {}
    if query.get("workspace") is not None:
        equal["s.workspace_id"] = workspaces.resolve(query["workspace"])["id"]
    if query.get("agent"):
        equal["s.agent_name"] = query["agent"]
    if query.get("kind") is not None:
        if query["kind"] not in v.SEARCH_KINDS:
            raise invalid(f"kind must be one of {', '.join(v.SEARCH_KINDS)}", field="kind")
        equal["m.kind"] = query["kind"]
    archive = query.get("archive") or "include"
    if archive not in ("exclude", "only", "include"):
        raise invalid("archive must be exclude, only or include", field="archive")
    return {"equal": equal, "since": _since(query.get("since")), "archived": archive,
            "rewound": bool(v.query_bool(query.get("rewound"), "rewound"))}


def _since(value):
    """An ISO 8601 time (a date alone is its midnight UTC) as the index's timestamps spell it."""
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise invalid("since must be an ISO 8601 time, e.g. 2026-01-31 or 2026-01-31T08:00:00Z",
                      field="since") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class SessionSearch:
    def search(self, query=None):
        """Messages of every session matching an FTS5 query, best first, a page at a time."""
        query = dict(query or {})
        text = (query.get("q") or "").strip()
        if not text:
            raise invalid("q is required: the words to find", field="q")
        filters = search_filters(query, self.workspaces)
        limit = v.query_int(query.get("limit"), "limit", 1, 100) or DEFAULT_LIMIT
        offset = v.query_int(query.get("cursor"), "cursor", 0, 10**9) or 0
        try:
            hits, has_more, order = self.indexer.index.search(text, filters, limit, offset)
        except QuerySyntaxError as exc:
            raise CompozyError("invalid_query", f"the query is not valid FTS5 syntax ({exc}); quote words "
                               'with punctuation: "like-this"', query=text) from None
        page = {"limit": limit, "has_more": has_more, "next_cursor": str(offset + limit) if has_more else None,
                "order": order}
        return {"search": {"hits": hits, "page": page, "index": self.search_index_status()}}

    def reindex_search(self):
        """Drop the index and build it again from every session's events (in the background)."""
        self.indexer.reindex()
        return {"index": self.search_index_status()}

    def search_index_status(self):
        return {**self.indexer.index.size(), "pending_sessions": self.indexer.pending()}
