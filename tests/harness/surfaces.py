"""The three surfaces a scenario runs on, each derived from the operation table (compozy/api.py).

A surface has one method, call(op, args) -> Outcome. Scenarios never name a surface's mechanics.
"""

import io
import json
import re
import zipfile
import subprocess
import sys
from dataclasses import dataclass, field

from compozy.cli.client import encode_query, request
from compozy.errors import CompozyError

from tests.harness.answers import answer_problem, error_problem, resource_key
from tests.harness.daemon import ENTRY, test_environment
from tests.harness.ops import OPS, STREAM, argv, collect, fields_of, in_body
from tests.harness.scenario import ScenarioError
from tests.harness.served import ServedManager

CLI_TIMEOUT = 120


@dataclass
class Outcome:
    result: object = None
    document: object = None
    error: str | None = None
    message: str | None = None
    http_status: int | None = None
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    extra: dict = field(default_factory=dict)


def check(op_name, problem_of, *answer):
    """Fail the step when the answer is not one /api/openapi.json documents for the operation."""
    problem = problem_of(OPS[op_name], *answer)
    if problem:
        raise ScenarioError(problem)


def unwrap(op_name, document):
    key = None if op_name == STREAM else resource_key(OPS[op_name])
    if key and isinstance(document, dict) and key in document:
        return document[key]
    return document


def scoped(operation):
    return "workspace" in operation.path_params


def answers_a_file(operation):
    """An operation whose answer is a file (an export), not a JSON document."""
    return any(success.media for success in operation.success)


def file_result(data, media_type=None):
    """What a scenario matches of a file answer: its text, or a zip archive's file names (and the media type
    where the surface sees it)."""
    if isinstance(data, bytes) and data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            found = {"files": sorted(archive.namelist())}
    else:
        found = {"text": data.decode() if isinstance(data, bytes) else data}
    return {**found, **({"media_type": media_type} if media_type else {})}


class InProcess:
    """The manager façade itself, in the test process (its app served too, for the agents' native tools)."""

    name = "inproc"

    def __init__(self, home):
        self.served = ServedManager(home)
        self.manager = None

    def start(self):
        self.manager = self.served.start().manager
        return self

    def call(self, op_name, args):
        operation, fields = OPS[op_name], fields_of(args)
        try:
            if scoped(operation) and "workspace" not in fields:
                fields["workspace"] = self._workspace_of(fields["session_id"])
            document = self._call(op_name, operation, fields)
        except CompozyError as exc:
            check(op_name, error_problem, exc.code, exc.to_body())
            return Outcome(error=exc.code, message=exc.message, document=exc.to_body())
        if answers_a_file(operation):
            check(op_name, answer_problem, operation.status_for(), None)
            return Outcome(result=file_result(document.text, document.media_type), document=document)
        if op_name != STREAM:
            check(op_name, answer_problem, operation.status_for(getattr(document, "kind", None)), document)
        return Outcome(result=unwrap(op_name, document), document=document)

    def _call(self, op_name, operation, fields):
        """The façade method the table names: path parameters, then the rest as body or query."""
        keywords = {name: fields.pop(name) for name in operation.path_params if name in fields}
        if operation.body is not None:
            keywords["body"] = in_body(fields)
        elif operation.query:
            keywords["query"] = encode_query(fields)
        elif fields:
            raise ScenarioError(f"{op_name} takes no {', '.join(sorted(fields))}")
        if op_name == STREAM:
            return collect(self.manager.prompt_stream(**keywords))
        return getattr(self.manager, operation.facade)(**keywords)

    def _workspace_of(self, session_id):
        # Like the CLI: learn the session's workspace first; an unknown session fails here.
        return self.manager.get_session(session_id)["session"]["workspace_id"]

    def restart(self):
        self.close()
        return self.start()

    def close(self):
        self.served.close()
        self.manager = None


class HttpSurface:
    """Real HTTP to a real daemon (waitress on an ephemeral loopback port)."""

    name = "http"

    def __init__(self, daemon):
        self.daemon = daemon

    @property
    def client(self):
        return self.daemon.client(timeout=CLI_TIMEOUT)

    def call(self, op_name, args):
        operation, fields = OPS[op_name], fields_of(args)
        try:
            if scoped(operation) and "workspace" not in fields:
                fields["workspace"] = self._workspace_of(fields["session_id"])
            method, path, query, body = request(operation, fields)
            body = in_body(body) if body is not None else None
            if answers_a_file(operation):
                media_type, data = self.client.fetch(method, path, query=query)
                check(op_name, answer_problem, 200, None)
                return Outcome(result=file_result(data, media_type), http_status=200)
            if op_name == STREAM:
                status, document = 200, collect(self.client.stream(method, path, body=body, query=query))
            else:
                status, document = self.client.call(method, path, body=body, query=query)
        except CompozyError as exc:
            if getattr(exc, "http_status", None) is not None:
                check(op_name, error_problem, exc.code, exc.body)
            return Outcome(error=exc.code, message=exc.message, document=getattr(exc, "body", None),
                           http_status=getattr(exc, "http_status", None))
        if op_name != STREAM:
            check(op_name, answer_problem, status, document)
        return Outcome(result=unwrap(op_name, document), document=document, http_status=status)

    def _workspace_of(self, session_id):
        # Like the CLI: learn the session's workspace first; an unknown session fails here.
        method, path, _, _ = request(OPS["session.get"], {"session_id": session_id})
        return self.client.call(method, path)[1]["session"]["workspace_id"]

    def restart(self):
        self.daemon.restart()
        return self

    def close(self):
        self.daemon.stop()


_ERROR_LINE = re.compile(r"^Error: ([a-z_]+): (.*)$", re.MULTILINE)


class CliSurface:
    """The real `compozy` command with -o json against the daemon's Unix socket."""

    name = "cli"

    def __init__(self, daemon):
        self.daemon = daemon

    def call(self, op_name, args):
        command = argv(op_name, fields_of(args))
        if "-o" not in command:
            command = command + ["-o", "json"]
        completed = subprocess.run([sys.executable, ENTRY, "--url", self.daemon.socket_url, *command],
                                   env=test_environment(self.daemon.home), capture_output=True,
                                   timeout=CLI_TIMEOUT)
        data = completed.stdout  # bytes: a file command may write a binary file (a zip)
        completed.stdout, completed.stderr = data.decode("utf-8", "replace"), completed.stderr.decode("utf-8", "replace")
        outcome = Outcome(exit_code=completed.returncode, stdout=completed.stdout, stderr=completed.stderr)
        match = _ERROR_LINE.search(completed.stderr)
        if completed.returncode != 0 and match:
            outcome.error, outcome.message = match.group(1), match.group(2)
            return outcome
        if answers_a_file(OPS[op_name]):
            outcome.result = file_result(data)
            return outcome
        try:
            outcome.document = _parse_json_output(completed.stdout)
        except ValueError:
            outcome.document = None
        outcome.result = unwrap(op_name, outcome.document)
        return outcome

    def restart(self):
        self.daemon.restart()
        return self

    def close(self):
        self.daemon.stop()


def _parse_json_output(text):
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
