"""The daemon keeps answering under connection load: more descriptors than select() can watch,
and a network loop that dies takes the daemon down with a non-zero exit instead of leaving it deaf."""

import resource
import socket
import threading
from urllib.parse import urlsplit

from compozy.cli.client import Client
from compozy.paths import Home
from compozy.daemon.process import Daemon

IDLE_CONNECTIONS = 1_100  # with the daemon's own descriptors, well past select()'s 1,024


def test_health_answers_with_more_idle_connections_than_select_can_watch(daemon):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * IDLE_CONNECTIONS)), hard))
    parts = urlsplit(daemon.http_url)
    api = daemon.client(timeout=10)
    idle = []
    try:
        for _ in range(IDLE_CONNECTIONS):
            idle.append(socket.create_connection((parts.hostname, parts.port), timeout=10))
        assert api.call("GET", "/api/health")[1]["status"] == "ok"
        assert Client(daemon.socket_url, timeout=10).call("GET", "/api/health")[1]["status"] == "ok"
    finally:
        for connection in idle:
            connection.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert api.call("GET", "/api/health")[1]["status"] == "ok"
    assert daemon.process.poll() is None


class DyingServer:
    def run(self):
        raise ValueError("filedescriptor out of range in select()")


def test_a_dead_server_loop_stops_the_daemon_with_a_failure(tmp_path):
    daemon = Daemon(Home(tmp_path / "home"))
    thread = threading.Thread(target=daemon.serve_loop, args=(DyingServer(),))
    thread.start()
    thread.join(10)
    assert daemon.stop_requested.is_set() and daemon.server_failed


def test_a_loop_closed_for_shutdown_is_not_a_failure(tmp_path):
    daemon = Daemon(Home(tmp_path / "home"))
    daemon.stop_requested.set()

    class ClosedServer:
        def run(self):
            return None

    daemon.serve_loop(ClosedServer())
    assert not daemon.server_failed
