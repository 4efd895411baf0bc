"""The reference agent's prompt directives: their grammar, the context replay block, and the helpers their steps share
(compozy/agents/steps.py: what each one does).

See docs/reference-agent.md for the user-facing description of every directive.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass

from compozy.acp import protocol

STOP_REASONS = ("end_turn", "max_tokens", "max_turn_requests", "refusal")
PERMISSION_KINDS = ("read", "edit", "execute", "delete", "fetch", "search", "other")
PERMISSION_OPTIONS = [
    {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow-always", "name": "Allow always", "kind": "allow_always"},
    {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject-always", "name": "Reject always", "kind": "reject_always"},
]
GARBAGE_PAD_BYTES = protocol.MAX_LINE_BYTES + 512 * 1024
STDERR_BLOCK = (b"x" * 63 + b"\n") * 64  # 4 KiB
USAGE_COST = 0.25  # what each [usage] adds to the session's cumulative cost, in USD

_NUMBER = r"\d+(?:\.\d*)?|\.\d+"
_ARGUMENT_PATTERNS = {
    "chunks": r"(\d+)",
    "hold": r"([A-Za-z0-9_-][A-Za-z0-9._-]*)",
    "wait": r"([A-Za-z0-9_-][A-Za-z0-9._-]*)",
    "sleep": rf"({_NUMBER})",
    "crash": r"(\d+)(?:\s+(once))?",
    "hang": "",
    "ignore-term": "",
    "grandchild": r"(setsid)?",
    "permission": "(" + "|".join(PERMISSION_KINDS) + r")(?:\s+(.+))?",
    "tool": r"(.+)",
    "tool-open": r"(.+)",
    "write": r"(\S+)\s+(\S+)",
    "read": r"(\S+)",
    "put": r"(\S+)\s+(\S+)",
    "rm": r"(\S+)",
    "mv": r"(\S+)\s+(\S+)",
    "blob": r"(\S+)\s+(\d+)",
    "garbage": "",
    "stderr": r"(\d+)",
    "thought": r"(.+)",
    "say": r"(.+)",
    "nest": r"(\d+)\s+(\S+)",
    "plan": "",
    "usage": "",
    "stop": "(" + "|".join(STOP_REASONS) + ")",
    "fail": "",
    "exit": r"(\d+)",
    "recall": "",
    "slow-cancel": rf"({_NUMBER})",
    "linger": r"(\d+)",
    "refuse-steer": "",
    "launch-args": "",
    "mcp": r"([A-Za-z0-9_.-]+)(?:\s+(\{.*\}))?",
    "mcp-many": r"(\d+)\s+([A-Za-z0-9_.-]+)(?:\s+(\{.*\}))?",
    "methods": "",
    "closes": "",
    "mode": "",
    "switch-mode": r"([A-Za-z0-9_-]+)",
    "title": r"(.+)",
    "ask": r"(\S+)\s+(.+)",
    "ask-form": r"(\S+)\s+(.+)",
}
_TOKEN = re.compile(r"\[([a-z][a-z-]*)(?:\s+([^\[\]]*?))?\s*\]")
_REPLAY_BLOCK = re.compile(r"<compozy_context_replay>(.*?)</compozy_context_replay>", re.DOTALL)
_USER_REQUEST_MARKER = "User request:"


def log(text: str) -> None:
    sys.stderr.write(f"[compozy-reference {os.getpid()}] {text}\n")
    sys.stderr.flush()


class TurnCancelled(Exception):
    pass


class TurnFailed(Exception):
    pass


@dataclass(frozen=True)
class Directive:
    name: str
    args: tuple
    token: str


@dataclass(frozen=True)
class ContextReplay:
    messages: list
    request_text: str


def parse_directives(text: str) -> tuple[list[Directive], str]:
    """Directives in order, and the text with their tokens removed and whitespace stripped."""
    found: list[Directive] = []

    def take(match: re.Match) -> str:
        pattern = _ARGUMENT_PATTERNS.get(match.group(1))
        arguments = re.fullmatch(pattern, match.group(2) or "") if pattern is not None else None
        if arguments is None:
            return match.group(0)
        found.append(Directive(match.group(1), arguments.groups(), match.group(0)))
        return ""

    remaining = _TOKEN.sub(take, text)
    return found, remaining.strip()


TITLE_PASS_PREFIX = "Write a short title"
TITLE_WORDS = 6


def title_of(prompt_text: str) -> str:
    """The reference agent's title: the first words of the quoted user line, directives removed."""
    line = next((line[len("User:"):] for line in prompt_text.splitlines() if line.startswith("User:")), "")
    words = parse_directives(line)[1].split()[:TITLE_WORDS]
    title = " ".join(words).strip(" .,:;!?")
    return title[:1].upper() + title[1:] if title else "Untitled conversation"


def split_context_replay(text: str) -> ContextReplay | None:
    """The replayed messages and the real request, or None when the prompt has no replay block."""
    match = _REPLAY_BLOCK.search(text)
    if match is None:
        return None
    rest = text[match.end():]
    marker = rest.find(_USER_REQUEST_MARKER)
    if marker >= 0:
        rest = rest[marker + len(_USER_REQUEST_MARKER):]
    return ContextReplay(_replayed_messages(match.group(1)), rest.strip())


def _replayed_messages(body: str) -> list:
    try:
        entries = json.loads(body)
    except ValueError:
        return []
    if not isinstance(entries, list):
        return []
    return [entry for entry in entries if _is_message(entry)]


def _is_message(entry) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("role"), str) and isinstance(entry.get("text"), str)


def crash_marker_key(session_id: str, prompt_text: str) -> str:
    return hashlib.sha256((session_id + prompt_text).encode("utf-8", "surrogatepass")).hexdigest()


def garbage_lines(session_id: str) -> list[bytes]:
    """Lines a well-behaved client must survive, each to be followed by a newline."""
    unknown_update = {"sessionId": session_id, "update": {"sessionUpdate": "compaction_update"}}
    leak_chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "leak"},
                  "messageId": "leak"}
    leak = {"sessionId": "other-session", "update": leak_chunk}
    return [
        b"this is not json",
        b"\xff\xfe garbage",
        b"[1,2,3]",
        b"42",
        b'{"jsonrpc":"2.0","id":987654,"result":{}}',
        protocol.encode(protocol.make_notification("session/update", unknown_update)).rstrip(b"\n"),
        protocol.encode(protocol.make_notification("session/update", leak)).rstrip(b"\n"),
        b'{"jsonrpc":"2.0","method":"session/update","params":{"pad":"' + b"x" * GARBAGE_PAD_BYTES + b'"}}',
    ]


def _text_content(text: str) -> dict:
    return {"type": "content", "content": {"type": "text", "text": text}}


def error_message(error: dict) -> str:
    return str(error.get("message", "")) or f"error {error.get('code')}"


def permission_options(spec: str | None) -> list:
    """The options a [permission KIND SPEC] offers: the four of PERMISSION_OPTIONS without a SPEC; none for
    `none`; else `ID/KIND/NAME | ...` in that order, where an empty KIND or a missing /NAME leaves that field out
    and KIND may be one ACP does not know."""
    if spec is None:
        return PERMISSION_OPTIONS
    if spec.strip() == "none":
        return []
    options = []
    for entry in spec.split("|"):
        option_id, _, rest = entry.strip().partition("/")
        kind, has_name, name = rest.partition("/")
        option = {"optionId": option_id}
        if kind.strip():
            option["kind"] = kind.strip()
        if has_name:
            option["name"] = name.strip()
        options.append(option)
    return options


def permission_outcome(response: protocol.Response | None, options: list) -> tuple[str, str]:
    """("granted" | "denied" | "invalid" | "cancelled", label) from the client's answer: granted for an offered
    option of an allow kind, invalid for an optionId that was not offered."""
    if response is None:
        return "cancelled", ""
    if response.error:
        if response.error.get("code") == protocol.REQUEST_CANCELLED:
            return "cancelled", ""
        return "denied", error_message(response.error)
    outcome = response.result.get("outcome") if isinstance(response.result, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return "cancelled", ""
    option_id = str(outcome.get("optionId"))
    chosen = next((option for option in options if option["optionId"] == option_id), None)
    if chosen is None:
        return "invalid", option_id
    return ("granted" if chosen.get("kind") in ("allow_once", "allow_always") else "denied"), option_id
