"""The façade's work over every session's stored history at once: exports, search and storage.

Layer 4. One mixin for SessionManager, which supplies the stores, the indexer and the keeper.
"""

from compozy.session.lifecycle.retention import Storage
from compozy.session.records.exporting import SessionExports
from compozy.session.records.finding import SessionSearch


class ArchiveViews(SessionExports, SessionSearch, Storage):
    """Exports (GET S/export), search (GET /api/search) and storage (GET /api/storage, retention)."""
