"""Every answer a scenario observes is held against /api/openapi.json: the status must be one the
document lists for the operation, the error code one it names there, the body its schema's shape."""

from jsonschema.exceptions import best_match
from openapi_schema_validator import OAS30Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

from compozy import __version__
from compozy.errors import ERRORS
from compozy.http.openapi import error_codes, openapi, openapi_path

DOCUMENT = openapi(__version__)
BASE = "urn:compozy:openapi"
REGISTRY = Registry().with_resource(BASE, Resource.from_contents(DOCUMENT, default_specification=DRAFT4))


def _responses(operation):
    return DOCUMENT["paths"][openapi_path(operation.rule)][operation.method.lower()]["responses"]


def answer_problem(operation, status, document):
    """None when a successful answer is documented; otherwise what is wrong with it."""
    response = _responses(operation).get(str(status))
    if response is None or status >= 400:
        return f"{operation.name} answered {status}, which its OpenAPI entry does not list"
    schema = (response.get("content") or {}).get("application/json", {}).get("schema")
    if schema is None:
        return None if document in (None, {}) or status == 204 else f"{operation.name} {status} has no body schema"
    return _schema_problem(operation, schema, document)


def error_problem(operation, code, body=None):
    if code not in error_codes(operation):
        return f"{operation.name} answered error {code}, which its OpenAPI entry does not list"
    if str(ERRORS[code].status) not in _responses(operation):
        return f"{operation.name}: status {ERRORS[code].status} of {code} is not listed"
    return _schema_problem(operation, {"$ref": "#/components/schemas/Error"}, body) if body is not None else None


def _schema_problem(operation, schema, document):
    validator = OAS30Validator(_absolute(schema), registry=REGISTRY)
    error = best_match(validator.iter_errors(document))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(the document)"
    return f"{operation.name}: the answer does not match its OpenAPI schema at {where}: {error.message[:300]}"


def _absolute(schema):
    """The schema with its references pointing into the whole document."""
    if isinstance(schema, dict):
        return {k: BASE + v if k == "$ref" else _absolute(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_absolute(v) for v in schema]
    return schema


def resource_key(operation):
    """The key scenarios match inside: the one member of every answer the operation documents,
    when that member is an object (`session`, `prompt`, ...); None when the answers differ."""
    keys = set()
    for success in operation.success:
        schema = DOCUMENT["components"]["schemas"].get(success.schema) if success.schema else None
        members = (schema or {}).get("properties", {})
        only = next(iter(members.values()), {}) if len(members) == 1 else {}
        keys.add(next(iter(members)) if "$ref" in only or only.get("type") == "object" else None)
    return keys.pop() if len(keys) == 1 else None
