"""The daemon process: boot, waitress on loopback TCP and the Unix socket, daemon.json, graceful stop.

Layer 6 (surface). Signal handlers only set a flag; the main thread acts on it.
"""

import errno
import fcntl
import logging
import os
import resource
import signal
import socket
import threading

import waitress
from waitress.task import ThreadedTaskDispatcher

from compozy import __version__
from compozy.clock import now_iso
from compozy.config import load as load_config
from compozy.http.app import create_app
from compozy.http.guards import LOOPBACK_NAMES
from compozy.manager import SessionManager
from compozy.paths import FILE_MODE, write_private_json
from compozy.redact import redact

log = logging.getLogger("compozy.daemon")

# Every open SSE stream holds a worker thread for its lifetime (4 default threads = 4 viewers
# hang everything else); 256 threads serve 200+ viewers plus ordinary requests.
THREADS = 256
# Descriptors kept free for agents' pipes, event stores and log files when sizing the connection limit.
DESCRIPTOR_RESERVE = 1024
MAX_CONNECTIONS = 10_000
IDLE_CONNECTION_TIMEOUT = 60  # seconds an idle keep-alive connection is kept; a running stream never idles
WAITRESS_BODY_LIMIT = 64 * 1024 * 1024  # above the app's 8 MiB so the app answers 413 in JSON


class DaemonError(Exception):
    """The daemon cannot start; the message says why in one line."""


class RedactingFormatter(logging.Formatter):
    def format(self, record):
        return redact(super().format(record))


def setup_logging(home, foreground=True):
    handler = logging.FileHandler(home.log_file, encoding="utf-8")
    os.chmod(home.log_file, FILE_MODE)
    formatter = RedactingFormatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    handlers = [handler] + ([logging.StreamHandler()] if foreground else [])
    root = logging.getLogger()
    for h in handlers:
        h.setFormatter(formatter)
        root.addHandler(h)
    root.setLevel(logging.INFO)
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)  # "task queue depth" noise under SSE load
    return handlers


def acquire_lock(home):
    """One daemon per home: an exclusive flock held for the process lifetime."""
    fd = os.open(home.lock_file, os.O_RDWR | os.O_CREAT, FILE_MODE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise DaemonError(f"another compozy daemon is running on {home.root}") from None
        raise
    return fd


def raise_descriptor_limit():
    """Raise the soft limit to the hard one; returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    log.info("file descriptor limit: soft %s -> %s (hard %s)", soft, limit, hard)
    return limit


def connection_limit(descriptors):
    """As many connections as the descriptors allow once agents and stores have their reserve."""
    if descriptors == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(100, min(MAX_CONNECTIONS, descriptors - DESCRIPTOR_RESERVE))


def parse_listen(address, allow_remote):
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise DaemonError(f"--http must be HOST:PORT, got {address!r}")
    loopback = host in ("127.0.0.1", "localhost", "::1")
    if not loopback and not allow_remote:
        raise DaemonError(f"refusing to listen on non-loopback address {host}; pass --allow-remote and a token")
    return ("127.0.0.1" if host == "localhost" else host), int(port)


def bind_tcp(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise DaemonError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(1024)
    return sock


def bind_unix(path):
    """Owner-only socket; a stale socket file is replaced, any other file is refused."""
    path = str(path)
    if os.path.lexists(path):
        import stat
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise DaemonError(f"{path} exists and is not a socket")
        os.unlink(path)  # the home lock proves no live daemon owns it
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(path)
    finally:
        os.umask(old_umask)
    os.chmod(path, FILE_MODE)
    sock.listen(1024)
    return sock


def serve(app, sockets, descriptors):
    """One waitress loop and one worker pool for TCP and the Unix socket.

    waitress refuses to mix socket families in one server, so each family gets a server object
    registered in a shared socket map and task dispatcher; running one loop serves both. The loop
    polls: select() dies on any descriptor past 1,024, and then the daemon would answer nothing.
    """
    shared_map = {}
    dispatcher = ThreadedTaskDispatcher()
    dispatcher.set_thread_count(THREADS)
    return [waitress.create_server(app, map=shared_map, _dispatcher=dispatcher, sockets=[sock],
                                   threads=THREADS, connection_limit=connection_limit(descriptors),
                                   asyncore_use_poll=True, channel_timeout=IDLE_CONNECTION_TIMEOUT,
                                   cleanup_interval=10, max_request_body_size=WAITRESS_BODY_LIMIT, ident="compozy")
            for sock in sockets]


def _url_host(host):
    return f"[{host}]" if host and ":" in host else host


class Daemon:
    def __init__(self, home, http="127.0.0.1:2123", socket_path=None, no_http=False, token=None):
        """token: with a non-loopback --http, every request must carry `Authorization: Bearer <token>`."""
        self.home = home.ensure()
        self.http, self.no_http, self.token = http, no_http, token
        self.host = None
        self.socket_path = socket_path or home.socket_file
        self.stop_requested = threading.Event()
        self.server_failed = False

    def run(self, announce=print):
        """Serve until SIGTERM or SIGINT (exit code 0), or until the server loop dies (exit code 1)."""
        lock_fd = acquire_lock(self.home)
        setup_logging(self.home)
        descriptors = raise_descriptor_limit()
        config = load_config(self.home.config_file)
        sockets, port = self._bind()
        manager = SessionManager(self.home, config).start()
        app = create_app(manager, port, token=self.token)
        servers = serve(app, sockets, descriptors)
        url = f"http://{_url_host(self.host)}:{port}" if port else None
        self._install_signal_handlers()
        threading.Thread(target=self.serve_loop, args=(servers[0],), name="waitress", daemon=True).start()
        write_private_json(self.home.daemon_file, {"pid": os.getpid(), "http": url, "socket": str(self.socket_path),
                                                   "started_at": now_iso(), "version": __version__})
        log.info("daemon ready (pid %s, http %s, socket %s)", os.getpid(), url, self.socket_path)
        announce(f"compozy daemon listening on {url or 'none'} socket {self.socket_path}", flush=True)
        try:
            while not self.stop_requested.wait(0.5):
                pass
            log.info("shutting down: stopping live sessions")
        finally:
            manager.shutdown()
            for server in servers:
                server.close()
            self._cleanup(lock_fd)
        return 1 if self.server_failed else 0

    def serve_loop(self, server):
        """The network loop; if it ever ends on its own the daemon is deaf, so it shuts down and
        exits non-zero for a supervisor to restart it rather than hold its lock answering nothing."""
        try:
            server.run()
        except BaseException:  # noqa: BLE001 (whatever killed the loop, the daemon must not stay deaf)
            log.exception("the server loop died")
        if not self.stop_requested.is_set():
            log.error("the server loop stopped unexpectedly; shutting down with exit code 1")
            self.server_failed = True
            self.stop_requested.set()

    def _bind(self):
        sockets, port = [], None
        if not self.no_http:
            host, port = parse_listen(self.http, allow_remote=bool(self.token))
            self.host = host
            tcp = bind_tcp(host, port)
            port = tcp.getsockname()[1]
            sockets.append(tcp)
        sockets.append(bind_unix(self.socket_path))
        return sockets, port

    def _install_signal_handlers(self):
        def request_stop(signum, frame):
            self.stop_requested.set()
        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)

    def _cleanup(self, lock_fd):
        for path in (self.home.daemon_file, self.socket_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        os.close(lock_fd)
        log.info("daemon stopped")


__all__ = ["Daemon", "DaemonError", "LOOPBACK_NAMES"]
