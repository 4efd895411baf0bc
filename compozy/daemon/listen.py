"""Listening: the loopback TCP address, the owner-only Unix socket, and one waitress loop over both.

Layer 6 (surface).
"""

import errno
import json
import logging
import os
import resource
import socket
import stat
import struct

import waitress

from compozy.http.app import UNIX_SOCKET
from compozy.config import SETTINGS_BY_NAME
from compozy.daemon.workers import REQUEST_THREADS, WorkerPools
from compozy.paths import FILE_MODE

log = logging.getLogger("compozy.daemon")

# Descriptors kept free for agents' pipes, event stores and log files when sizing the connection limit.
DESCRIPTOR_RESERVE = 1024
MAX_CONNECTIONS = 10_000
IDLE_CONNECTION_TIMEOUT = 60  # seconds an idle keep-alive connection is kept; a running stream never idles
ACCEPT_BURST = 64  # connections accepted per turn of the loop (waitress alone takes one)
WAITRESS_BODY_LIMIT = 64 * 1024 * 1024  # above the app's 8 MiB so the app answers 413 in JSON


class DaemonError(Exception):
    """The daemon cannot start; the message says why in one line."""


def parse_listen(address, allow_remote, source="--http"):
    """(host, port, loopback) of a HOST:PORT (from the flag or `[daemon] http`); a non-loopback host
    needs allow_remote."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or int(port) > 65535:
        raise DaemonError(f"{source.split(' (')[0]} must be HOST:PORT, got {address!r}")
    loopback = host in ("127.0.0.1", "localhost", "::1")
    if not loopback and not allow_remote:
        raise DaemonError(f"refusing to listen on non-loopback address {host}; pass --allow-remote and a token")
    return ("127.0.0.1" if host == "localhost" else host), int(port), loopback


def bind_tcp(host, port, source="--http"):
    """source: what chose the address (--http, `[daemon] http` in its file, the default), named when
    the port is taken so the message says what to change."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        hint = ""
        if exc.errno == errno.EADDRINUSE:
            hint = (f"; another program uses port {port} (the address came from {source}): choose another port "
                    f"with --http HOST:PORT or `[daemon] http = \"HOST:PORT\"` in config.toml")
        raise DaemonError(f"cannot listen on {host}:{port}: {exc.strerror}{hint}") from None
    sock.listen(1024)
    return sock


def bind_unix(path):
    """Owner-only socket; a stale socket file is replaced, any other file is refused."""
    path = str(path)
    if os.path.lexists(path):
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            raise DaemonError(f"{path} exists and is not a socket")
        if _answers(path):  # another home's daemon (the home lock covers only our own): never take it over
            raise DaemonError(f"a daemon is listening on {path}; stop it first or choose another --socket")
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(path)
    finally:
        os.umask(old_umask)
    os.chmod(path, FILE_MODE)
    sock.listen(1024)
    return sock


def _answers(path):
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(5)
    try:
        probe.connect(path)
    except OSError:
        return False  # refused: a stale socket file nobody listens on
    finally:
        probe.close()
    return True


def connection_limit(descriptors):
    """As many connections as the descriptors allow once agents and stores have their reserve."""
    if descriptors == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(100, min(MAX_CONNECTIONS, descriptors - DESCRIPTOR_RESERVE))


def serve(app, sockets, descriptors, max_streams=SETTINGS_BY_NAME["daemon.max_streams"].default):
    """One waitress loop and one set of worker pools for TCP and the Unix socket.

    waitress refuses to mix socket families in one server, so each family gets a server object
    registered in a shared socket map and task dispatcher; running one loop serves both. The loop
    polls: select() dies on any descriptor past 1,024, and then the daemon would answer nothing.
    A channel stays readable while its request runs (a lookahead of one request) so that a viewer
    closing its stream is seen by the loop and the stream can end (compozy/http/sse.py).
    """
    shared_map = {}
    dispatcher = WorkerPools(max_streams)
    return [accept_in_bursts(sock.family == socket.AF_UNIX, waitress.create_server(
        app if sock.family != socket.AF_UNIX else _over_unix_socket(app), map=shared_map, _dispatcher=dispatcher,
        sockets=[sock], threads=REQUEST_THREADS, connection_limit=connection_limit(descriptors),
        channel_request_lookahead=1, asyncore_use_poll=True, channel_timeout=IDLE_CONNECTION_TIMEOUT,
        cleanup_interval=10, max_request_body_size=WAITRESS_BODY_LIMIT, ident="compozy"))
            for sock in sockets]


def close_servers(servers):
    """Close every listening socket and channel, then end the worker threads they share."""
    for server in servers:
        server.close()
    if servers:
        servers[0].task_dispatcher.shutdown(timeout=2)


def _over_unix_socket(app):
    def marked(environ, start_response):
        environ[UNIX_SOCKET] = True
        return app(environ, start_response)
    return marked


def accept_in_bursts(check_peer, server):
    """waitress accepts one connection per turn of its loop, and each turn polls every channel: after
    a burst of a thousand connections a request would wait seconds for its turn to be accepted.
    check_peer: (the Unix socket) a peer whose uid is not ours is answered 401 and closed at once."""
    def handle_accept():
        room = server.adj.connection_limit - len(server._map)
        for _ in range(max(1, min(ACCEPT_BURST, room))):
            try:
                accepted = server.accept()
                if accepted is None:
                    return
                if check_peer and not owner_peer(accepted[0]):
                    continue
                server.set_socket_options(accepted[0])
            except OSError:
                return
            server.channel_class(server, accepted[0], server.fix_addr(accepted[1]), server.adj, map=server._map)
    server.handle_accept = handle_accept
    return server


def owner_peer(sock):
    """True when the process at the other end of a Unix socket runs as our uid (SO_PEERCRED); else it is
    told so in a 401 and the connection is closed. The socket file is 0600, but root, or a socket made
    reachable by a later chmod, must not hand our daemon to another user."""
    pid, uid, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    if uid == os.geteuid():
        return True
    log.warning("refused a connection on the socket from pid %s, uid %s: it answers only uid %s", pid, uid,
                os.geteuid())
    body = json.dumps({"error": f"this daemon's socket answers only its owner (uid {os.geteuid()})",
                       "code": "unauthorized", "details": {}}).encode()
    try:
        sock.send(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nConnection: close\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(body), body), socket.MSG_DONTWAIT)
    except OSError:
        pass  # a peer that already left
    sock.close()
    return False


def url_host(host):
    return f"[{host}]" if host and ":" in host else host
