"""The agent's requests to us, in ACP's shapes: permission prompts, questions (form elicitation) and file access.

Layer 3 (the ACP seam). Who decides, what is held and which folder an agent may reach is the
session's policy (the listener); here the requests are decoded, files are read and written
beneath the workspace root through compozy.boundary, and every request is answered in ACP's
shapes. A held request is answered later through its reply object.
"""

import logging
from dataclasses import dataclass

from compozy import boundary
from compozy.acp import protocol

log = logging.getLogger("compozy.acp.requests")

REQUEST_PERMISSION = "session/request_permission"
READ_TEXT_FILE = "fs/read_text_file"
WRITE_TEXT_FILE = "fs/write_text_file"
FILE_METHODS = (READ_TEXT_FILE, WRITE_TEXT_FILE)
ELICITATION_CREATE = "elicitation/create"  # ACP 1.21 (stable), offered as clientCapabilities.elicitation.form
MAX_QUESTION_CHARS = 2000
ACCESS_DENIED = -32001
MAX_READ_BYTES = 8 * 1024 * 1024
ALLOWING_KINDS = ("allow_once", "allow_always")


@dataclass(frozen=True)
class PermissionAsk:
    """What a session/request_permission asks, in the policy's words."""

    tool_call_id: object
    title: object
    kind: str
    paths: list
    options: list  # [{"option_id", "name", "kind"}] as offered (offered_options)


@dataclass(frozen=True)
class QuestionAsk:
    """What an elicitation/create (form mode) asks: its message, its requested schema, and the options a person
    may answer with: one per choice when the form is one choice (an enum, a boolean), else `accept` (with the
    form's content), and always `decline`."""

    message: str
    schema: dict
    options: list  # [{"option_id", "name", "kind": "accept" | "decline"}]


def handle(client, listener, request):
    """Answer (now or later, through a reply) one request the agent sent; whatever goes wrong, the
    agent gets an answer rather than waiting for ever."""
    try:
        _handle(client, listener, request)
    except Exception as exc:  # noqa: BLE001
        log.exception("%s: %r failed", client.label, request.method[:80])
        client.process.respond_error(request.id, protocol.INTERNAL_ERROR, f"{type(exc).__name__} while answering")


def _handle(client, listener, request):
    handler = {REQUEST_PERMISSION: _permission, READ_TEXT_FILE: _read,
               WRITE_TEXT_FILE: _write, ELICITATION_CREATE: _question}.get(request.method)
    if handler is None:
        client.process.respond_error(request.id, protocol.METHOD_NOT_FOUND, "Method not found",
                                     {"method": request.method[:200]})
        return
    if request.params.get("sessionId") != client.acp_session_id:
        log.warning("%s: refused %r for foreign ACP session %r", client.label, request.method[:80],
                    str(request.params.get("sessionId"))[:80])
        client.process.respond_error(request.id, protocol.INVALID_PARAMS, "unknown sessionId")
        return
    handler(client, listener, request)


# -- permission prompts ---------------------------------------------------------------------


def _permission(client, listener, request):
    params = request.params
    tool_call = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}
    paths = [loc.get("path") for loc in tool_call.get("locations") or [] if isinstance(loc, dict)]
    ask = PermissionAsk(tool_call.get("toolCallId"), tool_call.get("title"), str(tool_call.get("kind") or "other"),
                        paths, offered_options(params.get("options")))
    listener.permission(client, ask, PermissionReply(client.process, request.id))


def offered_options(options):
    """The agent's options in the interface's shape and the agent's order. A missing or non-text name or
    kind stays missing and an unknown kind is kept; an entry without a text optionId cannot be answered
    with, so it is left out."""
    offered = []
    for option in options if isinstance(options, list) else []:
        if not isinstance(option, dict) or not isinstance(option.get("optionId"), str):
            log.warning("ignored a permission option without an optionId: %.200r", option)
            continue
        offered.append({"option_id": option["optionId"],
                        **{key: option[key] for key in ("name", "kind") if isinstance(option.get(key), str)}})
    return offered


class PermissionReply:
    """Answers one permission request with the option chosen, or cancelled for None."""

    def __init__(self, process, rpc_id):
        self.process, self.rpc_id = process, rpc_id

    def answer(self, option):
        if option is None:
            return self.process.respond(self.rpc_id, {"outcome": {"outcome": "cancelled"}})
        return self.process.respond(self.rpc_id, {"outcome": {"outcome": "selected", "optionId": option["option_id"]}})


# -- questions (form elicitation) ---------------------------------------------------------------


def _question(client, listener, request):
    params = request.params
    schema = params.get("requestedSchema")
    if params.get("mode", "form") != "form" or not isinstance(schema, dict):
        return client.process.respond_error(request.id, protocol.INVALID_PARAMS, "only form elicitation (mode form "
                                            "with a requestedSchema) is offered")
    message, schema = str(params.get("message") or "")[:MAX_QUESTION_CHARS], form_schema(schema)
    listener.question(client, QuestionAsk(message, schema, question_options(schema)),
                      QuestionReply(client.process, request.id, schema))


def form_schema(schema):
    """The agent's form with what is not a form left out (a field whose spec is no object, a required name that is
    no field), so that what answers it (the daemon, the page, attach) reads it without guarding every step."""
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    fields = {str(name): spec for name, spec in properties.items() if isinstance(spec, dict)}
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    return {**schema, "properties": fields, "required": [name for name in required if name in fields]}


def one_choice(schema):
    """(the field, its choices as (value, label) pairs) when the form is one field to choose, else None."""
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    if len(properties) != 1:
        return None
    (field, spec), = properties.items()
    spec = spec if isinstance(spec, dict) else {}
    if spec.get("type") == "boolean":
        return field, [(True, "Yes"), (False, "No")]
    if isinstance(spec.get("enum"), list) and all(isinstance(v, str) for v in spec["enum"]) and spec["enum"]:
        names = spec.get("enumNames") if isinstance(spec.get("enumNames"), list) else []
        return field, [(value, str(names[i]) if i < len(names) else value) for i, value in enumerate(spec["enum"])]
    if isinstance(spec.get("oneOf"), list) and all(isinstance(v, dict) and isinstance(v.get("const"), str)
                                                   for v in spec["oneOf"]) and spec["oneOf"]:
        return field, [(v["const"], str(v.get("title") or v["const"])) for v in spec["oneOf"]]
    return None


DECLINE = {"option_id": "decline", "name": "Decline", "kind": "decline"}


def question_options(schema):
    choice = one_choice(schema)
    if choice is None:
        return [{"option_id": "accept", "name": "Answer", "kind": "accept"}, DECLINE]
    ids = {True: "yes", False: "no"}
    return [{"option_id": ids.get(value, value) if isinstance(value, bool) else value, "name": label,
             "kind": "accept"} for value, label in choice[1]] + [DECLINE]


class QuestionReply:
    """Answers one elicitation: accept with the form's content (the option's `content`, or the choice the option
    names), decline, or cancel (None)."""

    def __init__(self, process, rpc_id, schema):
        self.process, self.rpc_id, self.schema = process, rpc_id, schema

    def answer(self, option):
        if option is None:
            return self.process.respond(self.rpc_id, {"action": "cancel"})
        if option.get("kind") != "accept":
            return self.process.respond(self.rpc_id, {"action": "decline"})
        content = option.get("content")
        if content is None:
            field, choices = one_choice(self.schema) or (None, [])
            value = next((v for v, _ in choices if (("yes" if v else "no") if isinstance(v, bool) else v)
                          == option["option_id"]), None)
            content = {field: value} if field is not None else {}
        return self.process.respond(self.rpc_id, {"action": "accept", "content": content})


# -- file system ------------------------------------------------------------------------------


def _read(client, listener, request):
    params, process = request.params, client.process
    if listener.files_denied():
        return _refuse(client, listener, request, params.get("path"))
    try:
        data = boundary.read_file(listener.workspace_root(), params.get("path"), MAX_READ_BYTES)
    except boundary.OutsideWorkspace as exc:
        return _refuse(client, listener, request, params.get("path"), str(exc))
    except FileNotFoundError:
        return process.respond_error(request.id, protocol.RESOURCE_NOT_FOUND, "Resource not found",
                                     {"path": params.get("path")})
    except OSError as exc:
        return process.respond_error(request.id, protocol.INTERNAL_ERROR, f"cannot read: {exc.strerror}")
    text = data.decode("utf-8", errors="replace")
    process.respond(request.id, {"content": _slice_lines(text, params.get("line"), params.get("limit"))})


def _write(client, listener, request):
    params, process = request.params, client.process
    path, content, root = params.get("path"), params.get("content"), listener.workspace_root()
    try:
        boundary.relative_part(root, path)
    except boundary.OutsideWorkspace as exc:
        return _refuse(client, listener, request, path, str(exc))
    if listener.files_denied():
        return _refuse(client, listener, request, path)
    if not isinstance(content, str):
        return process.respond_error(request.id, protocol.INVALID_PARAMS, "content must be a string")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        return process.respond_error(request.id, protocol.INVALID_PARAMS, "content is not valid Unicode text")
    listener.write(client, path, WriteReply(process, request.id, root, path, data))


class WriteReply:
    """Holds an agent's file write until it is decided; an allowed write happens then, atomically."""

    def __init__(self, process, rpc_id, root, path, data):
        self.process, self.rpc_id = process, rpc_id
        self.root, self.path, self.data = root, path, data

    def answer(self, option):
        """The write happens now, opened race-free beneath the root: whatever the path became while
        the request waited for approval, nothing outside the workspace is touched."""
        if option is None or option.get("kind") not in ALLOWING_KINDS:
            chosen = option["option_id"] if option is not None else "cancelled"
            return self.process.respond_error(self.rpc_id, ACCESS_DENIED, f"write not approved ({chosen})")
        try:
            boundary.write_file(self.root, self.path, self.data)
        except boundary.OutsideWorkspace as exc:
            log.warning("refused %s of %r: %s", WRITE_TEXT_FILE, str(self.path)[:200], exc)
            return self.process.respond_error(self.rpc_id, ACCESS_DENIED, f"access denied: {exc}",
                                              {"path": str(self.path)[:500]})
        except OSError as exc:
            return self.process.respond_error(self.rpc_id, protocol.INTERNAL_ERROR, f"cannot write: {exc.strerror}")
        self.process.respond(self.rpc_id, None)


def _refuse(client, listener, request, path, why=None):
    log.warning("%s: refused %r of %r", client.label, request.method[:80], str(path)[:200])
    reason = why or f"{request.method} is limited to the session's workspace"
    if listener.files_denied():
        reason += " and the deny-all policy refuses it"
    client.process.respond_error(request.id, ACCESS_DENIED, f"access denied: {reason}", {"path": str(path)[:500]})


def _slice_lines(text, line, limit):
    if not isinstance(line, int) and not isinstance(limit, int):
        return text
    lines = text.splitlines(keepends=True)
    start = max(0, (line if isinstance(line, int) else 1) - 1)
    end = start + limit if isinstance(limit, int) and limit >= 0 else len(lines)
    return "".join(lines[start:end])
