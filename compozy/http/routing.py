"""The route table: one list that registers Flask rules and generates the OpenAPI document.

Layer 6 (surface).
"""

import re
from dataclasses import dataclass, field

S = "/api/workspaces/<workspace>/sessions/<session_id>"


@dataclass(frozen=True)
class Route:
    method: str
    rule: str
    op: str
    view: object
    summary: str
    success: int = 200
    query: tuple = ()
    body: tuple = ()
    streams: bool = False
    statuses: tuple = field(default=(400, 404))


def openapi(routes, version):
    paths = {}
    for route in routes:
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route.rule)
        paths.setdefault(path, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.0.3",
        "info": {"title": "compozy daemon API", "version": version,
                 "description": "Durable sessions for coding agents. Errors are {error, code, details}."},
        "paths": paths,
        "components": {"schemas": {"Error": {
            "type": "object", "required": ["error", "code", "details"],
            "properties": {"error": {"type": "string"}, "code": {"type": "string"},
                           "details": {"type": "object"}}}}},
    }


def _operation(route):
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
              for name in re.findall(r"<(?:\w+:)?(\w+)>", route.rule)]
    params += [{"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
               for name in route.query]
    content = "text/event-stream" if route.streams else "application/json"
    responses = {str(route.success): {"description": "success", "content": {content: {"schema": {"type": "object"}}}}}
    for status in route.statuses:
        responses[str(status)] = {"description": "error",
                                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    operation = {"operationId": route.op, "summary": route.summary, "parameters": params, "responses": responses}
    if route.body:
        operation["requestBody"] = {"required": False, "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": False,
            "properties": {name: {} for name in route.body}}}}}
    return operation
