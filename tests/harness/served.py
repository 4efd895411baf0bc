"""The daemon's app served from the test process: a real SessionManager behind a loopback port and the
home's Unix socket, so the agents it binds reach its native tool server while a test holds the manager."""

import os
import threading

from compozy.config import load as load_config
from compozy.daemon.listen import bind_tcp, bind_unix, close_servers, serve
from compozy.http.app import create_app
from compozy.http.auth import Auth
from compozy.manager import SessionManager
from compozy.paths import Home, ensure_auth_token
from compozy.session.turns.identity import ToolEndpoints

DESCRIPTORS = 1024


class ServedManager:
    def __init__(self, home):
        self.home = Home(home).ensure()
        self.manager = self.servers = None

    def start(self):
        tcp, unix = bind_tcp("127.0.0.1", 0), bind_unix(self.home.socket_file)
        port = tcp.getsockname()[1]
        self.http_url = f"http://127.0.0.1:{port}"
        self.manager = SessionManager(self.home, load_config(self.home.config_file),
                                      endpoints=ToolEndpoints(self.http_url, str(self.home.socket_file)),
                                      address=self.http_url).start()  # a fleet's other nodes reach it there
        auth = Auth(ensure_auth_token(self.home), port, self.http_url)
        self.servers = serve(create_app(self.manager, port, auth=auth), [tcp, unix], DESCRIPTORS)
        threading.Thread(target=self.servers[0].run, name="served-app", daemon=True).start()
        return self

    @property
    def socket_url(self):
        return "unix://" + str(self.home.socket_file)

    def close(self):
        if self.manager is not None:
            self.manager.shutdown()
            self.manager = None
        close_servers(self.servers or [])
        self.servers = None
        if os.path.exists(self.home.socket_file):
            os.unlink(self.home.socket_file)
