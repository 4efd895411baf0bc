"""/api/openapi.json, written from the operation table and the component schemas.

Layer 6 (surface). Every operation lists each status it can answer: its successes (by result
kind), the errors the table names, and what the guards answer on any route.
"""

from collections import defaultdict

from compozy import api
from compozy import validate as v
from compozy.errors import ERRORS
from compozy.http.ledger_schemas import LEDGER_SCHEMAS
from compozy.http.schemas import SCHEMAS, field_schema, ref, spec_schema
from compozy.operation import PARAMETER

# What the guards in front of every route can answer (http/guards.py).
GUARD_ERRORS = ("unauthorized", "host_not_allowed", "origin_not_allowed", "body_too_large")
BODY_METHODS = ("POST", "PUT", "PATCH")  # a body of another media type is refused on these
EVENT_STREAM = {"text/event-stream": {"schema": {
    "type": "string", "description": "Server-Sent Events: `id:` the sequence, `event:` the type, "
                                     "`data:` the JSON record; a `: keepalive` comment every 20 s"}}}
DESCRIPTION = ("Durable sessions for coding agents. Every error is the Error object with a stable code; "
               "each response lists the codes it can carry in x-error-codes. Over TCP every route but "
               "GET /api/health needs the daemon's secret (<home>/auth_token, or COMPOZY_TOKEN) as a bearer "
               "token, or the cookie a page login sets; the owner-only Unix socket needs neither.")
SECURITY_SCHEMES = {"bearer": {"type": "http", "scheme": "bearer",
                               "description": "the daemon's secret: <home>/auth_token, or COMPOZY_TOKEN when set"}}
OPEN_OPERATIONS = ("daemon.health",)  # answered without the secret


def openapi(version):
    paths = defaultdict(dict)
    for operation in api.OPERATIONS:
        paths[openapi_path(operation.rule)][operation.method.lower()] = _operation(operation)
    return {"openapi": "3.0.3",
            "info": {"title": "compozy daemon API", "version": version, "description": DESCRIPTION},
            "paths": dict(paths), "security": [{"bearer": []}],
            "components": {"schemas": {**SCHEMAS, **LEDGER_SCHEMAS}, "securitySchemes": SECURITY_SCHEMES}}


def openapi_path(rule):
    return PARAMETER.sub(r"{\1}", rule)


def error_codes(operation):
    """Every error code the operation can answer, the guards' included."""
    codes = [code for code in GUARD_ERRORS if code != "unauthorized" or operation.name not in OPEN_OPERATIONS]
    if operation.path_params:
        codes.append("endpoint_not_found")  # an empty parameter leaves no route to match
    if operation.method in BODY_METHODS:
        codes.append("unsupported_media_type")
    if operation.body is not None:
        codes.append("invalid_request")  # a body that is not a JSON object
    if operation.stream:
        codes.append("stream_limit_reached")
    return tuple(dict.fromkeys((*operation.errors, *codes)))


def _operation(operation):
    document = {"operationId": operation.name, "summary": operation.summary, "tags": [operation.name.split(".")[0]],
                "parameters": _parameters(operation), "responses": _responses(operation)}
    if operation.body is not None:
        required = any(field.required for field in operation.body.values())
        schema = spec_schema({**operation.body, **{name: spelling.spec for name, spelling in operation.spellings.items()}})
        if operation.rules:
            schema["allOf"] = [rule.schema() for rule in operation.rules]
        document["requestBody"] = {"required": required, "content": {"application/json": {"schema": schema}}}
    if operation.name in OPEN_OPERATIONS:
        document["security"] = []
    if operation.cli is not None:
        document["x-cli"] = f"compozy {operation.cli.command}"
    if operation.tool is not None:
        document["x-mcp-tool"] = operation.tool.name
    return document


def _parameters(operation):
    parameters = [_parameter(name, v.PATH_FIELDS[name], "path") for name in operation.path_params]
    parameters += [_parameter(name, field, "query") for name, field in operation.query.items()]
    parameters += [_parameter(name, field, "header") for name, field in operation.headers.items()]
    return parameters


def _parameter(name, field, where):
    return {"name": name, "in": where, "required": field.required, "schema": field_schema(field)}


def _responses(operation):
    responses = {}
    by_status = defaultdict(list)
    for success in operation.success:
        by_status[success.status].append(success)
    for status, successes in sorted(by_status.items()):
        responses[str(status)] = _success(operation, status, successes)
    errors = defaultdict(list)
    for code in error_codes(operation):
        errors[ERRORS[code].status].append(code)
    for status, codes in sorted(errors.items()):
        responses[str(status)] = {"description": ", ".join(codes), "x-error-codes": codes,
                                  "content": {"application/json": {"schema": ref("Error")}}}
    responses["default"] = {"description": "internal_error: an unexpected error (the daemon log has the details)",
                            "content": {"application/json": {"schema": ref("Error")}}}
    return responses


def _success(operation, status, successes):
    answer = {"description": "; ".join(s.summary for s in successes)}
    schemas = [ref(s.schema) for s in successes if s.schema]
    content = {}
    for media in (media for success in successes for media in success.media):
        content[media] = {"schema": {"type": "string"}}
    if schemas and operation.stream != "always":
        content["application/json"] = {"schema": schemas[0] if len(schemas) == 1 else {"oneOf": schemas}}
    if operation.stream == "always" or (operation.stream == "on request" and status == 200):
        content.update(EVENT_STREAM)
    if content:
        answer["content"] = content
    if status == 204:
        answer["headers"] = {"Deprecation": {"schema": {"type": "string"}, "description": "true"},
                             "Warning": {"schema": {"type": "string"}, "description": "299 with the deprecation"}}
    return answer
