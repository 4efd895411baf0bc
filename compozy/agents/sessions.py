"""The reference agent's per-session state: config and history, saved as one JSON file per session in the
state folder, plus the crash markers kept beside them.
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from compozy.agents.directives import crash_marker_key

if TYPE_CHECKING:
    from compozy.agents.tools import Connection
    from compozy.agents.turn import Turn

SESSION_ID_PATTERN = re.compile(r"ref_[0-9a-f]{32}")
PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600  # the state holds conversations: owner-only, like the daemon's home


def private_dir(path: Path) -> None:
    path.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    os.chmod(path, PRIVATE_DIR)  # a folder an older version created 0755 is narrowed


@dataclass
class Session:
    session_id: str
    cwd: str
    config: dict
    history: list = field(default_factory=list)
    mode: str = "default"  # the session mode (with COMPOZY_REFERENCE_MODES)
    closes: int = 0  # how many times session/close freed it
    cost: float = 0.0  # the cumulative cost [usage] reports
    turn: Turn | None = None
    mcp_servers: list = field(default_factory=list)  # offered by the client; never saved (they carry secrets)
    tools: Connection | None = None
    tools_lock: threading.Lock = field(default_factory=threading.Lock)


def valid_history(entries) -> list:
    entries = entries if isinstance(entries, list) else []
    return [entry for entry in entries if isinstance(entry, dict) and isinstance(entry.get("text"), str)
            and entry.get("role") in ("user", "agent") and isinstance(entry.get("message_id"), str)]


class SessionStore:
    """Reads and writes session state under the agent's lock, shared so callers can group changes."""

    def __init__(self, state_dir: Path, lock: threading.RLock):
        self.state_dir, self.lock = state_dir, lock

    def read(self, session_id) -> dict | None:
        """The stored state of a session, or None when it is missing, unreadable or not an object."""
        path = self.state_path(session_id) if isinstance(session_id, str) else None
        try:
            stored = json.loads(path.read_text(encoding="utf-8")) if path else None
        except (OSError, ValueError):
            stored = None
        return stored if isinstance(stored, dict) else None

    def state_path(self, session_id: str) -> Path | None:
        if not SESSION_ID_PATTERN.fullmatch(session_id):
            return None  # never let a client-chosen id escape the state folder
        return self.state_dir / f"{session_id}.json"

    def save(self, session: Session) -> None:
        """Atomically persist cwd, config values and history (tmp file + rename)."""
        with self.lock:
            state = {"sessionId": session.session_id, "cwd": session.cwd, "config": session.config,
                     "history": session.history, "mode": session.mode, "closes": session.closes,
                     "cost": session.cost}
            path = self.state_path(session.session_id)
            private_dir(path.parent)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
            with os.fdopen(fd, "w", encoding="ascii") as handle:
                handle.write(json.dumps(state, ensure_ascii=True))
            os.chmod(tmp, PRIVATE_FILE)  # a leftover temp file from an older run keeps its old mode
            os.replace(tmp, path)

    def claim_crash_marker(self, session_id: str, prompt_text: str) -> bool:
        """True only the first time; the marker is on disk before the caller kills the process."""
        marker_dir = self.state_dir / "crash-markers"
        private_dir(self.state_dir)
        private_dir(marker_dir)
        try:
            descriptor = os.open(marker_dir / crash_marker_key(session_id, prompt_text),
                                 os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE)
        except FileExistsError:
            return False
        for fd in (descriptor, os.open(marker_dir, os.O_RDONLY)):
            os.fsync(fd)
            os.close(fd)
        return True

    def record(self, session: Session, role: str, text: str) -> None:
        with self.lock:
            session.history.append({"role": role, "text": text, "message_id": uuid.uuid4().hex})
            self.save(session)

    def record_replayed(self, session: Session, messages: list) -> None:
        with self.lock:
            for message in messages:
                message_id = message.get("messageId") or message.get("message_id") or uuid.uuid4().hex
                session.history.append({"role": "user" if message["role"] == "user" else "agent",
                                        "text": message["text"], "message_id": str(message_id), "replayed": True})
            self.save(session)

    def user_messages(self, session: Session) -> list[str]:
        with self.lock:
            return [entry["text"] for entry in session.history if entry["role"] == "user"]
