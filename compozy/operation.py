"""What an entry of the operation table (compozy/api.py) is made of.

Layer 2 (the wire, as data), beside compozy/api.py: an operation's types (its answers, its CLI command, its
native tool, another spelling of a body field, the entry itself with its parsed request) and the error
groups and answer sets many entries share. compozy/api.py holds the entries.
"""

import re
from dataclasses import dataclass, field
from functools import cached_property

from compozy import parsing
from compozy import validate as v
from compozy.states import DeriveAnswer, Disposition, StopAnswer

PARAMETER = re.compile(r"<(?:\w+:)?(\w+)>")  # a path parameter in a Flask rule


@dataclass(frozen=True)
class Success:
    status: int
    schema: str | None              # a components/schemas name; None: no body
    kinds: tuple = ()               # the result kinds (serialize.Answer) answered with this status
    summary: str = "success"
    media: tuple = ()               # the media types of a file answered as itself (no JSON document)


@dataclass(frozen=True)
class Cli:
    command: str                    # the click command path, e.g. "session events"
    arguments: tuple = ()           # fields given positionally, in order
    flags: tuple = ()               # (field, "--flag") pairs; a boolean field is a bare flag
    selector: str = ""              # where operations share a command: the bare flag that picks this one


ANY, OTHERS, OTHERS_AND_CHILDREN = "any", "others", "others and children"  # whom a native tool may aim at
TARGETS = (ANY, OTHERS, OTHERS_AND_CHILDREN)


@dataclass(frozen=True)
class Tool:
    """The operation as a native tool of bound agents (interface.md, "Native tools for agents").

    The one declared mapping of a tool's arguments to the operation's request (parsed once, at the tool
    server's edge: Operation.parse_tool): `fields` pass under their own names, `defaults` fill a field the
    caller omits, the caller's workspace fills the operation's workspace (a path parameter or a field), the
    target session is `session_id`: required, defaulting to the caller ("caller"), or not taken (""). What
    `extra` declares is the tool's own options, never a field of the request.

    The governed rules of the call are declared here too, and the tool server reads them from the entry
    alone (it names no tool): whom the call may aim at (`targets`: any session of the caller's workspace;
    OTHERS, never the caller itself, session_is_caller; OTHERS_AND_CHILDREN, never the caller, and the
    caller's own spawned children, which only their parent's agent may use the tool on: the façade is told
    the caller, `caller_id`), whether it creates a session for the caller (`creates_session`: held to the
    limits on what agents create, the façade told its creator, by the identity the operation reads or as
    `creator`), and which defaults are deprecated (`deprecated_defaults`: {field: advice}, noted in the
    answer as `deprecation` when the caller leaves the field out).
    """

    name: str
    description: str
    fields: tuple = ()              # the operation's body or query fields the tool takes, under their own names
    extra: dict = field(default_factory=dict)  # tool-only arguments (validate specs): the tool's own options
    target: str = "required"
    defaults: dict = field(default_factory=dict)  # an operation field's value when the tool's caller omits it
    targets: str = ANY              # whom it may aim at: ANY, OTHERS or OTHERS_AND_CHILDREN
    creates_session: bool = False   # it creates a session for its caller (the agents' creation limits)
    deprecated_defaults: dict = field(default_factory=dict)  # {a field of `defaults`: the advice in its note}

    def __post_init__(self):
        if self.targets not in TARGETS:
            raise ValueError(f"{self.name}: targets must be one of {TARGETS}")
        if self.targets != ANY and self.target != "required":
            raise ValueError(f"{self.name}: a tool that never aims at its caller must require session_id")
        if not set(self.deprecated_defaults) <= set(self.defaults):
            raise ValueError(f"{self.name}: only a default can be deprecated")

    def deprecation(self, defaulted):
        """The note an answer carries when the call left out a field whose default is deprecated (None: none)."""
        for name in defaulted:
            if name in self.deprecated_defaults:
                return f"{self.name} without an explicit {name} is deprecated; {self.deprecated_defaults[name]}"
        return None

    @cached_property
    def options_type(self):
        return parsing.options_type(self)

    def arguments(self, operation):
        """The validate spec of the tool's arguments."""
        spec = {"session_id": v.text(required=self.target == "required", max_length=64)} if self.target else {}
        given = {**(operation.body or {}), **operation.query}
        return {**spec, **{name: given[name] for name in self.fields}, **self.extra}


@dataclass(frozen=True)
class Spelling:
    """Another name a body may give one of its fields, with what it may hold under that name (the
    issue's `"workspace": "copy"` for a fork's `"files": "copy"`). It stays out of the request object,
    whose `workspace` is the path parameter."""

    means: str                      # the body field it stands for
    spec: v.Field                   # what the other name may hold


COPY_SPELLING = {"workspace": Spelling("files", v.text(choices=("copy",)))}


@dataclass(frozen=True)
class Operation:
    method: str
    rule: str
    name: str
    facade: str | None
    summary: str
    success: tuple = (Success(200, None),)
    errors: tuple = ()
    body: dict | None = None        # a validate spec; None: the route reads no body
    query: dict = field(default_factory=dict)
    headers: dict = field(default_factory=dict)
    stream: str = ""                # "always": text/event-stream; "on request": also, with that Accept
    cli: Cli | None = None
    tool: Tool | None = None        # the native MCP tool (interface.md, "Native tools for agents")
    rules: tuple = ()               # validate.Rule: rules across the body's fields
    spellings: dict = field(default_factory=dict)  # a body field's other name: {name: Spelling}

    @property
    def path_params(self):
        return tuple(PARAMETER.findall(self.rule))

    @cached_property
    def request_type(self):
        return parsing.request_type(self)

    def parse(self, path=None, body=None, query=None):
        """This operation's typed request (compozy/parsing.py): the one place its input is checked."""
        return parsing.parse(self, path, body, query)

    def parse_tool(self, arguments, caller_id, workspace):
        """A call of this operation's native tool as its typed request (parsing.ToolCall): the one check of
        the tool's arguments, at the tool server's edge."""
        return parsing.parse_tool(self, arguments, caller_id, workspace)

    def status_for(self, kind=None):
        """The HTTP status of a result of this kind (None: a plain document)."""
        for success in self.success:
            if (kind in success.kinds) if kind is not None else not success.kinds:
                return success.status
        raise LookupError(f"{self.name} has no status for a {kind!r} answer")


SESSION = ("invalid_request", "workspace_not_found", "session_not_found")
ADMISSION = ("new_work_admission_unavailable",)
BINDING = ("agent_not_found", "model_unavailable", "provider_auth_failure", "provider_unavailable",
           "runtime_option_unsupported")
IDENTITY = ("idempotency_conflict",)
ENTRY_ERRORS = ("queue_entry_not_found", "queue_entry_not_queued")
DERIVABLE = ("session_not_derivable", "session_archived", "session_fence_conflict")
RESTORING = ("checkpoint_not_found", "workspace_busy", "checkpoint_failed")
FLEET = ("fleet_not_configured", "fleet_catalog_unavailable")


PROMPT_ANSWERS = (
    Success(200, "PromptAnswer", (Disposition.STARTED, Disposition.STEERED, Disposition.INTERRUPTED),
            "admitted: started, steered or interrupted"),
    Success(202, "PromptAnswer", (Disposition.QUEUED,), "queued behind the current turn"),
)
STOP_ANSWERS = (
    Success(202, "StopAccepted", (StopAnswer.ACCEPTED,), "wait false: the stop runs on"),
    Success(200, "StopOutcome", (StopAnswer.OUTCOME,), "wait true (or omitted on a stopped session): the outcome"),
    Success(200, "SessionAnswer", (StopAnswer.STOPPED,), "wait false on a stopped session: the session"),
    Success(204, None, (StopAnswer.LEGACY,), "wait omitted: deprecated, with Deprecation and Warning headers"),
)
DERIVE_ANSWERS = (
    Success(201, "DerivationAnswer", (DeriveAnswer.CREATED,), "the new session"),
    Success(200, "DerivationAnswer", (DeriveAnswer.REPLAYED,), "a repeat with the same key: the recorded outcome"),
)
# A derivation's message goes through the ordinary prompt admission of the new session.
FIRST_PROMPT = (*ADMISSION, *BINDING, "route_not_found", "queue_full", "session_stop_in_progress")
