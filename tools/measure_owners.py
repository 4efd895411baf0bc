"""The figures of issue 23, measured over compozy/ by an ast walk (run from the repository's root).

    python tools/measure_owners.py [path-to-compozy]

Each figure is a heuristic, the same one before and after a change:
- subscripts: `x["literal"]` in compozy/session/ and the façade (manager.py and its mixins);
- hints: functions with at least one annotation (a parameter besides self/cls, or the return);
- state literals: a life cycle's state spelled as a string, compared with a `state`, `status`,
  `phase` or `disposition` read, or as the value of such a key or keyword, outside compozy/states.py
  and the reference agent;
- owner writes: assignments to an attribute LiveSession or Turn define (or to a subscript of it), and
  mutating container calls on one (append, pop, ...), on a `session`, `live`, `turn` or `current`
  outside the class's module (`owner events`: `.set()`/`.clear()` on their threading.Events);
- threads: `threading.Thread(` in the daemon's modules (not the CLI's nor the reference agent's)
  outside compozy/threads.py;
- wall clock: `time.time()`, `datetime.now()`, `datetime.utcnow()` outside compozy/clock.py, and
  `now_iso()` calls (which read it);
- processes: `subprocess.Popen`/`PopenSpawn`/`os.killpg`/`os.kill` outside compozy/proc.py;
- JSON-RPC: the string "jsonrpc" outside the framing leaf (compozy/jsonrpc.py; before it existed,
  compozy/acp/protocol.py) and the reference agent.
"""

import ast
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "compozy")
STATES = {"pending", "resolved", "timed_out", "canceled", "orphaned", "running", "titled", "failed",
          "superseded", "queued", "dispatching", "sent", "binding", "started", "completed", "starting",
          "active", "stopping", "stopped", "unbound", "ready", "reconfiguring", "recovering", "prompting",
          "cancelling", "done"}
MUTATORS = {"append", "pop", "update", "add", "discard", "remove", "setdefault", "extend", "popitem", "insert"}
EVENT_CALLS = {"set", "clear"}
OWNER_NAMES = {"session", "live", "turn", "current"}
FACADE = ("manager.py", "manager_")


def modules():
    for path in sorted(ROOT.rglob("*.py")):
        yield path, path.relative_to(ROOT).as_posix(), ast.parse(path.read_text())


def class_fields(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return {t.attr for n in ast.walk(node) for t in getattr(n, "targets", [getattr(n, "target", None)])
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return set()


def owner_fields():
    owners = {}
    for _, rel, tree in modules():
        if rel == "session/records/live.py":
            owners[rel] = class_fields(tree, "LiveSession")
        if rel == "session/turns/turn.py":
            owners[rel] = class_fields(tree, "Turn")
    return owners


def _root_attr(node):
    """The attribute an expression writes through: `a.b`, `a.b[k]`, `a.b.c` -> (a-expression, b)."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Attribute):
        return node.value, node.attr
    return None, None


def outside_writes(tree, fields, calls=MUTATORS):
    """(line, text) of each write through an owner's field on an owner-named variable."""
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign) and calls is MUTATORS:
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.Delete)) and calls is MUTATORS:
            targets = getattr(node, "targets", None) or [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in calls:
            targets = [node.func.value]
        for target in targets:
            base, attr = _root_attr(target)
            if attr in fields and isinstance(base, ast.Name) and base.id in OWNER_NAMES:
                found.append((node.lineno, ast.unparse(target)))
    return found


def hinted(function):
    args = function.args
    params = [a for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg not in ("self", "cls")]
    return function.returns is not None or any(a.annotation is not None for a in params)


def call_name(node):
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    if isinstance(func, ast.Attribute):
        return f"?.{func.attr}"
    return func.id if isinstance(func, ast.Name) else ""


STATE_KEYS = {"state", "status", "phase", "disposition"}


def _names_a_state(node):
    """`x.state`, `x["status"]`, `x.get("phase")`: an expression that reads a state."""
    if isinstance(node, ast.Attribute):
        return node.attr in STATE_KEYS
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value in STATE_KEYS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value in STATE_KEYS
    return False


def state_literals(tree):
    count = 0
    for node in ast.walk(tree):
        values = []
        if isinstance(node, ast.Compare) and any(map(_names_a_state, [node.left, *node.comparators])):
            for side in [node.left, *node.comparators]:
                values += side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
        elif isinstance(node, ast.Dict):
            values = [v for k, v in zip(node.keys, node.values)
                      if isinstance(k, ast.Constant) and k.value in STATE_KEYS]
        elif isinstance(node, ast.keyword) and node.arg in STATE_KEYS:
            values = [node.value]
        count += sum(isinstance(v, ast.Constant) and v.value in STATES for v in values)
    return count


def measure():
    owners = owner_fields()
    figures = dict.fromkeys(("subscripts", "functions", "hinted", "state literals", "owner writes", "owner events",
                             "threads",
                             "wall clock", "now_iso calls", "processes", "jsonrpc literals"), 0)
    modules_with_literals = set()
    for _, rel, tree in modules():
        if rel.startswith("session/") or rel.startswith(FACADE):
            figures["subscripts"] += sum(isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant)
                                         and isinstance(n.slice.value, str) for n in ast.walk(tree))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        figures["functions"] += len(functions)
        figures["hinted"] += sum(map(hinted, functions))
        if rel != "states.py" and not rel.startswith("agents/"):  # the reference agent speaks ACP's words
            literals = state_literals(tree)
            figures["state literals"] += literals
            if literals:
                modules_with_literals.add(rel)
        for owner, fields in owners.items():
            if rel != owner and not rel.startswith("agents/"):
                figures["owner writes"] += len(outside_writes(tree, fields))
                figures["owner events"] += len(outside_writes(tree, fields, EVENT_CALLS))
        calls = [call_name(n) for n in ast.walk(tree) if isinstance(n, ast.Call)]
        if rel != "threads.py" and not rel.startswith(("agents/", "cli/")):  # the daemon's threads
            figures["threads"] += calls.count("threading.Thread") + calls.count("Thread")
        if rel != "clock.py":
            figures["wall clock"] += sum(c in ("time.time", "datetime.now", "datetime.utcnow", "?.now", "?.utcnow")
                                         for c in calls)
            figures["now_iso calls"] += calls.count("now_iso")
        if rel != "proc.py":
            figures["processes"] += sum(c in ("subprocess.Popen", "os.killpg", "os.kill", "PopenSpawn")
                                        for c in calls)
        if rel not in ("jsonrpc.py", "acp/protocol.py") and not rel.startswith("agents/"):
            figures["jsonrpc literals"] += sum(isinstance(n, ast.Constant) and n.value == "jsonrpc"
                                               for n in ast.walk(tree))
    figures["hint coverage %"] = round(100 * figures["hinted"] / figures["functions"], 1)
    figures["modules with state literals"] = len(modules_with_literals)
    return figures


if __name__ == "__main__":
    for name, value in measure().items():
        print(f"{name}: {value}")
