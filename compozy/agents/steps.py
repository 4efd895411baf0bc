"""What each reference-agent directive does: one method per directive, mixed into the agent's Turn.

The grammar of directives and the helpers they share live in compozy/agents/directives.py; see
docs/reference-agent.md for the user-facing description of every directive.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from compozy.agents.directives import (
    STDERR_BLOCK, USAGE_COST, Directive, TurnCancelled, TurnFailed, _text_content, error_message, garbage_lines, log,
    permission_options, permission_outcome,
)
from compozy.agents.tools import ToolError


class DirectiveSteps:
    """One method per directive, mixed into the reference agent's Turn.

    Relies on the Turn's primitives: agent, session, prompt_text, open_tool_calls, checkpoint, pause,
    say, update, ask_client and start_tool_call.
    """

    def run_directive(self, directive: Directive) -> None:
        getattr(self, "do_" + directive.name.replace("-", "_"))(*directive.args)

    def do_chunks(self, count: str) -> None:
        for number in range(1, int(count) + 1):
            self.checkpoint()
            self.say(f"chunk {number} ")

    def do_hold(self, name: str) -> None:
        gate = Path(self.session.cwd, ".compozy-gates", name)
        self.say(f"holding {name} ")
        self.pause(math.inf, until=gate.exists)

    def do_wait(self, name: str) -> None:
        """[hold NAME] without a word: the client hears nothing until the gate opens."""
        self.pause(math.inf, until=Path(self.session.cwd, ".compozy-gates", name).exists)

    def do_sleep(self, seconds: str) -> None:
        self.pause(float(seconds))

    def do_crash(self, count: str, once: str | None) -> None:
        self.do_chunks(count)
        if once and not self.agent.claim_crash_marker(self.session.session_id, self.prompt_text):
            return
        log("crashing on purpose ([crash] directive)")
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(10)

    def do_hang(self) -> None:
        log("hanging forever ([hang] directive)")
        while True:
            time.sleep(0.05)

    def do_ignore_term(self) -> None:
        pass  # applied on the main thread when the prompt arrived: signal.signal only works there

    def do_slow_cancel(self, seconds: str) -> None:
        pass  # read for the whole turn when the prompt arrived

    def do_refuse_steer(self) -> None:
        pass  # read for the whole turn when the prompt arrived

    def do_grandchild(self, setsid: str | None) -> None:
        child = subprocess.Popen(
            [sys.executable, "-P", "-c", "import time; time.sleep(3600)"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=bool(setsid),
        )
        self.agent.children.append(child)
        pid_dir = Path(self.session.cwd, ".compozy-pids")
        pid_dir.mkdir(parents=True, exist_ok=True)
        with open(pid_dir / "grandchildren", "a", encoding="ascii") as pid_file:
            pid_file.write(f"{child.pid}\n")
        self.say(f"spawned {child.pid} ")

    def do_permission(self, kind: str, spec: str | None) -> None:
        title = f"Reference {kind}"
        location = {"path": os.path.join(self.session.cwd, f"reference-{kind}.txt")}
        call_id = self.start_tool_call(title, kind, "pending", locations=[location])
        self.open_tool_calls.append(call_id)
        options = permission_options(spec)
        response = self.ask_client("session/request_permission", {
            "toolCall": {"toolCallId": call_id, "title": title, "kind": kind},
            "options": options,
        })
        outcome, label = permission_outcome(response, options)
        if outcome == "cancelled":
            raise TurnCancelled()
        self.open_tool_calls.remove(call_id)
        status = "completed" if outcome == "granted" else "failed"
        self.update({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status})
        self.say(f"permission {outcome}: {label} ")

    def do_ask(self, choices: str, question: str) -> None:
        """[ask CHOICES QUESTION]: an ACP form elicitation, one field `answer`: one of CHOICES (a|b|c), or any
        text for `-`. Only to a client that advertised elicitation.form."""
        field: dict = {"type": "string", "title": "Answer"}
        if choices != "-":
            field["enum"] = choices.split("|")
        content = self.elicit(question, {"type": "object", "properties": {"answer": field}, "required": ["answer"]})
        if content is not None:
            self.say(f"answered: {content.get('answer')} ")

    def do_ask_form(self, fields: str, question: str) -> None:
        """[ask-form FIELDS QUESTION]: a form of several fields, NAME[?]:TYPE[=DEFAULT] joined by commas (TYPE
        string, number, integer or boolean; a field with neither a default nor `?` is required); says the
        content as JSON."""
        properties: dict = {}
        required = []
        for spec in fields.split(","):
            name, _, rest = spec.partition(":")
            kind, has_default, default = rest.partition("=")
            optional = name.endswith("?")
            name = name.rstrip("?")
            properties[name] = {"type": kind or "string", "title": name.capitalize()}
            if has_default:
                properties[name]["default"] = json.loads(default) if kind != "string" else default
            elif not optional:
                required.append(name)
        content = self.elicit(question, {"type": "object", "properties": properties, "required": required})
        if content is not None:
            self.say(f"answered: {json.dumps(content, sort_keys=True)} ")

    def elicit(self, question: str, schema: dict) -> dict | None:
        """The content of an accepted elicitation/create; None (said) when not offered, refused or not accepted."""
        if not self.agent.questions:
            self.say("ask not offered ")
            return None
        response = self.ask_client("elicitation/create", {"mode": "form", "message": question,
                                                          "requestedSchema": schema})
        if response is None:
            raise TurnCancelled()
        if response.error:
            self.say(f"ask refused: {error_message(response.error)} ")
            return None
        result = response.result if isinstance(response.result, dict) else {}
        if result.get("action") == "accept":
            return result.get("content") or {}
        self.say(f"ask {result.get('action')} ")
        return None

    def do_tool(self, name: str) -> None:
        call_id = self.start_tool_call(name, "other", "in_progress")
        content = [{"type": "content", "content": {"type": "text", "text": f"{name} done"}}]
        self.update({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed",
                     "content": content})

    def do_tool_open(self, name: str) -> None:
        self.start_tool_call(name, "other", "in_progress")

    def do_write(self, path: str, text: str) -> None:
        response = self.ask_client("fs/write_text_file", {"path": self.absolute(path), "content": text})
        if response is None:
            raise TurnCancelled()
        self.say(f"write refused: {error_message(response.error)} " if response.error else f"wrote {path} ")

    def do_read(self, path: str) -> None:
        response = self.ask_client("fs/read_text_file", {"path": self.absolute(path)})
        if response is None:
            raise TurnCancelled()
        if response.error:
            self.say(f"read refused: {error_message(response.error)} ")
            return
        content = response.result.get("content") if isinstance(response.result, dict) else None
        self.say(f"read: {content} ")

    # The agent's own process changing files, as a shell command would: no ACP request, nothing the client sees.

    def do_put(self, path: str, text: str) -> None:
        target = Path(self.absolute(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n")
        self.say(f"put {path} ")

    def do_rm(self, path: str) -> None:
        Path(self.absolute(path)).unlink()
        self.say(f"removed {path} ")

    def do_mv(self, source: str, target: str) -> None:
        os.replace(self.absolute(source), self.absolute(target))
        self.say(f"moved {source} {target} ")

    def do_blob(self, path: str, kibibytes: str) -> None:
        target = Path(self.absolute(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bytes(range(256)) * (int(kibibytes) * 4))
        self.say(f"blob {path} ")

    def do_garbage(self) -> None:
        for line in garbage_lines(self.session.session_id):
            self.agent.endpoint.send_raw(line + b"\n")

    def do_stderr(self, kibibytes: str) -> None:
        sys.stderr.flush()
        remaining = int(kibibytes) * 1024
        while remaining > 0:
            sys.stderr.buffer.write(STDERR_BLOCK[:remaining])
            sys.stderr.buffer.flush()
            remaining -= len(STDERR_BLOCK)

    def do_thought(self, text: str) -> None:
        self.update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text},
                     "messageId": uuid.uuid4().hex})

    def do_say(self, text: str) -> None:
        self.say(text)

    def do_nest(self, depth: str, text: str) -> None:
        """A tool_call whose rawInput holds TEXT `depth` lists deep (a document that recursion cannot walk)."""
        value: object = text
        for _ in range(int(depth)):
            value = [value]
        self.start_tool_call("Nested", "other", "completed", rawInput=value)

    def do_plan(self) -> None:
        self.update({"sessionUpdate": "plan", "entries": [
            {"content": "Read the request", "priority": "high", "status": "completed"},
            {"content": "Write the reply", "priority": "medium", "status": "in_progress"},
        ]})

    def do_usage(self) -> None:
        cost = self.agent.add_cost(self.session, USAGE_COST)
        self.update({"sessionUpdate": "usage_update", "used": 1200, "size": 200000,
                     "cost": {"amount": cost, "currency": "USD"}})
        self.usage = {"inputTokens": 1000, "outputTokens": 200, "totalTokens": 1200}

    def do_stop(self, reason: str) -> None:
        self.stop_reason = reason

    def do_fail(self) -> None:
        raise TurnFailed()

    def do_exit(self, code: str) -> None:
        log(f"exiting with code {code} ([exit] directive)")
        os._exit(int(code))

    def do_launch_args(self) -> None:
        self.say("launch args: " + (" ".join(self.agent.settings.launch_args) or "(none)") + " ")

    def do_recall(self) -> None:
        self.recall = True

    def do_mcp(self, name: str, arguments: str | None) -> None:
        self.do_mcp_many("1", name, arguments)

    def do_mcp_many(self, count: str, name: str, arguments: str | None) -> None:
        """The tool called `count` times at once (one thread each), each reported as [mcp] reports one."""
        try:
            parsed = json.loads(arguments or "{}")
        except ValueError as error:
            self.say(f"mcp {name} error: arguments are not JSON: {error} ")
            return
        call_ids = [self.start_tool_call(name, "other", "in_progress", rawInput=parsed) for _ in range(int(count))]
        outcomes: list = [None] * len(call_ids)

        def call(index: int) -> None:
            try:
                outcomes[index] = self.agent.tools_for(self.session).call_tool(name, parsed)
            except Exception as error:  # noqa: BLE001 (reported as the call's failure, like a refused call)
                outcomes[index] = error if isinstance(error, ToolError) else ToolError(f"tools/call: {error}")
        threads = [threading.Thread(target=call, args=(i,), name="mcp-many", daemon=True) for i in range(len(call_ids))]
        for thread in threads:
            thread.start()
        self.await_call(lambda: [thread.join() for thread in threads])
        for call_id, outcome in zip(call_ids, outcomes):
            self._report_tool(name, call_id, outcome)

    def _report_tool(self, name: str, call_id: str, outcome) -> None:
        if isinstance(outcome, ToolError):
            self.update({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed",
                         "content": [_text_content(str(outcome))], "rawOutput": {"error": str(outcome)}})
            self.say(f"mcp {name} error: {outcome} ")
            return
        text = "".join(block.get("text", "") for block in outcome.get("content") or [] if isinstance(block, dict))
        self.update({"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                     "status": "failed" if outcome.get("isError") else "completed",
                     "content": [_text_content(text)], "rawOutput": outcome})
        self.say(f"mcp {name}: {text} ")

    def do_linger(self, count: str) -> None:
        self.agent.lingering.append((self.session.session_id, int(count)))
