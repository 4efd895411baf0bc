"""The daemon process: one per home (a lock), boot, serving, daemon.json, graceful stop.

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

from compozy import __version__
from compozy.clock import now_iso
from compozy.config import ConfigError
from compozy.config import load as load_config
from compozy.daemon import heap
from compozy.daemon.listen import DaemonError, bind_tcp, bind_unix, close_servers, parse_listen, serve, url_host
from compozy.daemon.logs import setup_logging
from compozy.http.app import create_app
from compozy.http.auth import Auth
from compozy.manager import SessionManager
from compozy.paths import FILE_MODE, UnsafeHome, check_private, ensure_auth_token, write_private_json
from compozy.session.turns.identity import ToolEndpoints

log = logging.getLogger("compozy.daemon")


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


WILDCARDS = ("0.0.0.0", "::")


def local_host(host):
    """The address this machine reaches a daemon listening on host by: loopback for a wildcard."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)


def check_advertise(config, host):
    """A fleet node listening on a wildcard address must say how the others reach it: its own address would be
    loopback, where another node reaches only itself (docs/fleet.md)."""
    if config.fleet is not None and config.fleet.advertise is None and host in WILDCARDS:
        raise ConfigError(f"{config.path}: fleet.advertise: this node listens on {host} (every address), so the "
                          f"other nodes cannot be told where to reach it: set fleet.advertise to the address they "
                          f"use, e.g. \"http://10.0.0.13:2123\"")


def remote_names(host):
    """The Host names a daemon listening beyond loopback answers to, besides loopback and IP literals."""
    names = {socket.gethostname().lower()}
    if host and host not in ("0.0.0.0", "::"):
        names.add(host.lower())
    return frozenset(names)


def listen_source(flag, config):
    """What chose the listening address, as the message of a refused one names it."""
    if flag:
        return "--http"
    if "daemon.http" in config.values:
        return f"`[daemon] http` in {config.path or 'config.toml'}"
    return "the default (set --http or `[daemon] http` in config.toml)"


class Daemon:
    def __init__(self, home, http=None, socket_path=None, no_http=False, token=None, allow_remote=False,
                 default_http="127.0.0.1:2123"):
        """http: --http (None: `[daemon] http` in config.toml, else default_http); token: the secret TCP
        requests carry (COMPOZY_TOKEN, --token, --token-file), else the home's auth_token; allow_remote: a
        non-loopback --http is allowed (with a token)."""
        self.home = home.ensure()
        self.http, self.no_http, self.token, self.allow_remote = http, no_http, token, allow_remote
        self.default_http = default_http
        self.host, self.loopback = None, True
        self.socket_path = socket_path or home.socket_file
        self.stop_requested = threading.Event()
        self.reload_requested = threading.Event()
        self.server_failed = False

    def run(self, announce=print):
        """Serve until SIGTERM or SIGINT (exit code 0), or until the server loop dies (exit code 1)."""
        check_private(os.path.dirname(os.path.abspath(self.socket_path)) or "/", "socket's folder")
        lock_fd = acquire_lock(self.home)
        setup_logging(self.home)
        descriptors = raise_descriptor_limit()
        config = load_config(self.home.config_file)
        if not self.no_http:
            self.listen_from = listen_source(self.http, config)
            self.http = self.http or config.values.get("daemon.http") or self.default_http
            self.host, self.port, self.loopback = parse_listen(self.http, self.allow_remote and bool(self.token),
                                                               self.listen_from)
            check_advertise(config, self.host)
        secret = self.secret(config)
        sockets, port = self._bind()
        url = f"http://{url_host(local_host(self.host))}:{port}" if port else None  # usable, never 0.0.0.0
        manager = SessionManager(self.home, config, endpoints=self.endpoints(port), address=url).start()
        max_streams = config["daemon.max_streams"]
        app = create_app(manager, port, auth=Auth(secret, port, url), max_streams=max_streams,
                         remote_names=None if self.loopback else remote_names(self.host))
        servers = serve(app, sockets, descriptors, max_streams)
        heap.settle()
        self._install_signal_handlers()
        manager.services.threads.start("waitress", self.serve_loop, servers[0], serving=True)
        self.info = {"pid": os.getpid(), "http": url, "socket": str(self.socket_path), "started_at": now_iso(),
                     "version": __version__, "config_loaded_at": now_iso()}
        write_private_json(self.home.daemon_file, self.info)
        log.info("daemon ready (pid %s, http %s, socket %s)", os.getpid(), url, self.socket_path)
        announce(f"compozy daemon listening on {url or 'none'} socket {self.socket_path}", flush=True)
        try:
            while not self.stop_requested.wait(0.5):
                if self.reload_requested.is_set():
                    self.reload_requested.clear()
                    self.reload(manager)
            log.info("shutting down: stopping live sessions")
        finally:
            manager.shutdown()
            close_servers(servers)
            self._cleanup(lock_fd)
        return 1 if self.server_failed else 0

    def reload(self, manager):
        """SIGHUP: read config.toml again; an invalid file keeps the running configuration (and says so in
        daemon.json, where `compozy daemon reload` reads the outcome)."""
        try:
            self.home.check()  # as at start: someone may have loosened the home or swapped config.toml since
            manager.reload_config(load_config(self.home.config_file))
            self.info = {**self.info, "config_loaded_at": now_iso(), "config_error": None}
            log.info("config reloaded from %s", self.home.config_file)
        except (ConfigError, UnsafeHome) as exc:
            self.info = {**self.info, "config_error": str(exc), "config_failed_at": now_iso()}
            log.error("config reload refused, keeping the running configuration: %s", exc)
        write_private_json(self.home.daemon_file, self.info)

    def secret(self, config):
        """What TCP requests must carry: the given token, else the home's auth_token (made at the first
        start); None under `daemon.auth = "none"`, which only a loopback daemon accepts, and says so."""
        made = ensure_auth_token(self.home)  # made at the first start whatever the mode, for the CLI to read
        if config["daemon.auth"] != "none":
            return self.token or made
        if not self.loopback:
            raise DaemonError('daemon.auth = "none" is allowed only on a loopback address: any user who can '
                              "reach this one would drive the daemon as you")
        log.warning('daemon.auth = "none": TCP requests are not authenticated; any local user can drive this '
                    "daemon as you (remove it from %s to ask for the secret again)", self.home.config_file)
        return None

    def endpoints(self, port):
        """Where the agents this daemon binds reach its tool server: loopback, even when it listens wider."""
        return ToolEndpoints(f"http://{url_host(local_host(self.host))}:{port}" if port else None, str(self.socket_path))

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
            tcp = bind_tcp(self.host, self.port, self.listen_from)
            port = tcp.getsockname()[1]
            sockets.append(tcp)
        sockets.append(bind_unix(self.socket_path))
        return sockets, port

    def _install_signal_handlers(self):
        def request_stop(_signum, _frame):
            self.stop_requested.set()
        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        signal.signal(signal.SIGHUP, lambda _signum, _frame: self.reload_requested.set())

    def _cleanup(self, lock_fd):
        for path in (self.home.daemon_file, self.socket_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        os.close(lock_fd)
        log.info("daemon stopped")
