"""A real PostgreSQL server for the fleet tests: Debian's (or any found on PATH), in a temporary folder, on a
free loopback port with its Unix socket in that folder; or the reason there is none (the tests skip with it).

PostgreSQL refuses to run as root: under root the server runs as the `postgres` user (runuser), in a folder
that user owns. `fsync=off`: a test server's data need not survive a power loss (only the server's crash).
"""

import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

USER = "compozy"
SERVER_USER = "postgres"


def binaries():
    """The folder holding initdb and pg_ctl, None when there is none."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]), reverse=True)
    if found:
        return Path(found[0]).parent
    pg_ctl = shutil.which("pg_ctl")
    return Path(pg_ctl).parent if pg_ctl else None


def unavailable():
    """Why no PostgreSQL can be started here (None: one can)."""
    if importlib.util.find_spec("psycopg") is None:  # the driver the daemons use
        return "psycopg is not installed (pip install 'psycopg[binary]')"
    if binaries() is None:
        return "no PostgreSQL server is installed (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return "running as root and there is no postgres user to run the server as"
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing"
    return None


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgresServer:
    def __init__(self):
        self.bin = binaries()
        self.folder = Path(tempfile.mkdtemp(prefix="compozy-pg-"))
        self.data, self.log = self.folder / "data", self.folder / "server.log"
        self.port = free_port()
        self.running = False
        self._databases = 0
        if os.geteuid() == 0:
            os.chown(self.folder, pwd.getpwnam(SERVER_USER).pw_uid, -1)
        os.chmod(self.folder, 0o700)

    def _run(self, *command, check=True):
        prefix = ["runuser", "-u", SERVER_USER, "--"] if os.geteuid() == 0 else []
        return subprocess.run(prefix + [str(self.bin / command[0]), *command[1:]], capture_output=True, text=True,
                              check=check, timeout=60)

    def start(self):
        if not self.data.exists():
            self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync")
        # fsync=off: what a commit wrote survives the server's own crash (the tests' outages), not the machine's.
        # synchronous_commit stays on: off, a crash loses the last commits (an adoption's lease, once).
        options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                   f"-c full_page_writes=off -c max_connections=300")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.log), "-w", "start")
        self.running = True
        return self

    def stop(self):
        """Stopped at once (as by a crash: the fleet tests' outages)."""
        if self.running:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
            self.running = False

    def url(self, database="postgres"):
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self):
        """A fresh, empty database of this server: its URL."""
        import psycopg
        self._databases += 1
        name = f"fleet_{os.getpid()}_{self._databases}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)

    def close(self):
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)
