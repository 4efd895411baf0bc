"""Request bodies: declared fields, types and bounds; anything else is invalid_request.

Layer 1: imports only layer 0. Every surface passes bodies through the same checks.
"""

from dataclasses import dataclass

from compozy.errors import invalid


@dataclass(frozen=True)
class Field:
    types: tuple
    required: bool = False
    max_length: int | None = None
    choices: tuple = ()


def text(required=False, max_length=None, choices=()):
    return Field((str,), required, max_length, choices)


def boolean(required=False):
    return Field((bool,), required)


def integer(required=False):
    return Field((int,), required)


def mapping(required=False):
    return Field((dict,), required)


def sequence(required=False):
    return Field((list,), required)


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
    return value


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
