"""The home folder layout and owner-only file modes.

Layer 1: imports only layer 0. Every path under $COMPOZY_HOME is built here.
"""

import http.client
import json
import errno
import os
import secrets
import socket
import stat
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
        """Create the home's folders owner-only; UnsafeHome when one exists that someone else controls."""
        self.check()
        for path in (self.root, self.sessions_dir, self.logs_dir, self.crash_bundles_dir):
            make_private_dir(path)
        return self

    def check(self):
        """UnsafeHome when the home, a folder in it or config.toml is someone else's or writable by others
        (at every start and every reload); config.toml is also read without following a link (config.load)."""
        for path in (self.root, self.sessions_dir, self.logs_dir, self.crash_bundles_dir):
            if os.path.lexists(path):
                check_private(path, "folder")
        if os.path.lexists(self.config_file):
            if os.path.islink(self.config_file):
                raise UnsafeHome(f"the config file {self.config_file} is a symbolic link: compozy reads only a "
                                 f"regular file of your own there (replace the link with the file, after checking it)")
            check_private(self.config_file, "config file")
        return self

    @property
    def config_file(self):
        return self.root / "config.toml"

    @property
    def catalog_file(self):
        return self.root / "compozy.db"

    @property
    def storage_history_file(self):
        return self.root / "storage-history.json"

    @property
    def search_file(self):
        return self.root / "search.db"

    @property
    def sessions_dir(self):
        return self.root / "sessions"

    @property
    def checkpoints_dir(self):
        """The shadow repositories of file checkpoints, one folder per workspace (named by its ID)."""
        return self.root / "checkpoints"

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

    @property
    def auth_token_file(self):
        return self.root / "auth_token"

    def session_dir(self, session_id):
        return self.sessions_dir / validate_id(session_id, "sess")

    def meta_file(self, session_id):
        return self.session_dir(session_id) / "meta.json"

    def events_file(self, session_id):
        return self.session_dir(session_id) / "events.db"


class UnsafeHome(Exception):
    """A folder or file the daemon would trust is owned by someone else or writable by others; the
    message says how to fix it."""


def check_private(path, what):
    """Refuse path unless the running user owns it and neither group nor others may write it: whoever
    can write the home, its config or the socket's folder can run commands as us or impersonate us."""
    info = os.stat(path)
    if info.st_uid != os.geteuid():
        raise UnsafeHome(f"the {what} {path} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}): "
                         f"someone else controls it; remove it or set COMPOZY_HOME to a folder of your own")
    if info.st_mode & 0o022:
        mode = "700" if os.path.isdir(path) else "600"
        raise UnsafeHome(f"the {what} {path} is writable by group or others (mode {stat.S_IMODE(info.st_mode):o}): "
                         f"check that nobody else changed it, then run: chmod {mode} {path}")


def make_private_dir(path):
    path = Path(path)
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)
    return path


def write_all(fd, data):
    """os.write until every byte is written: a write may take only part of what it is given."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


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
        write_all(fd, payload)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


def write_private_json(path, document, sync=True):
    write_private_file(path, json.dumps(document, indent=2, sort_keys=True) + "\n", sync)



def lock_holder(path):
    """The pid holding the flock on path (from /proc/locks), None when nobody holds it; raises OSError
    when the kernel does not say."""
    inode = os.stat(path).st_ino
    with open("/proc/locks", encoding="ascii") as locks:
        for line in locks:
            fields = line.split()
            if len(fields) > 5 and fields[1] == "FLOCK" and fields[5].rsplit(":", 1)[-1] == str(inode):
                return int(fields[4])
    return None


def ensure_auth_token(home):
    """The daemon's secret for TCP clients: <home>/auth_token, made at the first start (random, 0600) and the
    same at every start after. Called with the home's lock held, so one daemon writes it."""
    try:
        return read_auth_token(home)
    except FileNotFoundError:
        token = secrets.token_urlsafe(32)
        write_private_file(home.auth_token_file, token + "\n")
        return token


def read_auth_token(home):
    """The secret in <home>/auth_token, read without following a link; UnsafeHome when someone else could
    have read or written it; FileNotFoundError before the daemon's first start."""
    path = home.auth_token_file
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeHome(f"the auth token {path} is a symbolic link: remove it (the daemon makes a new one)") from None
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
            raise UnsafeHome(f"the auth token {path} is not a private file of yours (owner uid {info.st_uid}, "
                             f"mode {stat.S_IMODE(info.st_mode):o}): someone else may know it; remove it and "
                             f"restart the daemon, which makes a new one")
        token = handle.read(4096).decode("ascii", "replace").strip()
    if not token:
        raise UnsafeHome(f"the auth token {path} is empty: remove it and restart the daemon")
    return token


def read_daemon_file(home):
    """daemon.json of a running daemon, or None."""
    try:
        with open(home.daemon_file, encoding="utf-8") as handle:
            return json.load(handle)
    except (FileNotFoundError, ValueError):
        return None


class UnixConnection(http.client.HTTPConnection):
    """HTTP to a daemon over its Unix socket; refuses a socket owned by another user."""

    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.socket_path = path

    def connect(self):
        owner = os.stat(self.socket_path).st_uid
        if owner != os.geteuid():  # someone else's socket would hear our prompts: never talk to it
            raise ConnectionRefusedError(f"the socket {self.socket_path} belongs to uid {owner}, not to you")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.socket_path)
        self.sock = sock
