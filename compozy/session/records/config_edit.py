"""Setting one key of config.toml in its text, so that every other line (comments included) stays as it was.

Layer 4 (pure functions). The key is found where the file sets it (under its table, or as a dotted key in a
parent table) and only its value is replaced; a key the file does not set goes under its table's header, or
into a new table at the end. Whatever the edit, the result is parsed again and must be the old document with
that one key changed, else NotEditable: a hand-written form this edit does not understand is never guessed at.
"""

import json
import re
import tomllib

HEADER = re.compile(r"^\s*\[(?!\[)(?P<name>[^\[\]#]+)\]\s*(?:#.*)?$")
ARRAY_HEADER = re.compile(r"^\s*\[\[")
BARE_OR_QUOTED = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
KEY_LINE = re.compile(rf"^(?P<lead>\s*)(?P<key>{BARE_OR_QUOTED}(?:\s*\.\s*{BARE_OR_QUOTED})*)\s*=\s*"
                      rf"(?P<value>\"(?:[^\"\\]|\\.)*\"|'[^']*'|[^\s#]+)(?P<rest>.*)$")
PART = re.compile(BARE_OR_QUOTED)
BY_HAND = "change it by hand, then run `compozy daemon reload`"


class NotEditable(Exception):
    """The file cannot be changed safely by this edit; the message says why."""


def toml_string(value):
    """A TOML basic string (JSON's escapes are TOML's for what a setting holds)."""
    return json.dumps(value, ensure_ascii=False)


def set_key(text, name, value):
    """The text with the dotted key `name` set to the string `value`."""
    table, leaf = name.rsplit(".", 1)
    lines = text.splitlines(keepends=True)
    found = _find(lines, name)
    if found is not None:
        index, match = found
        lines[index] = (f"{match['lead']}{match['key']} = {toml_string(value)}{match['rest']}"
                        + _newline(lines[index]))
    else:
        lines = _insert(lines, table, leaf, value)
    edited = "".join(lines)
    _check(text, edited, name, value)
    return edited


def _find(lines, name):
    """(line index, match) of the line that sets name, or None."""
    table = ""
    for index, line in _outside_strings(lines):
        header = HEADER.match(line)
        if header:
            table = _dotted(header["name"])
            continue
        if ARRAY_HEADER.match(line):
            table = None  # keys of [[...]] entries are never settings
            continue
        match = KEY_LINE.match(line.rstrip("\r\n"))
        if match and table is not None and ".".join(filter(None, (table, _dotted(match["key"])))) == name:
            return index, match
    return None


def _insert(lines, table, leaf, value):
    entry = f"{leaf} = {toml_string(value)}\n"
    for index, line in _outside_strings(lines):
        header = HEADER.match(line)
        if header and _dotted(header["name"]) == table:
            return lines[:index + 1] + [entry] + lines[index + 1:]
    ending = "" if not lines or lines[-1].endswith("\n") else "\n"
    gap = "\n" if lines else ""
    return lines + [f"{ending}{gap}[{table}]\n", entry]


def _outside_strings(lines):
    """(index, line) of the lines that do not lie inside a multi-line string."""
    inside = None
    for index, line in enumerate(lines):
        if inside is None:
            yield index, line
        for quote in re.findall(r'"""|\'\'\'', line):
            if inside is None:
                inside = quote
            elif quote == inside:
                inside = None


def _dotted(key):
    return ".".join(part.strip('"\'') if part[0] in "\"'" else part for part in PART.findall(key))


def _newline(line):
    return line[len(line.rstrip("\r\n")):]


def _check(before, after, name, value):
    """The edited text parses, and to exactly the old document with name set to value."""
    try:
        old, new = tomllib.loads(before), tomllib.loads(after)
    except tomllib.TOMLDecodeError as exc:
        raise NotEditable(f"it sets {name} (or its table) in a form this edit does not change safely (the edit "
                          f"would not parse: {exc}); {BY_HAND}") from None
    expected = _with(old, name.split("."), value)
    if expected is None or new != expected:
        raise NotEditable(f"it sets {name} (or its table) in a form this edit does not change safely; {BY_HAND}")


def _with(document, parts, value):
    """A copy of the parsed document with parts set to value, or None when a parent is not a table."""
    copy = dict(document)
    head, rest = parts[0], parts[1:]
    if not rest:
        copy[head] = value
        return copy
    child = copy.get(head, {})
    if not isinstance(child, dict):
        return None
    inner = _with(child, rest, value)
    if inner is None:
        return None
    copy[head] = inner
    return copy
