"""Scenario files: loading with line numbers, interpolation, subset matching, and the step runner."""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SPEC_DIR = Path(__file__).resolve().parents[2] / "spec"
TOP_KEYS = {"id", "description", "covers", "tags", "surfaces", "skip", "config", "provider_env",
            "steps", "events", "finally", "fleet"}
STEP_KINDS = ("do", "await", "gate", "signal", "restart", "sleep")
STEP_KEYS = {"do": {"do", "with", "expect", "save", "note", "surfaces"},
             "await": {"await", "note"}, "gate": {"gate", "note"}, "signal": {"signal", "note"},
             "restart": {"restart", "note"}, "sleep": {"sleep", "note"}}
EXPECT_KEYS = {"result", "error", "http_status", "cli_exit", "stdout_contains", "message_contains", "details"}
SURFACES = ("inproc", "http", "cli")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s)$")


class ScenarioError(AssertionError):
    pass


class _LineLoader(yaml.SafeLoader):
    """Keeps each mapping's first line as __line__ so failures point at file:line."""


def _construct_mapping(loader, node):
    mapping = loader.construct_mapping(node, deep=True)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def strip_lines(value):
    if isinstance(value, dict):
        return {k: strip_lines(v) for k, v in value.items() if k != "__line__"}
    if isinstance(value, list):
        return [strip_lines(v) for v in value]
    return value


@dataclass
class Scenario:
    path: Path
    data: dict
    id: str = ""
    surfaces: tuple = SURFACES
    skip: dict = field(default_factory=dict)

    @property
    def steps(self):
        return self.data.get("steps") or []


def load_scenario(path):
    with open(path, encoding="utf-8") as handle:
        data = yaml.load(handle, Loader=_LineLoader)
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: a scenario file holds one mapping")
    scenario = Scenario(Path(path), data, data.get("id", ""), tuple(data.get("surfaces") or SURFACES),
                        strip_lines(data.get("skip") or {}))
    return scenario


def all_scenarios():
    return [load_scenario(p) for p in sorted(SPEC_DIR.rglob("*.yaml")) if p.name != "schema.yaml"]


def duration(text):
    if isinstance(text, (int, float)):
        return float(text)
    match = _DURATION.match(str(text))
    if not match:
        raise ScenarioError(f"bad duration {text!r}; use 500ms or 10s")
    return float(match.group(1)) * (0.001 if match.group(2) == "ms" else 1)


# -- interpolation and matching --------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.]*)\}")


def lookup(variables, dotted):
    value = variables
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise KeyError(dotted)
    return value


def interpolate(value, variables):
    if isinstance(value, str):
        whole = _PLACEHOLDER.fullmatch(value)
        if whole:
            return lookup(variables, whole.group(1))
        return _PLACEHOLDER.sub(lambda m: str(lookup(variables, m.group(1))), value)
    if isinstance(value, dict):
        return {k: interpolate(v, variables) for k, v in value.items() if k != "__line__"}
    if isinstance(value, list):
        return [interpolate(v, variables) for v in value]
    return value


def mismatch(expected, actual, path="result"):
    """None when expected is a subset of actual; otherwise a sentence saying where it differs."""
    if isinstance(expected, str) and expected.startswith("$"):
        return _special(expected, actual, path)
    if isinstance(expected, dict) and len(expected) == 1 and next(iter(expected)).startswith("$"):
        return _operator(expected, actual, path)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return f"{path}: expected an object, got {_short(actual)}"
        for key, value in expected.items():
            if value == "$absent":
                if actual.get(key) is not None:
                    return f"{path}.{key}: expected absent, got {_short(actual[key])}"
                continue
            if key not in actual:
                return f"{path}.{key}: missing (have {sorted(actual)})"
            problem = mismatch(value, actual[key], f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return f"{path}: expected {len(expected)} items, got {_short(actual)}"
        for index, (e, a) in enumerate(zip(expected, actual)):
            problem = mismatch(e, a, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if expected != actual:
        return f"{path}: expected {_short(expected)}, got {_short(actual)}"
    return None


def _special(expected, actual, path):
    if expected == "$present":
        return None if actual is not None else f"{path}: expected a value"
    if expected == "$any":
        return None
    if expected == "$absent":
        return None if actual is None else f"{path}: expected absent, got {_short(actual)}"
    return f"{path}: unknown matcher {expected}"


def _operator(expected, actual, path):
    (operator, operand), = expected.items()
    if operator == "$len":
        return None if isinstance(actual, (list, dict, str)) and len(actual) == operand else \
            f"{path}: expected length {operand}, got {_short(actual)}"
    if operator == "$contains":
        if isinstance(actual, str):
            return None if str(operand) in actual else f"{path}: {_short(actual)} does not contain {operand!r}"
        if isinstance(actual, list) and any(mismatch(operand, item) is None for item in actual):
            return None
        return f"{path}: no item matches {_short(operand)} in {_short(actual)}"
    if operator == "$ne":
        return None if actual != operand else f"{path}: expected anything but {_short(operand)}"
    if operator == "$gte":
        return None if isinstance(actual, (int, float)) and actual >= operand else f"{path}: expected >= {operand}, got {_short(actual)}"
    if operator == "$in":
        return None if actual in operand else f"{path}: expected one of {operand}, got {_short(actual)}"
    return f"{path}: unknown operator {operator}"


def _short(value, limit=300):
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


# -- config.toml from a scenario's `config` ----------------------------------------------

def nest(config):
    """{"a.b.c": 1, "d": {"e": 2}} -> nested tables."""
    nested = {}
    for key, value in (config or {}).items():
        target = nested
        parts = key.split(".")
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        if isinstance(value, dict) and isinstance(target.get(parts[-1]), dict):
            target[parts[-1]].update(value)
        else:
            target[parts[-1]] = value
    return nested


def to_toml(tables, prefix=""):
    lines, subtables = [], []
    for key, value in tables.items():
        if isinstance(value, dict) and key != "env":  # env tables are written inline
            subtables.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_toml_value(value)}")
    text = (f"[{prefix}]\n" if prefix and lines else "") + "".join(line + "\n" for line in lines)
    for key, value in subtables:
        text += "\n" + to_toml(value, f"{prefix}.{_key(key)}" if prefix else _key(key))
    return text


def _key(key):
    return key if re.match(r"^[A-Za-z0-9_-]+$", key) else json.dumps(key)


def _toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise ScenarioError(f"cannot write {value!r} to TOML")


