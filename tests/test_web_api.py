"""The page reaches the API only through web/api.js, by operation name, and every name it uses is in the
operation table (compozy/api.py), whose methods and rules the daemon serves to it as operations.js."""

import json
import re
from pathlib import Path

from compozy.api import OPERATIONS, OPS
from tests.test_web import fetch

WEB = Path(__file__).resolve().parents[1] / "compozy" / "web"
OPERATION_NAME = re.compile(r'"([a-z_]+(?:\.[a-z_]+)+)"')  # any area: a misspelt one ("serch.query") is caught too
# Where the page names an operation: the first argument of call, act or address, or the first item of a bulk
# action's request.
NAMING = re.compile(r'\b(?:call|act|address)\(([^,)]*)|request: \([^)]*\) => \[([^,\]]*)')
HAND_PATH = re.compile(r"[\"'`]/api/")
RAW_REQUEST = re.compile(r'import \{[^}]*\bapi\b[^}]*\} from "\./dom\.js"')  # dom.js's fetch of a path


def names_in(script):
    """The operation names a script gives call, act, address or a bulk action."""
    return [name for place in NAMING.findall(script) for name in OPERATION_NAME.findall("".join(place))]


def page_operations():
    """Every operation name the page's scripts spell, with where."""
    return {(name, path.name) for path in sorted(WEB.glob("*.js")) for name in names_in(path.read_text(encoding="utf-8"))}


def test_every_operation_the_page_names_is_in_the_table():
    named = page_operations()
    assert len({name for name, _ in named}) >= 20  # the walk sees the page's calls
    unknown = sorted(f"{name} ({where})" for name, where in named if name not in OPS)
    assert not unknown, f"the page names operations the table lacks: {unknown}"


def test_the_check_catches_a_name_the_table_lacks():
    script = ('call("session.archive", scope); this.act(running ? "session.stop" : "session.archiv", {}); '
              'call("serch.query", { q })')
    assert names_in(script) == ["session.archive", "session.stop", "session.archiv", "serch.query"]
    assert "session.archiv" not in OPS and "serch.query" not in OPS


def test_the_walk_sees_every_area_the_page_calls():
    areas = {name.split(".")[0] for name, _ in page_operations()}
    assert {"search", "fleet", "usage", "attention", "settings"} <= areas


def test_the_page_spells_no_api_path_by_hand():
    spelled = [path.name for path in WEB.glob("*.js") if HAND_PATH.search(path.read_text(encoding="utf-8"))]
    assert not spelled, f"API paths spelled by hand in {spelled}; call the operation by name through api.js"
    raw = [path.name for path in WEB.glob("*.js") if path.name != "api.js"
           and RAW_REQUEST.search(path.read_text(encoding="utf-8"))]
    assert not raw, f"{raw} request paths through dom.js's api(); call the operation by name through api.js"


def test_the_daemon_serves_the_table_to_the_page(daemon):
    for url in (daemon.http_url, daemon.socket_url):
        headers = daemon.auth_headers if url.startswith("http:") else {}
        status, _, body = fetch(url, "/assets/operations.js", headers)
        assert status == 200
        module = body.decode()
        served = json.loads(module[module.index("{"):module.rindex("}") + 1])
        assert served == {op.name: {"method": op.method, "rule": op.rule} for op in OPERATIONS}

