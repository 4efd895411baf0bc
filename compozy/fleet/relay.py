"""The fleet's HTTP side: a peer node's request checked, an operation on another node's session relayed to it,
and a new session placed on the node the request (or the fleet's capacity) chooses.

Layer 6 (surface). A request for a session this node does not hold is looked up in the fleet catalog; when
another node owns it, it goes to that node's advertised address as it came (method, path, query, body, the
client's headers but its credentials and cookies), with this node's name and the fleet secret in two
headers, and the owner's answer comes back as it is: its status, headers and body, byte for byte, streamed
as it arrives (an event stream is never buffered). The owner accepts the request on the fleet secret instead
of its own token, only from a node the fleet catalog knows, and never relays it again. An owner whose
heartbeat lapsed, or whose address refuses, is answered with 503 `node_unreachable` naming it.
"""

import hmac
import http.client
import json
import logging
import threading
from urllib.parse import quote, urlsplit

from flask import current_app, request

from compozy.clock import SYSTEM
from compozy.errors import CompozyError
from compozy.fleet.catalog import FleetDown
from compozy.api import OPS
from compozy.http.guards import json_body, query_args
from compozy.http.profiles import passthrough
from compozy.http.sse import EXTENSION, KEEPALIVE_SECONDS, wants_stream
from compozy.ids import validate_id

log = logging.getLogger("compozy.fleet")

NODE_HEADER, SECRET_HEADER = "X-Compozy-Fleet-Node", "X-Compozy-Fleet-Secret"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host", "authorization",
              "proxy-authorization", "cookie", "set-cookie", "content-length", "origin", "sec-fetch-site",
              NODE_HEADER.lower(), SECRET_HEADER.lower()}
CONNECT_SECONDS = 3.0
STREAM_QUIET_SECONDS = 3 * KEEPALIVE_SECONDS  # a relayed stream silent this long (no event, no keepalive) ends
PEERS_FRESH_SECONDS = 5.0
OWNER_FRESH_SECONDS = 1.0
OWNERS_KEPT = 4096
PLACEMENT = "session.create"
HERE = ("session.adopt",)  # answered by the node asked: adopting is taking a session from its node


class Peers:
    """The names of the fleet's nodes, read again from the catalog at most every few seconds (a name not
    among them is looked up at once: a node that just joined is known at its first request)."""

    def __init__(self):
        self.names, self.read_at, self.lock = frozenset(), None, threading.Lock()

    def known(self, catalog, name):
        now = SYSTEM.monotonic()
        with self.lock:
            fresh = self.read_at is not None and now - self.read_at < PEERS_FRESH_SECONDS
            if name in self.names and fresh:
                return True
        try:
            names = frozenset(node["name"] for node in catalog.nodes())
        except FleetDown:
            with self.lock:
                return name in self.names  # the catalog is away: the nodes known before still are
        with self.lock:
            self.names, self.read_at = names, now
        return name in names


PEERS = Peers()


class Owners:
    """Which node owns a session, as the fleet catalog said less than a second ago: a session's requests come in
    runs (a prompt, its stream, the reads after), and each would otherwise ask PostgreSQL again. Only an owner
    that was up is kept; a refused connection forgets it."""

    def __init__(self):
        self.found, self.lock = {}, threading.Lock()

    def owner(self, catalog, session_id):
        now = SYSTEM.monotonic()
        with self.lock:
            kept = self.found.get(session_id)
            if kept is not None and now - kept[0] < OWNER_FRESH_SECONDS:
                return kept[1]
        owner = catalog.owner(session_id)
        with self.lock:
            if len(self.found) >= OWNERS_KEPT:
                self.found.clear()
            if owner is not None and owner["up"]:
                self.found[session_id] = (now, owner)
        return owner

    def forget(self, session_id):
        with self.lock:
            self.found.pop(session_id, None)


OWNERS = Owners()


def peer(fleet):
    """The node name of a request relayed by a fleet peer, None for any other request; a request that says it
    comes from a peer but is not one is refused (fleet_secret_refused, before anything else is read)."""
    node, secret = request.headers.get(NODE_HEADER), request.headers.get(SECRET_HEADER)
    if node is None and secret is None:
        return None
    if fleet is None:
        raise CompozyError("fleet_secret_refused", "this daemon is in no fleet; it takes no relayed request")
    if not (secret and hmac.compare_digest(secret.encode(), fleet.settings.secret.encode())):
        log.warning("fleet: refused a request with a wrong fleet secret (said node %r, from %s)", (node or "")[:64],
                    request.remote_addr)
        raise CompozyError("fleet_secret_refused", "the fleet secret is wrong: this request is not from a node of "
                                                   "this fleet")
    if not node or node == fleet.node or not PEERS.known(fleet.catalog, node):
        raise CompozyError("fleet_secret_refused", f"{(node or '')[:64]!r} is not a node of this fleet",
                           node=(node or "")[:64])
    return node


def relay_if_remote(manager):
    """The owner's answer when this request is for a session another node owns (or a creation placed on another
    node), else None: this node answers it."""
    fleet = manager.fleet
    if request.endpoint == PLACEMENT:
        return _place(fleet)
    if request.endpoint in HERE:
        return None
    session_id = (request.view_args or {}).get("session_id")
    if not session_id:
        return None
    try:
        validate_id(session_id, "sess", not_found="session_not_found")
    except CompozyError:
        return None  # the view answers it
    flags = manager.catalog.session_flags(session_id)
    if flags is not None and not flags["orphaned"]:
        return None
    try:
        owner = OWNERS.owner(fleet.catalog, session_id)
    except FleetDown as exc:
        raise CompozyError("fleet_catalog_unavailable", f"the session is not on this node and the fleet catalog "
                                                        f"cannot be reached to find its node: {exc}") from None
    if owner is None or owner["node"] == fleet.node:
        return None
    if not owner["up"]:
        raise unreachable(owner["node"], "its heartbeat lapsed")
    try:
        return forward(fleet, owner["node"], owner["address"])
    except CompozyError:
        OWNERS.forget(session_id)
        raise


def _place(fleet):
    """POST /api/sessions with "node": here, relayed to the node named, or to the one with the most free
    capacity that has the workspace ("auto")."""
    body = json_body()  # as the view reads it (cached)
    node = body.get("node")
    if not isinstance(node, str) or node == fleet.node:
        return None
    OPS[PLACEMENT].parse({}, body, query_args())  # a request the view would refuse is refused here, the same way
    try:
        if node == "auto":
            chosen = fleet.catalog.place(body.get("workspace"), body.get("workspace_path")) \
                if isinstance(body.get("workspace") or body.get("workspace_path"), str) else None
            if chosen is None:
                raise CompozyError("workspace_not_found", "no node of the fleet that is up has that workspace",
                                   workspace=body.get("workspace"), workspace_path=body.get("workspace_path"))
            name, address = chosen
        else:
            found = fleet.catalog.node(node)
            if found is None:
                raise CompozyError("node_not_found", f"the fleet has no node {node!r}", node=node)
            if not found["up"]:
                raise unreachable(node, "its heartbeat lapsed")
            name, address = node, found["address"]
    except FleetDown as exc:
        raise CompozyError("fleet_catalog_unavailable", f"the fleet catalog cannot be reached: {exc}") from None
    if name == fleet.node:
        return None
    data = json.dumps({**body, "node": name}).encode()
    return forward(fleet, name, address, data)


def unreachable(node, why):
    return CompozyError("node_unreachable", f"fleet node {node!r} does not answer: {why}", node=node)


def forward(fleet, node, address, body=None):
    """The request sent to node at address; its answer streamed back as it is. A stream relayed holds one of this
    node's stream slots (daemon.max_streams) while it lasts, as a stream of its own would."""
    slot = current_app.extensions[EXTENSION].claim() if _streams() else None
    try:
        response = _forward(fleet, node, address, body)
    except BaseException:
        if slot is not None:
            slot.release()
        raise
    if slot is not None:
        response.call_on_close(slot.release)
    return response


def _streams():
    return request.path.rstrip("/").endswith("/stream") or wants_stream(request)


def _forward(fleet, node, address, body):
    parts = urlsplit(address)
    connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = connection_type(parts.hostname, parts.port, timeout=CONNECT_SECONDS)
    headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
    headers.update({NODE_HEADER: fleet.node, SECRET_HEADER: fleet.settings.secret})
    waited = STREAM_QUIET_SECONDS if _streams() else fleet.settings.relay_timeout
    try:
        connection.connect()
        # An owner that vanished without closing the connection must not hold this request thread for ever: a
        # stream hears at least a keepalive every KEEPALIVE_SECONDS, an answer comes within fleet.relay_timeout.
        connection.sock.settimeout(waited)
        connection.request(request.method, _path(), body=request.get_data() if body is None else body,
                           headers=headers)
        answer = connection.getresponse()
    except TimeoutError:
        connection.close()
        raise unreachable(node, f"{address} did not answer in {waited:g} s") from None
    except OSError as exc:
        connection.close()
        raise unreachable(node, f"{address} refused: {exc.strerror or exc}") from None
    return passthrough(connection, answer, HOP_BY_HOP)


def _path():
    """The path as the client sent it, still percent-encoded, with its query."""
    raw = request.environ.get("REQUEST_URI") or request.environ.get("RAW_URI") or ""
    if raw.startswith("/"):
        return raw
    query = request.query_string.decode("latin-1")
    return quote(request.path) + ("?" + query if query else "")

