"""The dependency direction, enforced by an ast walk over every import in compozy/.

Layers (shared/reference/style.md section 6.3, as fixed for this project):
  0 errors, states, ids, clock, location, text, launch_aliases (and the package root, which holds only __version__)
  1 config, config_settings (the settings table; config imports it), paths, validate, redact, parsing (which builds
    on validate: requests parsed with its specs)
  2 store.*, acp.protocol, acp.translate, serialize, api (the operation table) and operation (what an entry is made of; api imports it), proc and boundary (the
    operating-system seams, stdlib only), checkpoints.* (the shadow git repository, stdlib only), registry.* (the ACP registry: its catalog, installs, config.toml edits)
  3 acp.* (the ACP seam: the agent process, the client, options, the agent's requests)
  4 session.*
  5 manager
  6 http.*, daemon.*, cli.* (cli.client included), mcp.* (the native tool server)
A module imports only lower layers; store.*, acp.* and session.* may also import same-package siblings.
Inside session.*, the sub-packages are ordered records < lifecycle < turns < derive: a module imports only from its
own sub-package or a lower one.
Layer 0: errors imports nothing from compozy; ids, states and clock may import errors, states imports machine (the
Machine type its tables are), jsonrpc (the one JSON-RPC framing) imports text,
threads (the daemon's threads) imports clock.
The fleet's modules sit in the layers of what they touch: fleet.settings 0, fleet.catalog 2 (peewee, PostgreSQL),
fleet.mirror and fleet.adoption 4, fleet.views 5 (the façade's fleet half, a SessionManager mixin: manager imports it),
fleet.relay 6 (flask; http.app imports it, it imports http.guards, http.sse and http.profiles: the answer streamed back as
`?profile=` streams it).
Layer 6: http.* imports http.* siblings and mcp.* (the app serves the tool server); mcp.* imports mcp.*
siblings; daemon.* imports daemon.* siblings and http.* (it builds the app);
cli.* imports only api and operation (the operation table), errors, ids, text, jsonrpc and other cli modules at module level, and paths,
config, config_settings, location and registry.* lazily (inside a function; `agent add` edits this home's config.toml), never manager, http, daemon or session. Three lazy imports are
named by the style guide itself: `cli.daemon` imports `daemon.process` inside `daemon run`, `cli.agent`
imports `agents.reference` for the hidden `agent reference` command the zipapp uses, and `acp.login` for
`agent login` (a person logs an agent in on this machine, in this terminal: the CLI is the ACP client then).
agents.reference and agents.directives import only acp.protocol, each other, and the stdlib.
Each third-party library is imported only in its layer's modules.
"""

import ast
import functools
import sys
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "compozy"

LAYER_OF = {
    "compozy": 0, "compozy.errors": 0, "compozy.states": 0, "compozy.ids": 0, "compozy.clock": 0, "compozy.machine": 0, "compozy.jsonrpc": 0,
    "compozy.location": 0, "compozy.text": 0, "compozy.process_records": 0, "compozy.launch_aliases": 0, "compozy.config_problems": 0,
    "compozy.config": 1, "compozy.config_settings": 1, "compozy.config_entries": 0, "compozy.paths": 1, "compozy.validate": 1, "compozy.redact": 1,
    "compozy.parsing": 1,
    "compozy.store": 2, "compozy.acp.protocol": 2, "compozy.acp.translate": 2, "compozy.serialize": 2,
    "compozy.api": 2, "compozy.operation": 2, "compozy.proc": 2, "compozy.boundary": 2, "compozy.registry": 2,
    "compozy.checkpoints": 2, "compozy.acp": 3,
    "compozy.session": 4,
    "compozy.manager": 5,
    "compozy.http": 6, "compozy.daemon": 6, "compozy.cli": 6, "compozy.mcp": 6, "compozy.__main__": 6,
    # the fleet (docs/fleet.md): each module in the layer of what it touches
    "compozy.fleet": 0, "compozy.fleet.settings": 0, "compozy.fleet.catalog": 2, "compozy.fleet.mirror": 4, "compozy.fleet.adoption": 4,
    "compozy.fleet.views": 5, "compozy.fleet.relay": 6,
}
LAYER0_IMPORTERS = ("compozy.ids", "compozy.states", "compozy.clock")
LAYER0_IMPORTED = {"compozy.errors": LAYER0_IMPORTERS, "compozy.machine": ("compozy.states",),
                   "compozy.text": ("compozy.jsonrpc",),
                   "compozy.clock": ("compozy.threads",)}
SIBLING_PACKAGES = ("compozy.store", "compozy.registry", "compozy.checkpoints", "compozy.acp", "compozy.session", "compozy.http", "compozy.daemon",
                    "compozy.mcp")
SESSION_ORDER = ("compozy.session.records", "compozy.session.lifecycle", "compozy.session.turns",
                 "compozy.session.derive")
AGENT_MODULES = ("compozy.agents.reference", "compozy.agents.directives", "compozy.agents.sessions",
                 "compozy.agents.turn", "compozy.agents.steps", "compozy.agents.settings", "compozy.agents.tools")
FLEET_SURFACE = {("compozy.manager", "compozy.fleet.views"), ("compozy.http.app", "compozy.fleet.relay"), ("compozy.fleet.relay", "compozy.http.guards"),
                 ("compozy.fleet.relay", "compozy.http.profiles"),  # the relayed answer streamed back, as ?profile= does
                 ("compozy.fleet.relay", "compozy.http.sse")}
CLI_TOP_LEVEL = ("compozy", "compozy.errors", "compozy.ids", "compozy.api", "compozy.operation", "compozy.text",
                 "compozy.jsonrpc")
CLI_LAZY = CLI_TOP_LEVEL + ("compozy.paths", "compozy.config", "compozy.config_settings", "compozy.location")
CLI_NAMED_LAZY = {("compozy.cli.daemon", "compozy.daemon.process"), ("compozy.cli.agent", "compozy.agents.reference"),
                  ("compozy.cli.agent", "compozy.acp.login")}

# Third-party top-level names and the modules allowed to import them.
THIRD_PARTY = {
    "flask": lambda m: in_package(m, "compozy.http") or m == "compozy.fleet.relay",
    "werkzeug": lambda m: in_package(m, "compozy.http"),  # flask's own toolkit
    "waitress": lambda m: m in ("compozy.daemon.listen", "compozy.daemon.workers"),
    "peewee": lambda m: in_package(m, "compozy.store") or m == "compozy.fleet.catalog",
    "playhouse": lambda m: m == "compozy.fleet.catalog",  # peewee's own extensions: its connection pool
    "pexpect": lambda m: m in ("compozy.acp.driver", "compozy.proc"),
    "apscheduler": lambda m: in_package(m, "compozy.session"),
    "click": lambda m: in_package(m, "compozy.cli"),
}


def in_package(module, package):
    return module == package or module.startswith(package + ".")


def module_name(path):
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def session_rank(module):
    """The place of a session module's sub-package in SESSION_ORDER (None outside them)."""
    return next((rank for rank, package in enumerate(SESSION_ORDER) if in_package(module, package)), None)


def is_package(module):
    return (PACKAGE_DIR.parent / module.replace(".", "/") / "__init__.py").exists()


def exists(module):
    relative = PACKAGE_DIR.parent / module.replace(".", "/")
    return relative.with_suffix(".py").exists() or (relative / "__init__.py").exists()


def layer_of(module):
    """The layer of a module: its own entry, else its package's (store.*, session.*, http.*, cli.*)."""
    probe = module
    while probe:
        if probe in LAYER_OF:
            return LAYER_OF[probe]
        probe = probe.rpartition(".")[0]
    return None


class Import:
    def __init__(self, target, line, lazy):
        self.target, self.line, self.lazy = target, line, lazy

    def __repr__(self):
        return f"{self.target} (line {self.line}{', lazy' if self.lazy else ''})"


@functools.lru_cache(maxsize=None)
def imports_of(module, path):
    """Every import in the file: compozy targets resolved to modules, others as their top-level name."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if is_package(module) else module.rpartition(".")[0]
    found = []

    def visit(node, lazy):
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend(Import(alias.name, child.lineno, inner) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[:len(package.split(".")) - (child.level - 1)]
                    base = ".".join(anchor + ([child.module] if child.module else []))
                for alias in child.names:
                    candidate = f"{base}.{alias.name}"
                    target = candidate if in_package(base, "compozy") and exists(candidate) else base
                    found.append(Import(target, child.lineno, inner))
            visit(child, inner)

    visit(tree, False)
    return tuple(found)


MODULES = sorted((module_name(p), p) for p in PACKAGE_DIR.rglob("*.py"))
MODULE_IDS = [m for m, _ in MODULES]


def violations(module, path):
    """Why each compozy import of this module breaks the rules (empty when it keeps them)."""
    problems = []
    own = layer_of(module)
    for item in imports_of(module, path):
        target = item.target
        if not in_package(target, "compozy") or target == module:
            continue
        if in_package(module, "compozy.agents"):
            if target not in ("compozy.acp.protocol", "compozy.acp") and not in_package(target, "compozy.agents"):
                problems.append(f"{item}: agents import only acp.protocol and the stdlib")
            continue
        if in_package(target, "compozy.agents"):
            if (module, target) not in CLI_NAMED_LAZY or not item.lazy:
                problems.append(f"{item}: only cli.agent may import the reference agent, lazily")
            continue
        if in_package(module, "compozy.cli"):
            allowed = (in_package(target, "compozy.cli") or target in CLI_TOP_LEVEL
                       or (item.lazy and (target in CLI_LAZY or in_package(target, "compozy.registry")
                                          or (module, target) in CLI_NAMED_LAZY)))
            if not allowed:
                problems.append(f"{item}: cli imports only api, errors, ids, cli.* (paths, config lazily)")
            continue
        theirs = layer_of(target)
        if theirs is None:
            problems.append(f"{item}: target has no layer")
        elif own == 0:
            if module not in LAYER0_IMPORTED.get(target, ()):
                problems.append(f"{item}: in layer 0 only ids, states and clock import errors, and states machine")
        elif in_package(module, "compozy.session") and in_package(target, "compozy.session"):
            problems += session_problems(item, module, target)
        elif theirs < own:
            pass
        elif module == "compozy.parsing" and target == "compozy.validate":
            pass  # the request objects are parsed with validate's specs and checks
        elif module == "compozy.config" and target == "compozy.config_settings":
            pass  # config.toml's scalar keys are checked against the settings table
        elif module == "compozy.api" and target == "compozy.operation":
            pass  # the table's entries are made of operation's types
        elif theirs == own and any(in_package(module, p) and in_package(target, p) for p in SIBLING_PACKAGES):
            pass  # store.* -> store.*, acp.* -> acp.*, session.* -> session.*, http.* -> http.*, daemon.* -> daemon.*
        elif in_package(module, "compozy.daemon") and in_package(target, "compozy.http"):
            pass  # the daemon process builds the app
        elif in_package(module, "compozy.http") and in_package(target, "compozy.mcp"):
            pass  # the app serves the native tool server
        elif (module, target) in FLEET_SURFACE:
            pass  # the façade's fleet half; the app relays to the fleet's nodes, the relay reads a body as the app does
            # and streams the owner's answer back as the profile relay does
        elif module == "compozy.__main__" and target == "compozy.cli.main":
            pass  # `python -m compozy` is the CLI
        elif theirs == own:
            problems.append(f"{item}: sideways import inside layer {own}")
        else:
            problems.append(f"{item}: upward import from layer {own} into layer {theirs}")
    return problems


def session_problems(item, module, target):
    mine, theirs = session_rank(module), session_rank(target)
    if mine is None or theirs is None:
        return [f"{item}: session modules live in {', '.join(SESSION_ORDER)}"]
    if theirs > mine:
        return [f"{item}: upward import inside session, from {SESSION_ORDER[mine]} into {SESSION_ORDER[theirs]}"]
    return []


def test_every_module_has_a_layer():
    unplaced = [m for m in MODULE_IDS if layer_of(m) is None and not in_package(m, "compozy.agents")]
    assert unplaced == []


def test_every_session_module_lives_in_an_ordered_sub_package():
    loose = [m for m in MODULE_IDS if in_package(m, "compozy.session") and m != "compozy.session"
             and session_rank(m) is None]
    assert loose == []


@pytest.mark.parametrize("module, path", MODULES, ids=MODULE_IDS)
def test_imports_follow_the_layers(module, path):
    assert violations(module, path) == []


def test_errors_imports_nothing_from_compozy():
    path = PACKAGE_DIR / "errors.py"
    assert [i for i in imports_of("compozy.errors", path) if in_package(i.target, "compozy")] == []


@pytest.mark.parametrize("module, path", [(m, p) for m, p in MODULES if in_package(m, "compozy.cli")],
                         ids=[m for m in MODULE_IDS if in_package(m, "compozy.cli")])
def test_cli_never_imports_manager_http_or_session(module, path):
    forbidden = ("compozy.manager", "compozy.http", "compozy.session", "compozy.store")
    assert [i for i in imports_of(module, path) if any(in_package(i.target, f) for f in forbidden)] == []


@pytest.mark.parametrize("module, path", [(m, p) for m, p in MODULES if m in AGENT_MODULES],
                         ids=list(AGENT_MODULES))
def test_reference_agent_imports_only_protocol_and_stdlib(module, path):
    for item in imports_of(module, path):
        top = item.target.split(".")[0]
        if top == "compozy":
            allowed = item.target in ("compozy.acp.protocol", "compozy.acp")
            assert allowed or in_package(item.target, "compozy.agents"), item
        else:
            assert top in sys.stdlib_module_names or top == "__future__", item


@pytest.mark.parametrize("module, path", MODULES, ids=MODULE_IDS)
def test_third_party_libraries_stay_in_their_layer(module, path):
    wrong = []
    for item in imports_of(module, path):
        top = item.target.split(".")[0]
        if top in ("compozy", "__future__") or top in sys.stdlib_module_names:
            continue
        rule = THIRD_PARTY.get(top)
        if rule is None or not rule(module):
            wrong.append(item)
    assert wrong == []


def test_the_walk_sees_known_edges():
    """Guard the guard: the resolver finds imports written in each style used in compozy/."""
    def targets(module):
        path = PACKAGE_DIR / (module.removeprefix("compozy.").replace(".", "/") + ".py")
        return {i.target for i in imports_of(module, path)}
    assert "compozy.parsing" in targets("compozy.manager")  # from compozy import __version__, parsing, serialize
    assert "compozy.session.records.reads" in targets("compozy.manager")  # from compozy.session.records import reads
    assert "compozy.acp.protocol" in targets("compozy.agents.reference")  # from compozy.acp import protocol
    assert "compozy" in targets("compozy.cli.main")  # from compozy import __version__
    assert "flask" in targets("compozy.http.app")
    lazy = {i.target for i in imports_of("compozy.cli.daemon", PACKAGE_DIR / "cli" / "daemon.py") if i.lazy}
    assert "compozy.daemon.process" in lazy


@pytest.mark.parametrize("module, source, expected", [
    ("compozy.errors", "from compozy import ids\n", "only ids, states and clock"),
    ("compozy.clock", "import compozy.states\n", "only ids, states and clock"),
    ("compozy.paths", "from compozy.store import db\n", "upward"),
    ("compozy.redact", "from compozy import validate\n", "sideways"),
    ("compozy.session.lifecycle.stop", "from compozy import manager\n", "upward"),
    ("compozy.manager", "from compozy.http import app\n", "upward"),
    ("compozy.cli.client", "from compozy.http import guards\n", "cli imports only"),
    ("compozy.http.routes", "from compozy.daemon import process\n", "sideways"),
    ("compozy.cli.session", "from compozy.daemon.listen import serve\n", "cli imports only"),
    ("compozy.cli.session", "from compozy.manager import SessionManager\n", "cli imports only"),
    ("compozy.cli.session", "from compozy.paths import Home\n", "cli imports only"),
    ("compozy.cli.session", "def f():\n    from compozy.daemon.process import Daemon\n", "cli imports only"),
    ("compozy.agents.reference", "from compozy.errors import CompozyError\n", "agents import only"),
    ("compozy.session.turns.turn", "def f():\n    from compozy.agents import reference\n", "only cli.agent"),
    ("compozy.session.records.live", "from compozy.session.turns.turn import Turn\n", "upward import inside session"),
    ("compozy.session.lifecycle.stop", "from compozy.session.turns import engine\n", "upward import inside session"),
    ("compozy.session.records.live", "def f():\n    from compozy.session.lifecycle import stop\n", "upward import"),
])
def test_checker_flags_broken_rules(tmp_path, module, source, expected):
    path = tmp_path / "probe.py"
    path.write_text(source)
    found = violations(module, path)
    assert found and expected in found[0], found


@pytest.mark.parametrize("module, source", [
    ("compozy.ids", "from compozy.errors import CompozyError\n"),
    ("compozy.store.catalog", "from compozy.store.db import open_sqlite\n"),
    ("compozy.session.lifecycle.stop", "from compozy.session.records import live\nfrom compozy import proc\n"),
    ("compozy.session.turns.runner", "from compozy.session.lifecycle.recovery import Resume\n"
                                     "from compozy.session.records.replay import replay_prompt\n"
                                     "from compozy.session.turns.turn import Turn\n"),
    ("compozy.cli.main", "def f():\n    from compozy.paths import Home\n    from compozy.config import load\n"),
    ("compozy.daemon.process", "from compozy.http.app import create_app\nfrom compozy.manager import SessionManager\n"),
    ("compozy.daemon.process", "from compozy.daemon.listen import serve\n"),
    ("compozy.cli.main", "from compozy.api import OPS\n"),
])
def test_checker_allows_permitted_edges(tmp_path, module, source):
    path = tmp_path / "probe.py"
    path.write_text(source)
    assert violations(module, path) == []
