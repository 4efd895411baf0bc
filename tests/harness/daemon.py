"""A real daemon subprocess on an ephemeral loopback port and its Unix socket, for tests.

Over TCP the daemon answers only requests that carry its secret (<home>/auth_token, or the
COMPOZY_TOKEN it was given): client() is an HTTP client that sends it, auth_headers the header for raw
HTTP, page_url(path) a URL that logs a browser in. The socket needs no secret.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.harness.transitions import watch_home

ROOT = Path(__file__).resolve().parents[2]
ENTRY = str(ROOT / "compozy.py")
READY_TIMEOUT = 30.0
SECRETS_BY_PORT = {}  # the secret of each daemon this process started, for raw HTTP that knows only a port


def auth_for(port):
    """The Authorization header a raw request to the daemon on this loopback port needs ({} if unknown)."""
    secret = SECRETS_BY_PORT.get(int(port))
    return {"Authorization": f"Bearer {secret}"} if secret else {}


def client_for(url, timeout=60):
    """compozy's HTTP client for a daemon the harness started, by its URL (TCP with its secret, or a socket)."""
    from compozy.cli.client import Client
    port = url.rsplit(":", 1)[-1] if url.startswith("http://") else None
    return Client(url, timeout=timeout, token=SECRETS_BY_PORT.get(int(port)) if port else None)


def test_environment(home, extra=None):
    env = dict(os.environ)
    env["COMPOZY_HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    for name in ("COMPOZY_URL", "COMPOZY_SESSION_ID", "COMPOZY_BINDING_SECRET"):
        env.pop(name, None)  # the tests' own daemon, never the one this process may run under
    env.update(extra or {})
    return env


class DaemonProcess:
    """`python3 compozy.py daemon run --http 127.0.0.1:0` (or the given address) in its own process group; entry: a
    script run in compozy.py's place (bench/indexer_off.py)."""

    def __init__(self, home, http="127.0.0.1:0", args=(), env=None, entry=ENTRY):
        self.home, self.entry = Path(home), entry
        self.http = http
        self.args, self.env = list(args), env
        self.process = None
        self.info = None
        self.output_path = self.home.parent / f"{self.home.name}-daemon.out"

    def start(self):
        self.home.mkdir(parents=True, exist_ok=True)
        watch_home(self.home)
        daemon_file = self.home / "daemon.json"
        if daemon_file.exists():
            daemon_file.unlink()  # left by a killed daemon; the new one writes its own
        self._output = open(self.output_path, "ab")
        self.process = subprocess.Popen([sys.executable, self.entry, "daemon", "run", "--http", self.http, *self.args],
                                        env=test_environment(self.home, self.env), stdout=self._output,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if daemon_file.exists():
                try:
                    info = json.loads(daemon_file.read_text())
                except ValueError:
                    info = None
                if info and info.get("pid") == self.process.pid:
                    self.info = info
                    if info.get("http"):
                        SECRETS_BY_PORT[int(info["http"].rsplit(":", 1)[1])] = self.token
                    return self
            if self.process.poll() is not None:
                self._close()
                raise RuntimeError(f"daemon exited with {self.process.returncode}:\n{self.output()}")
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"daemon not ready after {READY_TIMEOUT}s:\n{self.output()}")

    @property
    def http_url(self):
        return self.info["http"]

    @property
    def token(self):
        """The secret TCP requests carry: the COMPOZY_TOKEN it was started with, else its auth_token."""
        given = (self.env or {}).get("COMPOZY_TOKEN") or os.environ.get("COMPOZY_TOKEN")
        return given or (self.home / "auth_token").read_text().strip()

    @property
    def auth_headers(self):
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, timeout=60):
        """compozy's own HTTP client over TCP, sending the secret."""
        from compozy.cli.client import Client
        return Client(self.http_url, timeout=timeout, token=self.token)

    def page_url(self, path="/"):
        """A URL of the page that logs the browser in (the daemon redirects to path and sets its cookie)."""
        return f"{self.http_url}{path}{'&' if '?' in path else '?'}token={self.token}"

    @property
    def socket_url(self):
        return "unix://" + self.info["socket"]

    def output(self):
        try:
            return self.output_path.read_text(errors="replace")[-6000:]
        except FileNotFoundError:
            return ""

    def stop(self, timeout=60):
        """SIGTERM and wait: the graceful path."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close()

    def kill(self):
        """SIGKILL the daemon only (its agents survive as orphans, as after a real crash)."""
        if self.process and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self._close()

    def restart(self):
        self.stop()
        return self.start()

    def _close(self):
        if getattr(self, "_output", None):
            self._output.close()
            self._output = None
