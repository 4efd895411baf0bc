"""Requests parsed once, at the edge: an operation's path, body and query become one typed object.

Layer 1 (beside validate, whose specs it parses with). Every surface (HTTP, the Unix socket, the
native tool server, an in-process call of the façade) turns what it received into the request
object of the operation (compozy/api.py, `Operation.parse`): the body checked against its spec, the
query against its own (an unknown parameter is refused like an unknown field, with invalid_request),
query strings typed, and the rules across fields applied. The façade and the domain read that
object and never check it again.
"""

import dataclasses
import functools
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
    fields = [(name, str | None, dataclasses.field(default=None)) for name in operation.path_params]
    fields += [(name, _annotation(field) | None, dataclasses.field(default=None)) for name, field in spec.items()]
    name = "".join(part.capitalize() for part in re.split(r"[._]", operation.name)) + "Request"
    return dataclasses.make_dataclass(name, fields, bases=(Request,), frozen=True, eq=False, namespace={
        "operation": operation.name, "path_names": operation.path_params, "field_names": tuple(spec)})


def _annotation(field):
    return functools.reduce(lambda a, b: a | b, field.types)


def parse(operation, path=None, body=None, query=None):
    """The operation's request object from what a surface received; raises invalid_request."""
    fields = check_query(query, operation.query)  # first: a URL's unknown parameter whatever the body
    if operation.body is None and body:
        raise invalid(f"{operation.name} takes no request body")
    fields.update(v.check_body(respelled(operation, body), operation.body) if operation.body is not None else {})
    for rule in operation.rules:
        rule.check(fields)
    path = {name: value for name, value in (path or {}).items() if name in operation.path_params}
    return operation.request_type(**path, **fields)


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


def check_query(query, spec):
    """Query parameters as typed values (strings from a URL, or values already typed in process);
    an undeclared parameter is refused like an undeclared body field."""
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
        clean[name] = _query_value(name, query[name], field)
    return clean


def _query_value(name, value, field):
    if int in field.types:
        return v.query_int(value, name, *_bounds(field))
    if bool in field.types:
        return v.query_bool(value, name)
    return v.check_body({name: value}, {name: field}, "query")[name]


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
