"""The options of a permission request, and choosing one of them.

Layer 4. An option is {"option_id", "name", "kind"} as the agent offered it, in its order: the name
or the kind may be missing, and the kind may be one ACP does not know. A request is only ever
answered with one of its own options, or cancelled: a person picks one by its ID or by a decision
(the first option of that kind), a policy by the kinds it prefers (docs/decisions.md).
"""

from compozy.errors import CompozyError
from compozy.states import PERMISSION_CANCELLED, PERMISSION_SELECTED

ALLOWING = ("allow_once", "allow_always")  # what a policy that allows picks, in this order
REJECTING = ("reject_once", "reject_always")
KNOWN_KINDS = ALLOWING + REJECTING
# The daemon's own two options, for what it holds without the agent naming options (a file write,
# a native tool call).
DAEMON_OPTIONS = ({"option_id": "allow-once", "name": "Allow", "kind": "allow_once"},
                  {"option_id": "reject-once", "name": "Reject", "kind": "reject_once"})


def first_of_kinds(options, kinds):
    """The first offered option of the first kind in `kinds` that was offered at all, else None."""
    for kind in kinds:
        for option in options:
            if option.get("kind") == kind:
                return option
    return None


def decision_of(option):
    """allow-once .. reject-always for an option of ACP's kinds, `selected` for another, `cancelled` for none."""
    if option is None:
        return PERMISSION_CANCELLED
    kind = option.get("kind")
    return kind.replace("_", "-") if kind in KNOWN_KINDS else PERMISSION_SELECTED


def outcome(option):
    """The fields an answered request adds to its permission event: the decision and the option chosen."""
    return {"decision": decision_of(option)} | ({"option": dict(option)} if option is not None else {})


def chosen(options, option_id=None, decision=None):
    """The option a person asked for by ID or by decision; a refusal naming the offered options otherwise."""
    if option_id is not None:
        option = next((o for o in options if o["option_id"] == option_id), None)
        if option is None:
            raise CompozyError("permission_option_not_offered", f"the agent did not offer option {option_id!r}; "
                               f"{offered_text(options)}", option_id=option_id, options=list(options))
        return option
    option = first_of_kinds(options, (decision.replace("-", "_"),))
    if option is None:
        raise CompozyError("permission_option_unavailable", f"the agent offered no {decision} option; "
                           f"{offered_text(options)}", decision=decision, options=list(options))
    return option


def offered_text(options):
    """The offered options in words, for a refusal: `offered: ID (name, kind); ...`."""
    described = [o["option_id"] + (f" ({', '.join(part for part in (o.get('name'), o.get('kind')) if part)})"
                                   if o.get("name") or o.get("kind") else "") for o in options]
    return "offered: " + ("; ".join(described) if described else "nothing")
