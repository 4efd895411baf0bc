"""The usage ledger's reads on the façade: sums across the daemon, and one session's turns and totals.

Layer 4 (a SessionManager mixin, like compozy.session.records.reading).
"""

from compozy.session.turns.ledger import grouped, moment, total_of, turn_document
from compozy.store.ledger import GROUPS

MAX_LINEAGE = 64
NULLABLE = ("provider", "model")  # ledger columns a group's key reads as '' when they are NULL  # sources followed back from a continued or forked session


class UsageViews:
    def usage_summary(self, query=None):
        """Sums of the ledger by session, workspace, agent, provider, model or day, over [since, until)."""
        now = self.services.clock.wall()
        since = moment(query["since"], "since", now) if query.get("since") else None
        until = moment(query["until"], "until", now) if query.get("until") else None
        where, params = ["1"], []
        if query.get("workspace") is not None:
            where.append("workspace_id = ?")
            params.append(self.workspaces.resolve(query["workspace"])["id"])
        if query.get("agent") is not None:
            where.append("agent = ?")
            params.append(query["agent"])
        ledger, group, condition = self.catalog.ledger, query.get("group_by"), " AND ".join(where)
        if group and query.get("limit"):  # the biggest groups only: chosen in SQL, then summed alone
            keys, count = ledger.biggest(group, query["limit"], since, until, condition, params)
            column = GROUPS[group] if group not in NULLABLE else f"COALESCE({GROUPS[group]}, '')"
            rows = ledger.sums(group, since, until, f"{condition} AND {column} IN ({', '.join('?' * len(keys)) or 'NULL'})",
                               [*params, *keys])
            found = {document["key"]: document for document in grouped(rows)}
            total = total_of(ledger.sums(None, since, until, condition, params))
            return {"usage": {"group_by": group, "since": since, "until": until,
                              "groups": [found[key] for key in keys if key in found], "groups_count": count,
                              "total": total}}
        rows = ledger.sums(group, since, until, condition, params)
        return {"usage": {"group_by": group, "since": since, "until": until,
                          "groups": grouped(rows) if group else None, "total": total_of(rows)}}

    def session_usage(self, session_id, workspace, query=None):
        """A session's turns in the ledger and their sums; lineage=true adds the sessions it was continued
        or forked from (each started at zero), back to the first."""
        record = self._record(session_id, workspace)
        sessions = [record.id] + (self._sources(record) if query.get("lineage") else [])
        ledger = self.catalog.ledger
        turns = [turn_document(row) for sid in sessions for row in ledger.turns(sid)]
        total = total_of(ledger.sums(None, where=f"session_id IN ({', '.join('?' * len(sessions))})", params=sessions,
                                      by_session=True))
        return {"usage": {"session_id": record.id, "sessions": sessions, "turns": turns, "total": total}}

    def _sources(self, record):
        found, derivation = [], record.derivation or {}
        while derivation.get("source_session_id") and len(found) < MAX_LINEAGE:
            source = derivation["source_session_id"]
            found.append(source)
            document = self.catalog.session_doc(source)
            derivation = (document or {}).get("derivation") or {}
        return found
