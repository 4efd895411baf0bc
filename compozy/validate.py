"""Request bodies and queries: declared fields, types and bounds; anything else is invalid_request.

Layer 1: imports only layer 0. Every surface passes bodies through the same checks, and the
specs below are the ones the operation table (compozy/api.py) shows in /api/openapi.json.
"""

from dataclasses import dataclass

from compozy.errors import invalid
from compozy.states import BusyMode, PermissionDecision, SessionState, SessionType
from compozy.text import one_line


@dataclass(frozen=True)
class Field:
    types: tuple
    required: bool = False
    max_length: int | None = None
    choices: tuple = ()
    minimum: int | None = None
    maximum: int | None = None
    fields: dict | None = None  # the spec of an object's members (checked by the owner of the object)
    items: dict | None = None   # the spec of each object in a list (likewise)
    label: bool = False  # a name people read: no control characters, no bidi overrides


def text(required=False, max_length=None, choices=()):
    return Field((str,), required, max_length, tuple(str(c) for c in choices))


def label(required=False, max_length=None):
    """A name shown on one line of a terminal: CR, LF, escape sequences and right-to-left overrides
    (which make a name read as another) are refused."""
    return Field((str,), required, max_length, label=True)


def boolean(required=False):
    return Field((bool,), required)


def integer(required=False, minimum=None, maximum=None):
    return Field((int,), required, minimum=minimum, maximum=maximum)


def mapping(required=False, fields=None):
    return Field((dict,), required, fields=fields)


def sequence(required=False, items=None):
    return Field((list,), required, items=items)


def check_body(body, spec, where="request body"):
    """The body with only declared fields; None values count as absent."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise invalid(f"{where} must be a JSON object")
    unknown = sorted(set(body) - set(spec))
    if unknown:
        raise invalid(f"unknown field(s) in {where}: {', '.join(unknown)}", fields=unknown)
    clean = {}
    for name, field in spec.items():
        value = body.get(name)
        if value is None:
            if field.required:
                raise invalid(f"{name} is required", field=name)
            continue
        clean[name] = _check_value(name, value, field)
    return clean


def _check_value(name, value, field):
    # bool is an int subclass; an integer field must not accept true/false.
    if not isinstance(value, field.types) or (bool not in field.types and isinstance(value, bool)):
        kinds = " or ".join(_KIND_NAMES[t] for t in field.types)
        raise invalid(f"{name} must be {kinds}", field=name)
    if field.max_length is not None and len(value) > field.max_length:
        raise invalid(f"{name} is longer than {field.max_length}", field=name)
    if field.choices and value not in field.choices:
        raise invalid(f"{name} must be one of {', '.join(map(str, field.choices))}", field=name)
    if isinstance(value, str) and "\x00" in value:
        raise invalid(f"{name} must not contain NUL characters", field=name)
    if field.label and one_line(value) != value:
        raise invalid(f"{name} must not contain control characters or bidirectional overrides", field=name)
    return value


def field_schema(field, optional=None):
    """One Field as JSON Schema; optional(schema) adapts each optional member of a nested spec."""
    schema = {"type": _JSON_TYPES[field.types[0]]}
    if field.max_length is not None:
        schema["maxLength"] = field.max_length
    if field.choices:
        schema["enum"] = list(field.choices)
    if field.minimum is not None:
        schema["minimum"] = field.minimum
    if field.maximum is not None:
        schema["maximum"] = field.maximum
    if field.fields is not None:
        schema.update(spec_schema(field.fields, optional))
    if field.items is not None:
        schema["items"] = spec_schema(field.items, optional)
    return schema


def spec_schema(spec, optional=None):
    """A spec as a closed JSON Schema object: check_body refuses fields it does not declare.
    optional(schema), when given, adapts the schema of each optional member."""
    adapt = optional or (lambda schema: schema)
    properties = {name: field_schema(field, optional) if field.required else adapt(field_schema(field, optional))
                  for name, field in spec.items()}
    schema = {"type": "object", "additionalProperties": False, "properties": properties}
    required = [name for name, field in spec.items() if field.required]
    if required:
        schema["required"] = required
    return schema


_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", dict: "object", list: "array"}
_KIND_NAMES = {str: "a string", bool: "true or false", int: "a whole number", dict: "an object",
               list: "a list", float: "a number"}


SQLITE_MAX_INTEGER = 2**63 - 1


def query_int(value, name, minimum=0, maximum=SQLITE_MAX_INTEGER):
    """A query-string integer (strings only arrive here), within what SQLite can compare."""
    if value is None:
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise invalid(f"{name} must be a whole number", field=name) from None
    if number < minimum or number > maximum:
        raise invalid(f"{name} must be between {minimum} and {maximum}", field=name)
    return number


def query_bool(value, name):
    if value is None:
        return None
    if value in ("true", "1", True):
        return True
    if value in ("false", "0", False):
        return False
    raise invalid(f"{name} must be true or false", field=name)


# -- request bodies ----------------------------------------------------------------------------

ACP_OPTION_FIELDS = {"id": text(required=True, max_length=200), "value_id": text(max_length=200),
                     "bool_value": boolean()}
RUNTIME_FIELDS = {name: text(max_length=200) for name in ("provider", "model", "reasoning_effort", "speed")} | {
    "acp_options": sequence(items=ACP_OPTION_FIELDS)}
WORKSPACE_FIELDS = {"name": label(required=True), "path": text(required=True)}
RENAME_FIELDS = {"name": label(required=True, max_length=200)}
CREATE_FIELDS = {
    "agent_name": text(max_length=64),
    "name": label(max_length=200),
    "workspace": text(max_length=300),
    "workspace_path": text(max_length=4096),
    "parent_session_id": text(max_length=64),
    "lineage_kind": text(max_length=32),
    "type": text(choices=(SessionType.USER.value,)),  # the daemon makes the other types itself (creation.py)
}
PROMPT_FIELDS = {"message": text(required=True), "message_id": text(), "idempotency_key": text(),
                 "runtime": mapping(fields=RUNTIME_FIELDS), "mode": text(choices=tuple(BusyMode)),
                 "expected_turn_id": text()}
CANCEL_FIELDS = {}
EDIT_FIELDS = {"message": text(required=True), "message_id": text(), "idempotency_key": text()}
STEER_FIELDS = {"expected_turn_id": text(required=True), "message": text(), "message_id": text(),
                "idempotency_key": text()}
SELECTION_FIELDS = {"runtime": mapping(required=True, fields=RUNTIME_FIELDS),
                    "expected_revision": integer(required=True)}
APPROVE_FIELDS = {"request_id": text(required=True), "decision": text(required=True, choices=tuple(PermissionDecision)),
                  "turn_id": text()}
STOP_FIELDS = {"wait": boolean()}
FENCE_NAMES = ("expected_epoch", "expected_generation", "expected_max_sequence")
FENCE_FIELDS = {name: integer(minimum=0, maximum=SQLITE_MAX_INTEGER) for name in FENCE_NAMES}
CONTINUE_FIELDS = {"agent_name": text(required=True, max_length=64),
                   "idempotency_key": text(required=True, max_length=200),
                   "runtime": mapping(fields=RUNTIME_FIELDS), "route": integer(minimum=1, maximum=1000),
                   "name": label(max_length=200), "message": text(), **FENCE_FIELDS}
FORK_FIELDS = {"idempotency_key": text(required=True, max_length=200), "message_id": text(max_length=200),
               "name": label(max_length=200), **FENCE_FIELDS}
REWIND_FIELDS = {"message_id": text(required=True, max_length=200),
                 "idempotency_key": text(required=True, max_length=200),
                 **{name: integer(required=True, minimum=0, maximum=SQLITE_MAX_INTEGER) for name in FENCE_NAMES}}
REPAIR_FIELDS = {"dry_run": boolean(), "force": boolean()}

# -- native tool arguments beside the operation's own fields (compozy/api.py, Tool) ---------------

SPAWN_FIELDS = {"ttl": text(max_length=32), "role": text(max_length=64)}
TOOL_CREATE_FIELDS = {"spawn": mapping(fields=SPAWN_FIELDS)}
TOOL_PROMPT_FIELDS = {"wait": boolean(), "notify_on_complete": boolean()}
IDENTITY_FIELDS = {"X-Compozy-Session": text(max_length=64), "X-Compozy-Binding-Secret": text(max_length=128)}

# -- query parameters, typed as parsed -----------------------------------------------------------

ARCHIVE_VIEWS = ("active", "archived", "all")
LIST_QUERY = {"workspace": text(), "parent": text(), "root": text(), "state": text(choices=tuple(SessionState)),
              "agent": text(), "archive": text(choices=("exclude", "only", "include")),
              "limit": integer(minimum=1, maximum=1000), "cursor": text()}
SEQUENCE = integer(minimum=0, maximum=SQLITE_MAX_INTEGER)
EVENTS_QUERY = {"after_sequence": SEQUENCE, "before_sequence": SEQUENCE, "turn_id": text(),
                "type": text(), "limit": integer(minimum=1, maximum=1000), "archive": text(choices=ARCHIVE_VIEWS)}
HISTORY_QUERY = {"after_sequence": SEQUENCE, "before_sequence": SEQUENCE, "limit": integer(minimum=1, maximum=1000),
                 "archive": text(choices=ARCHIVE_VIEWS)}
STREAM_QUERY = {"after_sequence": SEQUENCE}
ARCHIVE_QUERY = {"stop": boolean()}
PREVIEW_QUERY = {"message_id": text(max_length=200)}
CLEAR_SELECTION_QUERY = {"expected_revision": integer(required=True, minimum=0, maximum=SQLITE_MAX_INTEGER)}
