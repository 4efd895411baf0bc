"""The [fleet] table of config.toml: which PostgreSQL catalog, this node's name and address, the secret.

Layer 0 (beside compozy.config_entries): imports nothing from compozy. compozy.config reads it into
Config.fleet, handing in the problems list. The fleet secret lives in a file of its own that only its owner
may read (a group- or world-readable one is a config problem), never in config.toml.
"""

import os
import re
import stat
from dataclasses import dataclass, field

NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
ADVERTISE = re.compile(r"https?://[^/\s?#]+")
KEYS = ("database", "database_env", "node", "advertise", "secret_file", "max_agents", "shared_storage",
        "unreachable_after", "relay_timeout")
DEFAULT_MAX_AGENTS = 8
DEFAULT_UNREACHABLE_AFTER = 15  # seconds without a heartbeat (one every 2 s)
MIN_UNREACHABLE_AFTER = 5
DEFAULT_RELAY_TIMEOUT = 300  # seconds a relayed request waits for its owner's answer (a rewind's git bound, a stop)
MIN_SECRET_BYTES = 16


@dataclass(frozen=True)
class FleetSettings:
    database: str = field(repr=False)  # postgresql://... (it may carry a password)
    node: str
    secret: str = field(repr=False)
    advertise: str | None = None  # None: the daemon's own HTTP address
    max_agents: int = DEFAULT_MAX_AGENTS  # the agents this node may run at once (its capacity)
    shared_storage: tuple = ()  # workspace names whose session folders other nodes can reach (adoption)
    unreachable_after: int = DEFAULT_UNREACHABLE_AFTER  # seconds without a heartbeat: a node is unreachable
    relay_timeout: int = DEFAULT_RELAY_TIMEOUT  # seconds a relayed request waits for the owner's answer


def load_fleet(table, problems, environ=os.environ):
    """The [fleet] table as FleetSettings, or None when absent (or wrong: the problems say why)."""
    if not isinstance(table, dict):
        problems.add("fleet", "expected a table")
        return None
    for unknown in sorted(set(table) - set(KEYS)):
        problems.add(f"fleet.{unknown}", "unknown key")
    database = _database(table, problems, environ)
    node = table.get("node")
    if not (isinstance(node, str) and NODE_NAME.fullmatch(node)):
        problems.add("fleet.node", "expected this node's name: letters, digits, _, . and - (at most 64)")
    advertise = table.get("advertise")
    if advertise is not None and not (isinstance(advertise, str) and ADVERTISE.fullmatch(advertise.rstrip("/"))):
        problems.add("fleet.advertise", "expected the address other nodes reach this daemon by, e.g. "
                                        "\"http://10.0.0.5:2123\"")
    max_agents = table.get("max_agents", DEFAULT_MAX_AGENTS)
    if not isinstance(max_agents, int) or isinstance(max_agents, bool) or max_agents < 0:
        problems.add("fleet.max_agents", f"expected a whole number >= 0, got {max_agents!r}")
    lapse = table.get("unreachable_after", DEFAULT_UNREACHABLE_AFTER)
    if not isinstance(lapse, int) or isinstance(lapse, bool) or lapse < MIN_UNREACHABLE_AFTER:
        problems.add("fleet.unreachable_after", f"expected whole seconds >= {MIN_UNREACHABLE_AFTER} (a heartbeat goes "
                                                f"every 2 s), got {lapse!r}")
        lapse = DEFAULT_UNREACHABLE_AFTER
    relay_timeout = table.get("relay_timeout", DEFAULT_RELAY_TIMEOUT)
    if not isinstance(relay_timeout, int) or isinstance(relay_timeout, bool) or relay_timeout < 1:
        problems.add("fleet.relay_timeout", f"expected whole seconds >= 1, got {relay_timeout!r}")
        relay_timeout = DEFAULT_RELAY_TIMEOUT
    shared = table.get("shared_storage", [])
    if not (isinstance(shared, list) and all(isinstance(n, str) and n for n in shared)):
        problems.add("fleet.shared_storage", "expected a list of workspace names")
        shared = []
    secret = _secret(table.get("secret_file"), problems)
    if database is None or secret is None or not isinstance(node, str) or not NODE_NAME.fullmatch(node):
        return None
    return FleetSettings(database, node, secret, advertise.rstrip("/") if isinstance(advertise, str) else None,
                         max_agents if isinstance(max_agents, int) else DEFAULT_MAX_AGENTS, tuple(shared), lapse,
                         relay_timeout)


def _database(table, problems, environ):
    url, variable = table.get("database"), table.get("database_env")
    if url is not None and variable is not None:
        problems.add("fleet.database", "give database or database_env, not both")
        return None
    if variable is not None:
        if not isinstance(variable, str) or not variable:
            problems.add("fleet.database_env", "expected the name of an environment variable")
            return None
        url = environ.get(variable)
        if not url:
            problems.add("fleet.database_env", f"the environment variable {variable} is not set")
            return None
    if not (isinstance(url, str) and url.startswith(("postgresql://", "postgres://"))):
        problems.add("fleet.database", "expected a PostgreSQL URL (postgresql://user@host:port/dbname), or "
                                       "database_env naming a variable that holds one")
        return None
    return "postgresql://" + url.split("://", 1)[1]


def _secret(path, problems):
    """The fleet secret read from its file: a regular file of ours that nobody else may read."""
    key = "fleet.secret_file"
    if not (isinstance(path, str) and os.path.isabs(os.path.expanduser(path))):
        problems.add(key, "expected the absolute path of a file holding the fleet secret (mode 600)")
        return None
    path = os.path.expanduser(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        problems.add(key, f"cannot read {path}: {exc.strerror}")
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            problems.add(key, f"{path} is not a regular file of your own")
            return None
        if info.st_mode & 0o077:
            problems.add(key, f"{path} is readable or writable by group or others (mode "
                              f"{stat.S_IMODE(info.st_mode):o}): the fleet secret lets anyone act on every "
                              f"session of the fleet; run: chmod 600 {path}")
            return None
        secret = handle.read(4096).decode("utf-8", "replace").strip()
    if len(secret) < MIN_SECRET_BYTES:
        problems.add(key, f"{path} holds a secret shorter than {MIN_SECRET_BYTES} characters; write a long random "
                          f"one (e.g. `head -c 32 /dev/urandom | base64 > {path}`)")
        return None
    return secret
