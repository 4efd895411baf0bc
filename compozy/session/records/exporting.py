"""The façade's exports of a session (mixed into SessionManager, which supplies _record, _resource,
store, live and services).

Layer 4.
"""

import io
import json
import zipfile

from compozy.errors import invalid
from compozy.serialize import Export
from compozy.session.records.exporthtml import html_document
from compozy.session.records.exports import FORMATS, export_format, jsonl, markdown, transcript_entries
from compozy.session.records.live import read_secrets
from compozy.states import SessionState


class SessionExports:
    def export_session(self, session_id, workspace, query=None):
        """The session as one file (md, html or jsonl), redacted of every secret a read knows."""
        name = export_format(query)
        record = self._record(session_id, workspace)
        log = self.store.events(record)
        secrets = read_secrets(self.services, self.live.get(record.id))
        if name == "jsonl":
            text = jsonl(log.read_all(archive="all"), secrets)
        else:
            resource = self._resource(record)
            entries = transcript_entries(log.read_all(), log.usage(), secrets)
            text = markdown(resource, entries) if name == "md" else html_document(resource, entries)
        return Export(record.id, name, FORMATS[name], f"{record.id}.{name}", text)

    def export_archive(self, query=None):
        """A workspace's sessions, or a lineage's, as one zip: <session ID>.<format> each and sessions.json."""
        query = dict(query or {})
        name = export_format({k: v for k, v in query.items() if k == "format"})
        unknown = sorted(set(query) - {"workspace", "lineage", "format"})
        if unknown or (query.get("workspace") is None) == (query.get("lineage") is None):
            raise invalid("name a workspace or a lineage (a session ID), one of the two", filters=unknown)
        records = self.store.in_states(list(SessionState))
        if query.get("lineage") is not None:
            root = self._record(query["lineage"])
            chosen, label = lineage_of(root, records), root.id
        else:
            workspace_id = self.workspaces.resolve(query["workspace"])["id"]
            chosen, label = sorted((r for r in records if r.workspace_id == workspace_id), key=lambda r: r.id), \
                workspace_id
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for record in chosen:
                archive.writestr(f"{record.id}.{name}", self.export_session(record.id, None, {"format": name}).text)
            archive.writestr("sessions.json", json.dumps([self._resource(r) for r in chosen], indent=2))
        return Export(label, "zip", "application/zip", f"{label}-{name}.zip", buffer.getvalue())


def lineage_of(root, records):
    """The root and every session descending from it: children (lineage parent), continues and forks
    (derivation source), however deep; in ID order."""
    children = {}
    for record in records:
        for source in ((record.lineage or {}).get("parent_session_id"), (record.derivation or {}).get("source_session_id")):
            if source:
                children.setdefault(source, set()).add(record.id)
    chosen, pending = {root.id}, [root.id]
    while pending:
        for child in children.get(pending.pop(), ()):
            if child not in chosen:
                chosen.add(child)
                pending.append(child)
    return sorted((r for r in records if r.id in chosen), key=lambda r: r.id)
