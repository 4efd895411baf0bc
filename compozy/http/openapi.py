"""/api/openapi.json, written from the operation table.

Layer 6 (surface).
"""

import re

from compozy import api


def openapi(version):
    paths = {}
    for operation in api.OPERATIONS:
        path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", operation.rule)
        paths.setdefault(path, {})[operation.method.lower()] = _operation(operation)
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


def _operation(operation):
    params = [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
              for name in operation.path_params]
    params += [{"name": name, "in": "query", "required": False, "schema": {"type": "string"}}
               for name in operation.query]
    content = "text/event-stream" if operation.stream == "always" else "application/json"
    responses = {str(s.status): {"description": s.summary, "content": {content: {"schema": {"type": "object"}}}}
                 for s in operation.success}
    for status in sorted({400, 404}):
        responses[str(status)] = {"description": "error",
                                  "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    result = {"operationId": operation.name, "summary": operation.summary, "parameters": params,
              "responses": responses}
    if operation.body is not None:
        result["requestBody"] = {"required": False, "content": {"application/json": {"schema": {
            "type": "object", "additionalProperties": False,
            "properties": {name: {} for name in operation.body}}}}}
    return result
