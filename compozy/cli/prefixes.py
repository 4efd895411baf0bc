"""Session IDs as unique prefixes, as git takes commits: `01M8XD`, `sess_01M8XD` or the whole ID.

Layer 6 (surface). The CLI resolves a prefix against the daemon's catalog (archived sessions
included; in a fleet, the fleet's when this node has no match) before it sends the request; a full ID, or text that cannot be a prefix, goes to the
daemon as typed, so its own answer (`session_not_found`, `invalid_request`) stands.
"""

import re

from compozy.errors import CompozyError
from compozy.ids import is_valid_id

SESSION_FIELDS = ("session_id", "parent", "root", "parent_session_id")  # fields that hold a session ID
_PREFIX = re.compile(r"^(?:sess_)?([0-9A-HJKMNP-TV-Z]{1,26})$", re.IGNORECASE)
PAGE = 1000
SHOWN_CANDIDATES = 10


def prefix_of(text):
    """The ULID prefix a typed session ID stands for, or None when it is a full ID or no prefix at all."""
    if not isinstance(text, str) or is_valid_id(text, "sess"):
        return None
    match = _PREFIX.fullmatch(text)
    return match.group(1).upper() if match else None


def all_session_ids(call, **scope):
    """Every session ID in the catalog (scope="fleet": the fleet's), newest first, archived included (paged)."""
    cursor = None
    while True:
        page = call("session.list", archive="include", limit=PAGE, cursor=cursor, **scope)
        yield from (session["id"] for session in page["sessions"])
        cursor = (page.get("page") or {}).get("next_cursor")
        if not cursor:
            return


def fleet_candidates(prefix, call):
    """The fleet's sessions that start with the prefix, when this daemon is in a fleet (docs/fleet.md)."""
    try:
        return [sid for sid in all_session_ids(call, scope="fleet") if sid[len("sess_"):].startswith(prefix)]
    except CompozyError as exc:
        if exc.code in ("fleet_not_configured", "fleet_catalog_unavailable"):
            return []
        raise


def resolve(text, call):
    """The one session ID that starts with the typed prefix; an ambiguous prefix names its candidates."""
    prefix = prefix_of(text)
    if prefix is None:
        return text
    candidates = [sid for sid in all_session_ids(call) if sid[len("sess_"):].startswith(prefix)]
    if not candidates:
        candidates = fleet_candidates(prefix, call)
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise CompozyError("session_not_found", f"no session ID starts with {text!r}")
    shown = ", ".join(candidates[:SHOWN_CANDIDATES])
    more = f" and {len(candidates) - SHOWN_CANDIDATES} more" if len(candidates) > SHOWN_CANDIDATES else ""
    raise CompozyError("invalid_request", f"{text!r} is ambiguous: it starts {len(candidates)} session IDs "
                       f"({shown}{more}); type more of it", candidates=candidates[:SHOWN_CANDIDATES])
