"""meta.json: a session's durable metadata, written atomically, upgraded on read without rewriting.

Layer 2. The session directory is the source of truth; the catalog row is rebuilt from this file.
"""

import copy
import json

from compozy.paths import write_private_json
from compozy.store.flusher import FLUSHER

SCHEMA = "compozy.session_meta.v1"


class MetaError(Exception):
    """meta.json is missing, unreadable or not a session document."""


def read_meta(path):
    """The document as stored, upgraded in memory; the file itself is never rewritten here."""
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except FileNotFoundError:
        raise MetaError(f"{path}: missing") from None
    except (OSError, ValueError) as exc:
        raise MetaError(f"{path}: unreadable: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("id"), str) \
            or not isinstance(document.get("lineage") or {}, dict):
        raise MetaError(f"{path}: not a session document")
    return upgrade(document)


def write_meta(path, document):
    """Atomic at once (temp file, rename); the fsync of the file and its folder follows in a batch."""
    stored = dict(document, schema=SCHEMA)
    write_private_json(path, stored, sync=False)
    FLUSHER.defer(path)


def upgrade(document):
    """Sessions stored before lineage kinds existed read spawn, provenance or ""."""
    lineage = document.get("lineage") or {}
    if "kind" in lineage:
        return document
    upgraded = copy.deepcopy(document)
    lineage = dict(lineage)
    if document.get("type") == "spawned" or lineage.get("spawn_role"):
        lineage["kind"] = "spawn"
    elif lineage.get("parent_session_id"):
        lineage["kind"] = "provenance"
    else:
        lineage["kind"] = ""
    lineage.setdefault("root_session_id", lineage.get("parent_session_id") or document["id"])
    lineage.setdefault("spawn_depth", 0)
    upgraded["lineage"] = lineage
    return upgraded
