"""Every request an agent sends gets a JSON-RPC answer, and file requests never hold up its output.

A stand-in agent (a few lines of Python) writes the requests a confused or hostile agent could send
and records every line it receives; compozy's real AgentProcess and AgentClient answer it. Issue 14,
findings 4 (file requests off the output reader), 9 (every request answered) and 10 (caps measured
on the encoded line).
"""

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from compozy.acp import protocol
from compozy.acp.client import AgentClient
from compozy.acp.driver import AcpError, AgentProcess
from compozy.config import Provider

STAND_IN = """
import sys, time
received = open(sys.argv[1], "ab", buffering=0)
for line in open(sys.argv[2], "rb"):
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
    time.sleep(0.01)
for line in sys.stdin.buffer:
    received.write(line)
"""
HUGE = 50 * 1024 * 1024
TIMEOUT = 30.0


class Listener:
    """What a session would be, reduced to recording what reaches it."""

    def __init__(self, root):
        self.root, self.outputs, self.writes = root, [], []
        self.release = threading.Event()
        self.blocking = False
        self.block_started = threading.Event()

    def workspace_root(self):
        if self.blocking:  # a file request that takes as long as the test wants
            self.block_started.set()
            self.release.wait(TIMEOUT)
        if self.root == "raise":
            raise OSError(5, "realpath failed mid-swap")
        return self.root

    def files_denied(self):
        return False

    def output(self, client, events):
        self.outputs.append((time.monotonic(), events))

    def write(self, client, path, reply):
        self.writes.append(path)
        reply.answer({"option_id": "allow-once", "name": "Allow", "kind": "allow_once"})

    def exited(self, client):
        pass


def request(request_id, method, params):
    return protocol.encode(protocol.make_request(request_id, method, params))


def update(text):
    return protocol.encode(protocol.make_notification("session/update", {
        "sessionId": "acp-1", "update": {"sessionUpdate": "agent_message_chunk",
                                         "content": {"type": "text", "text": text}}}))


def run_stand_in(tmp_path, lines, listener):
    script, script_lines, received = tmp_path / "agent.py", tmp_path / "lines.jsonl", tmp_path / "received.jsonl"
    script.write_text(STAND_IN)
    with open(script_lines, "wb") as handle:
        for line in lines:
            handle.write(line)
    received.touch()
    client = AgentClient(Provider("stand-in", [sys.executable], {}), listener=listener, label="stand-in")
    client.acp_session_id = "acp-1"
    client.process = AgentProcess([sys.executable, str(script), str(received), str(script_lines)], str(tmp_path),
                                  dict(os.environ), client, label="stand-in")
    client.process.start()
    return client, received


def answers(received, ids):
    """The answers the stand-in received, by id, once every id has one."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        found = {}
        for line in Path(received).read_bytes().splitlines():
            message = json.loads(line)
            if "id" in message:
                found[message["id"]] = message
        if set(ids) <= set(found):
            return found
        time.sleep(0.05)
    raise AssertionError(f"no answer to {sorted(set(ids) - set(found))}")


@pytest.fixture
def workspace(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    return str(path.resolve())


@pytest.fixture
def stop_agents():
    clients = []
    yield clients.append
    for client in clients:
        client.process.kill_tree(1.0, 5.0)


def test_every_odd_request_gets_an_answer(tmp_path, workspace, stop_agents):
    big = "x" * HUGE
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":["' + workspace.encode() + b'/a"]}\n',
        request(2, "fs/write_text_file", {"sessionId": "acp-1", "path": workspace + "/big", "content": big}),
        b'{"jsonrpc":"2.0","method":"fs/write_text_file","params":{"sessionId":"acp-1","content":"'
        + big.encode() + b'"},"id":"tail-id"}\n',
        b'{"jsonrpc":"2.0","id":4,"method":"fs/write_text_file","params":{"sessionId":"acp-1","path":"'
        + workspace.encode() + b'/s.txt","content":"\\ud800"}}\n',
    ]
    listener = Listener(workspace)
    client, received = run_stand_in(tmp_path, lines, listener)
    stop_agents(client)
    found = answers(received, [1, 2, "tail-id", 4])
    assert found[1]["error"]["code"] == protocol.INVALID_REQUEST
    assert found[2]["error"]["code"] == protocol.INVALID_REQUEST
    assert found["tail-id"]["error"]["code"] == protocol.INVALID_REQUEST
    assert found[4]["error"]["code"] == protocol.INVALID_PARAMS
    assert not os.listdir(workspace)  # no empty file, no temporary file left behind


def test_a_failing_lookup_is_answered_with_an_internal_error(tmp_path, stop_agents):
    lines = [request(1, "fs/read_text_file", {"sessionId": "acp-1", "path": "/tmp/x"})]
    client, received = run_stand_in(tmp_path, lines, Listener("raise"))
    stop_agents(client)
    assert answers(received, [1])[1]["error"]["code"] == protocol.INTERNAL_ERROR


def test_a_slow_file_request_does_not_hold_up_the_agents_output(tmp_path, workspace, stop_agents):
    """While a read is outstanding, the agent's next output (and with it cancel, which is decided by
    what the agent says) is still read; the read is answered once it finishes."""
    Path(workspace, "a.txt").write_text("content")
    listener = Listener(workspace)
    listener.blocking = True
    lines = [request(1, "fs/read_text_file", {"sessionId": "acp-1", "path": workspace + "/a.txt"}),
             update("still talking")]
    client, received = run_stand_in(tmp_path, lines, listener)
    stop_agents(client)
    assert listener.block_started.wait(TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while not listener.outputs and time.monotonic() < deadline:
        time.sleep(0.02)
    assert listener.outputs, "the update after a blocked file request was never read"
    assert not Path(received).read_bytes(), "the read was answered before it finished"
    listener.release.set()
    assert answers(received, [1])[1]["result"] == {"content": "content"}


def test_a_fifo_in_the_workspace_is_refused_at_once(tmp_path, workspace, stop_agents):
    os.mkfifo(os.path.join(workspace, "pipe"))
    lines = [request(1, "fs/read_text_file", {"sessionId": "acp-1", "path": workspace + "/pipe"}),
             request(2, "fs/write_text_file", {"sessionId": "acp-1", "path": workspace + "/pipe", "content": "x"})]
    client, received = run_stand_in(tmp_path, lines, Listener(workspace))
    stop_agents(client)
    found = answers(received, [1, 2])
    assert "regular" in found[1]["error"]["message"] and "regular" in found[2]["error"]["message"]


def test_non_ascii_text_is_sent_as_itself_and_a_lone_surrogate_escaped():
    line = protocol.encode(protocol.make_request(1, "session/prompt", {"text": "é" * 500_000}))
    assert len(line) < 1_000_100 and "é".encode() in line
    assert protocol.encode({"text": "\ud800"}) == b'{"text":"\\ud800"}\n'
    assert protocol.encoded_size("a\nb\x01é") == 1 + 2 + 1 + 6 + 2


def test_a_request_over_the_line_limit_is_refused_before_it_is_sent(tmp_path, stop_agents):
    client, received = run_stand_in(tmp_path, [], Listener(None))
    stop_agents(client)
    with pytest.raises(AcpError, match="encoded"):
        client.process.call("session/prompt", {"text": "\x01" * (protocol.MAX_LINE_BYTES // 5)}, TIMEOUT)


@pytest.mark.parametrize("head, tail, expected", [
    (b'{"jsonrpc":"2.0","id":7,"method":"m","params":{"content":"xx', b'xx"}}', 7),
    (b'{"jsonrpc":"2.0","method":"m","params":{"content":"xx', b'xx"},"id":"a\\"b"}', 'a"b'),
    (b'{"jsonrpc":"2.0","method":"session/update","params":{"pad":"xx', b'xx"}}', protocol.NO_ID),
    (b'{"jsonrpc":"2.0","id":7,"result":{"pad":"xx', b'xx"}}', protocol.NO_ID),
])
def test_the_id_of_a_request_too_long_to_parse_is_recovered(head, tail, expected):
    assert protocol.recover_request_id(head, tail) == expected


def test_agent_chosen_strings_cannot_forge_log_lines(tmp_path, stop_agents):
    import io
    import logging

    from compozy.daemon.logs import RedactingFormatter

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s %(message)s"))
    logger = logging.getLogger("compozy")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        forged = "x\nERROR compozy.daemon forged line\x1b]0;title\x07"
        lines = [protocol.encode(protocol.make_notification(forged, {})),
                 protocol.encode(protocol.make_notification("session/update", {"sessionId": forged, "update": {}})),
                 request(1, "fs/read_text_file", {"sessionId": forged})]
        client, received = run_stand_in(tmp_path, lines, Listener(None))
        stop_agents(client)
        answers(received, [1])
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    text = stream.getvalue()
    assert text.count("forged line") == 3, text
    assert "\x1b" not in text and not any(line.startswith("ERROR compozy.daemon forged") for line in text.splitlines())


def test_the_tool_relay_writes_utf8_lines_to_the_agent():
    import io

    from compozy.cli.relay import Relay

    out = io.BytesIO()
    relay = Relay(None, "secret", out)
    relay.write({"text": "é"})
    relay.write({"text": "\ud800"})
    assert out.getvalue() == '{"text":"é"}\n'.encode() + b'{"text":"\\ud800"}\n'
