"""The home folder layout and owner-only file modes.

Layer 1: imports only layer 0. Every path under $COMPOZY_HOME is built here.
"""

import json
import os
import threading
from pathlib import Path

from compozy.ids import validate_id

DIR_MODE = 0o700
FILE_MODE = 0o600


class Home:
    """$COMPOZY_HOME, else ~/.compozy; created 0700 on first use."""

    def __init__(self, root=None):
        root = root or os.environ.get("COMPOZY_HOME") or Path.home() / ".compozy"
        self.root = Path(root).expanduser().absolute()

    def ensure(self):
        for path in (self.root, self.sessions_dir, self.logs_dir, self.crash_bundles_dir):
            make_private_dir(path)
        return self

    @property
    def config_file(self):
        return self.root / "config.toml"

    @property
    def catalog_file(self):
        return self.root / "compozy.db"

    @property
    def sessions_dir(self):
        return self.root / "sessions"

    @property
    def logs_dir(self):
        return self.root / "logs"

    @property
    def log_file(self):
        return self.logs_dir / "compozy.log"

    @property
    def crash_bundles_dir(self):
        return self.logs_dir / "crash-bundles"

    @property
    def socket_file(self):
        return self.root / "daemon.sock"

    @property
    def daemon_file(self):
        return self.root / "daemon.json"

    @property
    def lock_file(self):
        return self.root / "daemon.lock"

    def session_dir(self, session_id):
        return self.sessions_dir / validate_id(session_id, "sess")

    def meta_file(self, session_id):
        return self.session_dir(session_id) / "meta.json"

    def events_file(self, session_id):
        return self.session_dir(session_id) / "events.db"


def make_private_dir(path):
    path = Path(path)
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)
    return path


def write_private_file(path, data, sync=True):
    """Atomic and owner-only: temp file, fsync (unless the caller defers it), rename.

    The folder is not fsynced: like SQLite's synchronous=NORMAL, this survives any process
    crash, and only a power loss could lose the rename (the old file then remains, whole).
    """
    path = Path(path)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    payload = data if isinstance(data, bytes) else data.encode("utf-8")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.write(fd, payload)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


def write_private_json(path, document, sync=True):
    write_private_file(path, json.dumps(document, indent=2, sort_keys=True) + "\n", sync)



def read_daemon_file(home):
    """daemon.json of a running daemon, or None."""
    try:
        with open(home.daemon_file, encoding="utf-8") as handle:
            return json.load(handle)
    except (FileNotFoundError, ValueError):
        return None
