"""A small scripted ACP agent that misbehaves on purpose, for tests/test_agent_faults.py.

FAULT (environment) picks the misbehaviour; every other message is answered the plain way
(initialize, session/new, session/prompt streams one chunk and ends the turn, session/cancel ends
a waiting prompt `cancelled`). Stdlib only: it runs as `python3 tests/harness/fault_agent.py`.

    silent-init     never answers initialize (reads its input for ever)
    wrong-ids       answers every request under another id
    big-line        a prompt writes one 10 MiB line that is not JSON, then answers
    big-chunk       a prompt streams one 10 MiB agent_message_chunk, then answers
    stdout-flood    a prompt writes 32 MiB of lines that are not JSON, then answers
    wrong-prompt-id a prompt streams a chunk and answers under another id, then stays silent
    regroup         a prompt forks a child that moves to a process group of its own and forks
                    again; both ignore SIGTERM, and the agent ignores SIGTERM and cancel
"""

import json
import os
import signal
import sys
import time

FAULT = os.environ.get("FAULT", "")
MIB = 1024 * 1024


def write(data):
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def send(message):
    write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")


def answer(request_id, result):
    send({"id": request_id + 1000 if FAULT == "wrong-ids" else request_id, "result": result})


def chunk(session_id, text):
    send({"method": "session/update", "params": {"sessionId": session_id, "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})


def regroup():
    """A child in a process group of its own (same session), which forks a grandchild; both stubborn."""
    if os.fork() == 0:
        os.setpgid(0, 0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.fork()
        while True:
            time.sleep(1)


def prompt(request_id, session_id):
    """Returns the id of a prompt left waiting (answered by a cancel), or None."""
    if FAULT == "big-line":
        write(b"x" * (10 * MIB) + b"\n")
    elif FAULT == "big-chunk":
        chunk(session_id, "y" * (10 * MIB))
    elif FAULT == "stdout-flood":
        line = b"this is not json at all " * 40 + b"\n"
        for _ in range(32 * MIB // len(line)):
            sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    elif FAULT == "regroup":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        regroup()
        chunk(session_id, "regrouped ")
        return None  # never answers, and ignores cancel
    chunk(session_id, "after the fault ")
    if FAULT == "wrong-prompt-id":
        send({"id": request_id + 7, "result": {"stopReason": "end_turn"}})
        return None
    answer(request_id, {"stopReason": "end_turn"})
    return None


def main():
    waiting = None
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            if FAULT != "silent-init":
                answer(request_id, {"protocolVersion": 1, "agentCapabilities": {"loadSession": False},
                                    "authMethods": []})
        elif method == "session/new":
            answer(request_id, {"sessionId": "fault_1"})
        elif method == "session/prompt":
            waiting = prompt(request_id, message["params"]["sessionId"])
        elif method == "session/cancel":
            if waiting is not None and FAULT != "regroup":
                answer(waiting, {"stopReason": "cancelled"})
                waiting = None
        elif request_id is not None and method is not None:
            send({"id": request_id, "error": {"code": -32601, "message": "Method not found"}})


if __name__ == "__main__":
    main()
