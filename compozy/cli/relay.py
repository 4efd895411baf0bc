"""The stdio relay of the native tool server: MCP messages, one per line, to the daemon and back.

Layer 6 (surface). An agent without MCP over HTTP launches `compozy mcp relay` as its stdio server;
the binding secret comes in the environment (never argv). Each message is POSTed to the daemon's
tool server endpoint (usually over its Unix socket) on a thread of its own, so a long call (a
prompt that waits for the answer) never holds up the others; answers are written as they come.
"""

import json
import sys
import threading

from compozy import jsonrpc
from compozy.api import TOOL_SERVER_PATH
from compozy.errors import CompozyError
from compozy.jsonrpc import INTERNAL_ERROR, PARSE_ERROR

ACCEPT = {"Accept": "application/json, text/event-stream"}


class Relay:
    def __init__(self, client, secret, outfile):
        self.client, self.path, self.outfile = client, TOOL_SERVER_PATH + secret, outfile
        self.lock = threading.Lock()

    def run(self, infile):
        """Relay until stdin ends; calls still running are abandoned with the client that made them."""
        for line in infile:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self.write(jsonrpc.error(None, PARSE_ERROR, "not a JSON message"))
                continue
            threading.Thread(target=self.forward, args=(message,), daemon=True).start()
        return 0

    def forward(self, message):
        expects_answer = jsonrpc.wants_answer(message)
        try:
            status, data = self.client.exchange("POST", self.path, message, ACCEPT)
        except CompozyError as exc:
            if expects_answer:
                self.write(jsonrpc.error(message["id"], INTERNAL_ERROR, exc.message, exc.to_body()))
            return
        if not expects_answer:
            return
        answer = _decode(data)
        if not jsonrpc.is_message(answer):
            answer = jsonrpc.error(message["id"], INTERNAL_ERROR, f"the daemon answered HTTP {status} without JSON-RPC")
        elif answer.get("id") is None:
            answer["id"] = message["id"]  # refused before the daemon read the message: it is this one's answer
        self.write(answer)

    def write(self, message):
        line = jsonrpc.encode(message)
        with self.lock:
            self.outfile.write(line)
            self.outfile.flush()


def _decode(data):
    try:
        return json.loads(data)
    except ValueError:
        return None


def relay(client, secret):
    return Relay(client, secret, sys.stdout.buffer).run(sys.stdin.buffer)
