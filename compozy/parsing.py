"""Requests parsed once, at the edge: an operation's path, body and query become one typed object.

Layer 1 (beside validate, whose specs it parses with). Every surface (HTTP, the Unix socket, the
native tool server, an in-process call of the façade) turns what it received into the request
object of the operation (compozy/api.py, `Operation.parse`): the body checked against its spec, the
query against its own (an unknown parameter is refused like an unknown field, with invalid_request),
query strings typed, and the rules across fields applied. A native tool's arguments are mapped to the
operation's fields as its Tool entry declares (`parse_tool`) and parsed the same way, at the tool
server. The façade and the domain read that object and never check it again.
"""

import dataclasses
import functools
import hashlib
import inspect
import re
from collections.abc import Mapping

from compozy import validate as v
from compozy.errors import invalid


class Request(Mapping):
    """An operation's parsed request: its path parameters and its checked body or query fields as
    attributes (None: not given). As a mapping it holds the given body and query fields, which is
    what the domain reads."""

    operation = ""
    path_names = ()
    field_names = ()

    def __getitem__(self, name):
        value = getattr(self, name) if name in self.field_names else None
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self):
        return (name for name in self.field_names if getattr(self, name) is not None)

    def __len__(self):
        return sum(1 for _ in self)

    @property
    def path(self):
        return {name: getattr(self, name) for name in self.path_names}


def request_type(operation):
    """The request class of an operation: a frozen dataclass of its path parameters and fields."""
    spec = {**(operation.body or {}), **operation.query}
    clash = set(spec) & set(operation.path_params)
    if clash:
        raise ValueError(f"{operation.name}: {', '.join(sorted(clash))} is both a path parameter and a field")
    return _typed(operation.name, "Request", spec, operation.path_params)


def options_type(tool):
    """The class of a native tool's own options (Tool.extra: `wait`, `notify_on_complete`, `spawn`), typed
    like a request: the arguments that are no field of the operation, for the tool layer alone."""
    return _typed(tool.name, "Options", tool.extra)


def _typed(name, suffix, spec, path_names=()):
    fields = [(path, str | None, dataclasses.field(default=None)) for path in path_names]
    fields += [(field_name, _annotation(field) | None, dataclasses.field(default=None))
               for field_name, field in spec.items()]
    class_name = "".join(part.capitalize() for part in re.split(r"[._]+", name)) + suffix
    return dataclasses.make_dataclass(class_name, fields, bases=(Request,), frozen=True, eq=False, namespace={
        "operation": name, "path_names": tuple(path_names), "field_names": tuple(spec)})


def _annotation(field):
    return functools.reduce(lambda a, b: a | b, field.types)


def parse(operation, path=None, body=None, query=None, typed=False):
    """The operation's request object from what a surface received; raises invalid_request.
    typed: the query's values are JSON values (a native tool's arguments), held to their JSON types."""
    fields = check_query(query, operation.query, typed)  # first: a URL's unknown parameter whatever the body
    if operation.body is None and body:
        raise invalid(f"{operation.name} takes no request body")
    fields.update(v.check_body(respelled(operation, body), operation.body) if operation.body is not None else {})
    for rule in operation.rules:
        rule.check(fields)
    path = {name: value for name, value in (path or {}).items() if name in operation.path_params}
    return operation.request_type(**path, **fields)


@dataclasses.dataclass(frozen=True)
class ToolCall:
    """A native tool call parsed at the tool server's edge (interface.md, "Native tools for agents")."""

    request: Request                # the operation's request, what the façade takes as from any other edge
    target: str | None              # the session the call aims at (None: the tool takes none)
    options: Request                # the tool's own options (Tool.extra), typed
    defaulted: tuple = ()           # the operation fields the tool filled with its default (Tool.defaults)


def parse_tool(operation, arguments, caller_id, workspace):
    """A tool's arguments as the operation's request, parsed once: the tool's declared arguments map to the
    operation's fields of the same names (Tool.fields), the caller's workspace fills the workspace, the
    target (`session_id`) the path; what else the tool takes is its own options. An argument the tool does
    not declare is refused like an unknown body field (invalid_request, details.fields)."""
    tool = operation.tool
    where = f"{tool.name} arguments"
    if not isinstance(arguments, Mapping):
        raise invalid(f"{where} must be a JSON object")
    spec = tool.arguments(operation)
    unknown = sorted(set(arguments) - set(spec))
    if unknown:
        raise invalid(f"unknown field(s) in {where}: {', '.join(unknown)}", fields=unknown)
    target = None
    if tool.target:
        target = v.check_body({"session_id": arguments.get("session_id")}, {"session_id": spec["session_id"]},
                              where).get("session_id", caller_id)
    fields = {name: arguments[name] for name in tool.fields if arguments.get(name) is not None}
    defaulted = tuple(name for name in tool.defaults if name not in fields)
    fields.update({name: tool.defaults[name] for name in defaulted})
    if "workspace" in {**(operation.body or {}), **operation.query}:
        fields["workspace"] = workspace
    if "idempotency_key" in fields and "message_id" in (operation.body or {}) and "message_id" not in tool.fields:
        fields["message_id"] = tool_message_id(caller_id, fields["idempotency_key"])  # a prompt's, never a fork's cut
    path = {"workspace": workspace, "session_id": target}
    body = None if operation.body is None else {name: fields[name] for name in fields if name in operation.body}
    request = parse(operation, path, body, {name: fields[name] for name in fields if name in operation.query},
                    typed=True)
    options = v.check_body({name: arguments.get(name) for name in tool.extra}, tool.extra, where)
    return ToolCall(request, target, tool.options_type(**options), defaulted)


def tool_message_id(caller_id, idempotency_key):
    """The message of a keyed tool prompt, derived from its caller and key: a retry is the same message."""
    digest = hashlib.sha256(f"{caller_id}\n{idempotency_key}".encode()).hexdigest()[:32]
    return f"tool-{digest}"


def respelled(operation, body):
    """The body with a field given under its other name (operation.Spelling) under its own: checked against what
    that name may hold, and refused when both names are given with different values."""
    if not operation.spellings or not isinstance(body, Mapping):
        return body
    body = dict(body)
    for name, spelling in operation.spellings.items():
        if body.get(name) is None:
            continue
        value = v.check_body({name: body.pop(name)}, {name: spelling.spec})[name]
        if body.get(spelling.means) not in (None, value):
            raise invalid(f"{name}: {value} means {spelling.means}: {value}, but {spelling.means} is "
                          f"{body[spelling.means]}", fields=[name, spelling.means])
        body[spelling.means] = value
    return body


def check_query(query, spec, typed=False):
    """Query parameters as typed values (strings from a URL, or values already typed in process);
    an undeclared parameter is refused like an undeclared body field. typed: JSON values, whose type
    is checked as a body field's is (a string is no integer), then their bounds."""
    query = {name: value for name, value in (query or {}).items() if value is not None}
    unknown = sorted(set(query) - set(spec))
    if unknown:
        raise invalid(f"unknown query parameter(s): {', '.join(unknown)}", fields=unknown)
    clean = {}
    for name, field in spec.items():
        if name not in query:
            if field.required:
                raise invalid(f"{name} is required", field=name)
            continue
        clean[name] = _query_value(name, query[name], field, typed)
    return clean


def _query_value(name, value, field, typed=False):
    if typed or not (int in field.types or bool in field.types):
        value = v.check_body({name: value}, {name: field}, "query")[name]
    if int in field.types:
        return v.query_int(value, name, *_bounds(field))
    if bool in field.types:
        return v.query_bool(value, name)
    return value


def _bounds(field):
    return (0 if field.minimum is None else field.minimum,
            v.SQLITE_MAX_INTEGER if field.maximum is None else field.maximum)


def edges(cls, operations, also=()):
    """Make each façade method of cls the table names an in-process edge: called with a request object
    it runs on it; called the old way (path parameters, body=, query=, by position or keyword), it
    parses them into the operation's request first. also: (method, operation name) pairs beyond the
    table's façade names (a streaming variant)."""
    chosen = {}
    for operation in operations:
        if operation.facade and operation.stream != "always":
            best = chosen.get(operation.facade)
            if best is None or len(operation.path_params) > len(best.path_params):
                chosen[operation.facade] = operation  # the scoped variant: it names every path parameter
    by_name = {operation.name: operation for operation in operations}
    chosen.update({method: by_name[name] for method, name in also})
    for method_name, operation in chosen.items():
        setattr(cls, method_name, _edge(getattr(cls, method_name), operation))
    return cls


def _edge(method, operation):
    parameters = inspect.signature(method).parameters
    path_names = [name for name in operation.path_params if name in parameters]
    shape = {"body": operation.body is not None and "body" in parameters,
             "query": bool(operation.query) and "query" in parameters}

    signature = inspect.signature(method)

    @functools.wraps(method)
    def facade(self, *args, **keywords):
        if args and isinstance(args[0], Request):
            request, extras = args[0], keywords
        else:
            given = signature.bind_partial(self, *args, **keywords).arguments
            given.pop(next(iter(parameters)))
            path = {name: given.pop(name) for name in path_names if name in given}
            request = operation.parse(path, given.pop("body", None), given.pop("query", None))
            extras = given
        keywords = {name: getattr(request, name, None) for name in path_names}
        keywords.update({name: request for name, wanted in shape.items() if wanted})
        return method(self, **keywords, **extras)
    facade.operation = operation
    return facade
