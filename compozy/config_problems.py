"""What is wrong with config.toml, collected so that one error names every problem, each with the file
and the key; and the table shapes every section shares.

Layer 0: stdlib only (compozy.config and compozy.launch_aliases report through it).
"""

import re

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class ConfigError(Exception):
    """config.toml is unreadable or invalid; the message names the file, the key and the problem."""


class Problems:
    def __init__(self, path):
        self.path, self.items = path, []

    def add(self, key, problem):
        self.items.append(f"{self.path}: {key}: {problem}")

    def raise_if_any(self):
        if self.items:
            raise ConfigError("\n".join(self.items))


def as_list(value, key, problems):
    if not isinstance(value, list):
        problems.add(key, "expected a list")
        return []
    return value


def named_tables(table, section, problems):
    """(name, table) of each entry of a section of named tables ([providers.NAME], [agents.NAME])."""
    if not isinstance(table, dict):
        problems.add(section, "expected a table")
        return []
    result = []
    for name, spec in table.items():
        if not NAME.match(name):
            problems.add(f"{section}.{name}", "names use letters, digits, _ and - (at most 64)")
        elif not isinstance(spec, dict):
            problems.add(f"{section}.{name}", "expected a table")
        else:
            result.append((name, spec))
    return result
