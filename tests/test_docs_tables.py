"""The tables of docs/tools.md and docs/architecture.md are checked against the code they describe: the
native tools against the operation table, the layers and the domain's modules against compozy/ and
tests/unit/test_layers.py, the folders of the layout against compozy/'s packages, every source path it names
against the tree, the state tables against compozy/states.py. A module, folder, tool or state machine added
without its row (or a row left behind) fails here."""

import re
from pathlib import Path

from compozy.api import OPERATIONS
from compozy.operation import OTHERS, OTHERS_AND_CHILDREN
from compozy.states import MACHINES
from tests.unit.test_layers import MODULE_IDS, layer_of

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
TOOLS = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
NAME = re.compile(r"`([^`]+)`")
S = "/api/workspaces/<workspace>/sessions/<session_id>"


def table(text, header):
    """The rows (lists of cells) of the markdown table whose header line is `header`."""
    start = text.index(header + "\n")
    rows = []
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def tool_rows():
    return {NAME.findall(tool)[0]: (operation, arguments, rules)
            for tool, operation, arguments, rules in table(TOOLS, "| tool | operation | arguments | rules |")}


def tool_rules(tool):
    """The rules column as the entry's governed rules (Tool.targets, creates_session, deprecated_defaults)."""
    rules = {OTHERS: ["never the caller"], OTHERS_AND_CHILDREN: ["never the caller", "its own spawned children"]}.get(
        tool.targets, [])
    rules += ["creates a session"] if tool.creates_session else []
    return rules + [f"`{name}` omitted is deprecated" for name in tool.deprecated_defaults]


def test_the_tools_table_is_the_operation_tables_tools():
    rows = tool_rows()
    tools = {operation.tool.name: operation for operation in OPERATIONS if operation.tool}
    assert set(rows) == set(tools)
    for name, (spelled, arguments, rules) in rows.items():
        operation = tools[name]
        assert spelled == f"`{operation.method} {operation.rule.replace(S, 'S')}`", name
        written = {re.sub(r"\W", "", argument.split("(")[0]) for argument in arguments.split(", ")}
        assert written == set(operation.tool.arguments(operation)), name
        assert [rule for rule in rules.split("; ") if rule] == tool_rules(operation.tool), name


def documented_modules():
    """(layer number, module name as written) for each module name in the layers table."""
    for layer, modules, _ in table(ARCHITECTURE, "| layer | modules | concern |"):
        for name in NAME.findall(modules):
            yield int(layer.split()[0]), name


def _matches(module, written):
    relative = module.removeprefix("compozy.")
    return relative == written or (written.endswith(".*") and relative.startswith(written[:-1]))


CHECKED = [m for m in MODULE_IDS if not m.startswith(("compozy.agents", "compozy.__main__"))
           and not (ROOT / m.replace(".", "/") / "__init__.py").exists()]  # modules, not packages


def test_every_module_is_in_the_layers_table_in_its_layer():
    written = list(documented_modules())
    problems = []
    for module in CHECKED:
        layers = {layer for layer, name in written if _matches(module, name)}
        if layers != {layer_of(module)}:
            problems.append(f"{module}: layer {layer_of(module)} in tests/unit/test_layers.py, {sorted(layers)} in "
                            f"docs/architecture.md")
    assert not problems, "\n".join(problems)


def test_the_layers_table_names_only_modules_that_exist():
    stale = [name for _, name in documented_modules()
             if name != "web/" and not any(_matches(module, name.split(" ")[0]) for module in CHECKED)]
    assert not stale, f"docs/architecture.md names modules compozy/ does not have: {stale}"


def test_the_domain_table_lists_each_sub_package_exactly():
    for package, modules, _ in table(ARCHITECTURE, "| sub-package | modules | concern |"):
        package = NAME.findall(package)[0]
        actual = {m.rpartition(".")[2] for m in MODULE_IDS if m.startswith(f"compozy.{package}.")}
        assert set(NAME.findall(modules)) == actual, package


def test_the_state_tables_row_is_each_machine_with_its_states_and_changer():
    rows = {NAME.findall(machine)[0]: (states, changer)
            for machine, states, changer in table(ARCHITECTURE, "| machine | states | changed by |")}
    machines = {machine.name or "session": machine for machine in MACHINES}
    assert set(rows) == set(machines)
    sources = "\n".join(path.read_text(encoding="utf-8") for path in (ROOT / "compozy").rglob("*.py"))
    for name, (states, changer) in rows.items():
        assert re.sub(r" \([^)]*\)", "", states).split(", ") == [s.value for s in machines[name].states], name
        for function in NAME.findall(changer):
            assert f"def {function.rpartition('.')[2]}(" in sources, f"{name}: {function} is not in compozy/"


def test_the_layout_table_has_a_row_for_each_folder_and_names_only_modules_that_exist():
    rows = {NAME.findall(folder)[0]: what for folder, what in table(ARCHITECTURE, "| folder | what |")}
    folders = {f"compozy/{path.name}/" for path in (ROOT / "compozy").iterdir()
               if path.is_dir() and ((path / "__init__.py").exists() or path.name == "web")}
    assert set(rows) == {"compozy/"} | folders
    top = {path.stem for path in (ROOT / "compozy").glob("*.py")}
    assert set(NAME.findall(rows["compozy/"])) <= top
    sub_packages = {f"{path.parent.name}/" for path in (ROOT / "compozy" / "session").glob("*/__init__.py")}
    assert set(NAME.findall(rows["compozy/session/"])) == sub_packages


def test_every_source_path_the_architecture_names_exists():
    named = set(re.findall(r"`([\w/]+\.py)`", ARCHITECTURE))
    assert named, "the walk sees the paths"
    missing = sorted(path for path in named if not (ROOT / "compozy" / path).exists() and not (ROOT / path).exists())
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"
