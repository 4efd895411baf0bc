"""Request bodies and queries: declared fields, types and bounds; anything else is invalid_request.

Layer 1: imports only layer 0. Every surface passes bodies through the same checks, and the
specs below are the ones the operation table (compozy/api.py) shows in /api/openapi.json.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass

from compozy.errors import invalid
from compozy.ids import CLIENT_TOKEN_PATTERN, CLIENT_TOKEN_RULE, id_pattern
from compozy.states import ATTENTION_KINDS, CREATE_LINEAGE_KINDS, BusyMode, PermissionDecision, SessionState, SessionType
from compozy.text import UNSAFE_CHARACTERS

# Patterns are regular expressions that Python and JSON Schema (ECMAScript) read alike: the check
# below and /api/openapi.json state the same rule.
WHITESPACE = "\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"  # str.isspace()
NO_NUL = "^[^\\x00]*$"  # every string: NUL is refused everywhere (a C string would end there)


def not_blank(excluded):
    """A pattern: no character of the class `excluded`, and at least one that is not whitespace."""
    return f"^[^{excluded}]*[^{excluded}{WHITESPACE}][^{excluded}]*$"


LABEL_PATTERN = not_blank(UNSAFE_CHARACTERS)
MESSAGE_PATTERN = not_blank("\\x00")
WORKSPACE_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
WORKSPACE_NAME_RULE = "must be 1-64 letters, digits, _ . or - (starting with a letter or digit)"
MAX_MESSAGE_BYTES = 1024 * 1024  # measured as JSON, as the agent receives it (turns/messages.py)
NOT_EMPTY = "^[^\\x00]+$"


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
    pattern: str | None = None  # a string must hold a match of it (JSON Schema's pattern); see NO_NUL
    rule: str = ""              # the pattern in words, for the refusal: "<name> <rule>"


def text(required=False, max_length=None, choices=(), pattern=None, rule=""):
    return Field((str,), required, max_length, tuple(str(c) for c in choices), pattern=pattern, rule=rule)


def label(required=False, max_length=None):
    """A name shown on one line of a terminal: not blank; CR, LF, escape sequences and right-to-left
    overrides (which make a name read as another) are refused."""
    return text(required, max_length, pattern=LABEL_PATTERN,
                rule="must not be blank nor contain control characters or bidirectional overrides")


def identifier(kind, required=False):
    """A daemon-made ID of that kind, e.g. turn_<ULID>."""
    return text(required, pattern=id_pattern(kind), rule=f"must look like {kind}_<ULID>")


def token(required=False):
    """A client-chosen message ID or idempotency key."""
    return text(required, max_length=200, pattern=CLIENT_TOKEN_PATTERN, rule=CLIENT_TOKEN_RULE)


def message(required=False):
    """A message for an agent: not blank, at most MAX_MESSAGE_BYTES (a character escaped in JSON counts
    as its escape, so the length in characters is an upper bound)."""
    return text(required, max_length=MAX_MESSAGE_BYTES, pattern=MESSAGE_PATTERN, rule="must not be blank")


def absolute_path(required=False, max_length=None):
    return text(required, max_length, pattern="^/[^\\x00]*$", rule="must be an absolute path")


def boolean(required=False):
    return Field((bool,), required)


def integer(required=False, minimum=None, maximum=None):
    return Field((int,), required, minimum=minimum, maximum=maximum)


def mapping(required=False, fields=None):
    return Field((dict,), required, fields=fields)


def sequence(required=False, items=None):
    return Field((list,), required, items=items)


NULL_VALUE = {"type": "object", "nullable": True, "enum": [None]}


@dataclass(frozen=True)
class Rule:
    """A rule across a body's fields, stated in /api/openapi.json; the owner of the body enforces it
    (tests/test_openapi.py proves each is)."""

    kind: str       # "one_of": exactly one is given; "together": all or none; "not_both": never both
    names: tuple

    def schema(self):
        # given: present and not null (check_body reads null as absent); OpenAPI 3.0 spells null this way
        present = [{"required": [name], "properties": {name: {"not": NULL_VALUE}}} for name in self.names]
        if self.kind == "one_of":
            return {"oneOf": present}
        if self.kind == "together":
            return {"anyOf": [{"allOf": present}, {"not": {"anyOf": present}}]}
        return {"not": {"allOf": present}}

    def check(self, body):
        """Refuse a checked body (absent and null alike) that breaks the rule."""
        given = [name for name in self.names if name in body]
        broken = {"one_of": len(given) != 1, "together": 0 < len(given) < len(self.names),
                  "not_both": len(given) == len(self.names)}[self.kind]
        if broken:
            wanted = {"one_of": "exactly one of", "together": "all or none of", "not_both": "at most one of"}[self.kind]
            raise invalid(f"give {wanted} {' and '.join(self.names)}", fields=list(self.names))


def one_of(*names):
    return Rule("one_of", names)


def together(*names):
    return Rule("together", names)


def not_both(*names):
    return Rule("not_both", names)


def check_body(body, spec, where="request body"):
    """The body with only declared fields; None values count as absent."""
    if body is None:
        body = {}
    if not isinstance(body, Mapping):  # a JSON object, or a parsed request (compozy/parsing.py)
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
    if isinstance(value, str) and "\x00" in value:  # first: a pattern then never meets a NUL
        raise invalid(f"{name} must not contain NUL characters", field=name)
    if field.pattern and not re.search(field.pattern, value):
        raise invalid(f"{name} {field.rule}", field=name)
    return value


def field_schema(field, optional=None):
    """One Field as JSON Schema; optional(schema) adapts each optional member of a nested spec."""
    schema = {"type": _JSON_TYPES[field.types[0]]}
    if str in field.types and not field.choices:
        schema["pattern"] = field.pattern or NO_NUL
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


def check_query(query, spec):
    """A query with only declared parameters, parsed by their specs' types (strings from HTTP and the CLI,
    typed values in-process)."""
    unknown = sorted(set(query) - set(spec))
    if unknown:
        raise invalid(f"unknown parameter(s): {', '.join(unknown)}", fields=unknown)
    clean = {}
    for name, field in spec.items():
        value = query.get(name)
        if value is None:
            continue
        if int in field.types:
            clean[name] = query_int(value, name, field.minimum or 0, field.maximum or SQLITE_MAX_INTEGER)
        elif bool in field.types:
            clean[name] = query_bool(value, name)
        else:
            clean[name] = _check_value(name, value, field)
    return clean


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
WORKSPACE_FIELDS = {"name": text(required=True, pattern=WORKSPACE_NAME_PATTERN, rule=WORKSPACE_NAME_RULE),
                    "path": absolute_path(required=True)}
RENAME_FIELDS = {"name": label(required=True, max_length=200)}
SETTING_FIELDS = {"value": text(required=True, max_length=100)}  # checked further as config.toml checks it
CREATE_FIELDS = {
    "agent_name": text(max_length=64),
    "name": label(max_length=200),
    "workspace": text(max_length=300, pattern=NOT_EMPTY, rule="must be a workspace name or ID"),
    "workspace_path": absolute_path(max_length=4096),
    "parent_session_id": text(max_length=64),
    "lineage_kind": text(choices=CREATE_LINEAGE_KINDS),  # and only with parent_session_id
    "type": text(choices=(SessionType.USER.value,)),  # the daemon makes the other types itself (creation.py)
    "node": text(max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$",
                 rule="must be auto or a node's name"),  # a fleet's placement (docs/fleet.md)
}
PROMPT_FIELDS = {"message": message(required=True), "message_id": token(), "idempotency_key": token(),
                 "runtime": mapping(fields=RUNTIME_FIELDS), "mode": text(choices=tuple(BusyMode)),
                 "expected_turn_id": identifier("turn"), "override_budget": boolean()}
CANCEL_FIELDS: dict = {}
EDIT_FIELDS = {"message": message(required=True), "message_id": token(), "idempotency_key": token()}
STEER_FIELDS = {"expected_turn_id": identifier("turn", required=True), "message": message(), "message_id": token(),
                "idempotency_key": token()}
SELECTION_FIELDS = {"runtime": mapping(required=True, fields=RUNTIME_FIELDS),
                    "expected_revision": integer(required=True)}
APPROVE_FIELDS = {"request_id": text(required=True), "option_id": text(max_length=1000),
                  "decision": text(choices=tuple(PermissionDecision)), "turn_id": text(), "content": mapping()}
APPROVE_CHOICE = one_of("option_id", "decision")
STOP_FIELDS = {"wait": boolean()}
FENCE_NAMES = ("expected_epoch", "expected_generation", "expected_max_sequence")
FENCE_FIELDS = {name: integer(minimum=0, maximum=SQLITE_MAX_INTEGER) for name in FENCE_NAMES}
IDENTITY_TOGETHER = together("message_id", "idempotency_key")  # client-chosen, both or neither
FENCES_TOGETHER = together(*FENCE_NAMES)
CONTINUE_FIELDS = {"agent_name": text(required=True, max_length=64),
                   "idempotency_key": token(required=True),
                   "runtime": mapping(fields=RUNTIME_FIELDS), "route": integer(minimum=1, maximum=1000),
                   "name": label(max_length=200), "message": message(), "files": text(choices=("share", "copy")),
                   **FENCE_FIELDS}
FORK_FIELDS = {"idempotency_key": token(required=True), "message_id": token(),
               "name": label(max_length=200), "files": text(choices=("share", "copy")), **FENCE_FIELDS}
REWIND_FIELDS = {"message_id": token(required=True),
                 "idempotency_key": token(required=True),
                 **{name: integer(required=True, minimum=0, maximum=SQLITE_MAX_INTEGER) for name in FENCE_NAMES},
                 "files": text(choices=("keep", "restore")), "dry_run": boolean()}
RESTORE_FIELDS = {"dry_run": boolean()}
GC_FIELDS: dict = {}
CLEAR_FIELDS = {"idempotency_key": token(required=True),
                **{name: integer(required=True, minimum=0, maximum=SQLITE_MAX_INTEGER) for name in FENCE_NAMES}}
REPAIR_FIELDS = {"dry_run": boolean(), "force": boolean()}

# -- native tool arguments beside the operation's own fields (compozy/api.py, Tool) ---------------

SPAWN_FIELDS = {"ttl": text(max_length=32), "role": text(max_length=64)}
TOOL_CREATE_FIELDS = {"spawn": mapping(fields=SPAWN_FIELDS)}
TOOL_PROMPT_FIELDS = {"wait": boolean(), "notify_on_complete": boolean()}
IDENTITY_FIELDS = {"X-Compozy-Session": text(max_length=64), "X-Compozy-Binding-Secret": text(max_length=128)}

# -- query parameters, typed as parsed -----------------------------------------------------------

ARCHIVE_VIEWS = ("active", "archived", "all")
LIST_QUERY = {"workspace": text(pattern=NOT_EMPTY, rule="must be a workspace name or ID"), "parent": identifier("sess"), "root": identifier("sess"),
              "state": text(choices=tuple(SessionState)), "agent": text(),
              "archive": text(choices=("exclude", "only", "include")), "limit": integer(minimum=1, maximum=1000),
              "cursor": identifier("sess"), "scope": text(choices=("local", "fleet"))}
SEQUENCE = integer(minimum=0, maximum=SQLITE_MAX_INTEGER)
EVENTS_QUERY = {"after_sequence": SEQUENCE, "before_sequence": SEQUENCE, "turn_id": identifier("turn"),
                "type": text(), "limit": integer(minimum=1, maximum=1000), "archive": text(choices=ARCHIVE_VIEWS)}
HISTORY_QUERY = {"after_sequence": SEQUENCE, "before_sequence": SEQUENCE, "limit": integer(minimum=1, maximum=1000),
                 "archive": text(choices=ARCHIVE_VIEWS)}
STREAM_QUERY = {"after_sequence": SEQUENCE}
EXPORT_QUERY = {"format": text(choices=("md", "html", "jsonl"))}
ARCHIVE_EXPORT_QUERY = {"workspace": LIST_QUERY["workspace"], "lineage": identifier("sess"), **EXPORT_QUERY}
STORAGE_QUERY = {"limit": integer(minimum=1, maximum=10000)}
RETENTION_FIELDS = {"dry_run": boolean()}
SEARCH_KINDS = ("user", "agent", "thought", "tool", "permission")
SEARCH_QUERY = {"q": text(required=True, pattern=NOT_EMPTY, max_length=1000, rule="must be an FTS5 query"),
                "workspace": LIST_QUERY["workspace"], "agent": text(max_length=64),
                "since": text(max_length=40, rule="must be an ISO 8601 time"),
                "kind": text(choices=SEARCH_KINDS), "archive": LIST_QUERY["archive"], "rewound": boolean(),
                "limit": integer(minimum=1, maximum=100), "cursor": text(max_length=20)}
ARCHIVE_QUERY = {"stop": boolean()}
ATTENTION_QUERY = {"kind": text(choices=ATTENTION_KINDS), "workspace": text(pattern=NOT_EMPTY, rule="must be a "
                   "workspace name or ID"), "session_id": identifier("sess"), "status": text(choices=("open", "resolved")),
                   "limit": integer(minimum=1, maximum=1000)}
USAGE_GROUPS = ("session", "workspace", "agent", "provider", "model", "day")
USAGE_QUERY = {"group_by": text(choices=USAGE_GROUPS), "since": text(max_length=40, pattern=NOT_EMPTY, rule="must not "
               "be empty"), "until": text(max_length=40, pattern=NOT_EMPTY, rule="must not be empty"),
               "workspace": text(pattern=NOT_EMPTY, rule="must be a workspace name or ID"), "agent": text(max_length=64),
               "limit": integer(minimum=1, maximum=10_000)}
SESSION_USAGE_QUERY = {"lineage": boolean()}
WATCH_TURNS_FIELDS = {"turn_finished": boolean(required=True)}
ANSWER_FIELDS = {"option_id": text(required=True, max_length=1000, pattern=NOT_EMPTY, rule="must not be empty"),
                 "content": mapping()}
PREVIEW_QUERY = {"message_id": token()}
DIFF_QUERY = {"against": text(choices=("end", "current")), "stat": boolean()}
CLEAR_SELECTION_QUERY = {"expected_revision": integer(required=True, minimum=0, maximum=SQLITE_MAX_INTEGER)}

# -- path parameters: an ID of the wrong shape is its kind's *_not_found (docs/decisions.md) ----------

WORKSPACE_REFERENCE = f"{id_pattern('ws')}|{WORKSPACE_NAME_PATTERN}"  # a workspace by ID or name
PATH_FIELDS = {"session_id": identifier("sess", required=True), "entry": identifier("queue", required=True),
               "workspace": text(required=True, pattern=WORKSPACE_REFERENCE, rule="must be a workspace name or ID"),
               "agent_name": text(required=True, max_length=64),
               "turn_id": identifier("turn", required=True), "checkpoint_id": identifier("ckpt", required=True),
               "item_id": identifier("attn", required=True),
               "setting": text(required=True, max_length=200, rule="a setting's dotted name; any other is "
                                                                   "setting_not_editable")}
