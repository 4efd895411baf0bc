"""A scenario's fleet (docs/fleet.md): its `fleet:` key joins the scenario's daemon to a real PostgreSQL fleet.

`fleet: {node: alpha, peers: [beta], ...}`: a fresh database on the test process's PostgreSQL server
(tests/harness/postgres.py, the `postgres` fixture), the scenario's own daemon (any surface) joined to it as
`node` (alpha by default; the other keys go to its [fleet] table as they are), and each peer a real daemon on a
home of its own joined to the same database, with a workspace named `proj` and one session in it. The steps read
`{peers.NAME.session}` (that session's ID), `{peers.NAME.address}` and `{peers.NAME.workspace}`. Nothing here
waits for the fleet catalog: the mirror writes after the local commit, so a scenario awaits what it reads.
"""

import os

from tests.harness.daemon import DaemonProcess

SECRET = "a-scenario-fleet-secret-0123456789abcdef"
PEER_WORKSPACE = "proj"


def secret_file(folder):
    path = folder / "fleet-secret"
    path.write_text(SECRET + "\n")
    os.chmod(path, 0o600)
    return path


class ScenarioFleet:
    def __init__(self, spec, server, root):
        spec = {k: v for k, v in spec.items() if k != "__line__"}
        self.node, self.peer_names = spec.pop("node", "alpha"), list(spec.pop("peers", []) or [])
        self.extra = spec  # the rest of the scenario node's [fleet] table (max_agents, shared_storage, ...)
        self.root = root
        self.database, self.secret = server.new_database(), secret_file(root)
        self.peers = {}

    def table(self, node=None, **extra):
        """The [fleet] table of a node (the scenario's own when node is None)."""
        own = node is None
        return {"database": self.database, "node": self.node if own else node, "secret_file": str(self.secret),
                **(self.extra if own else {}), **extra}

    def start_peers(self, to_toml):
        """Each peer started, its workspace registered and one session created in it; {name: variables}."""
        found = {}
        for name in self.peer_names:
            home, workspace = self.root / "peers" / name, self.root / "peers" / f"{name}-{PEER_WORKSPACE}"
            home.mkdir(parents=True)
            workspace.mkdir(parents=True)
            (home / "config.toml").write_text(to_toml({"fleet": self.table(name)}))
            os.chmod(home / "config.toml", 0o600)
            daemon = self.peers[name] = DaemonProcess(home).start()
            client = daemon.client()
            client.call("POST", "/api/workspaces", {"name": PEER_WORKSPACE, "path": str(workspace)})
            _, created = client.call("POST", "/api/sessions", {"workspace": PEER_WORKSPACE, "name": f"on {name}"})
            found[name] = {"session": created["session"]["id"], "address": daemon.http_url,
                           "workspace": str(workspace)}
        return found

    def close(self):
        for daemon in self.peers.values():
            daemon.stop()
