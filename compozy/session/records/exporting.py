"""The façade's exports of a session (mixed into SessionManager, which supplies _record, _resource,
store, live and services).

Layer 4.
"""

from compozy.serialize import Export
from compozy.session.records.exporthtml import html_document
from compozy.session.records.exports import FORMATS, export_format, jsonl, markdown, transcript_entries
from compozy.session.records.live import read_secrets


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
