"""ACP is spoken in one place: compozy/acp/ (and the reference agent, which is an ACP agent).

A scan of every other module's source text for ACP method names, so a domain module that starts
calling the agent directly (or dispatching on what it sends) fails here.
"""

import re
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "compozy"
SEAM_DIRS = ("acp", "agents")
# Methods of ACP v1 in both directions, and compozy's steering extension.
METHOD = re.compile(r"\b(?:session|fs|terminal)/[a-z_]+\b(?!\.py)"  # not a module path such as session/stop.py
                    r"|_compozy/[a-z_]+|[\"'](?:initialize|authenticate|logout)[\"']")
# The native tool server speaks MCP, whose handshake is also named "initialize": only ACP's namespaced
# methods are looked for there.
MCP_DIR = "mcp"


def outside_the_seam():
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if path.relative_to(PACKAGE_DIR).parts[0] not in SEAM_DIRS:
            yield path


def method_names(text):
    return sorted({match.group(0).strip("\"'") for match in METHOD.finditer(text)})


@pytest.mark.parametrize("path", list(outside_the_seam()), ids=lambda p: str(p.relative_to(PACKAGE_DIR)))
def test_no_acp_method_name_outside_the_seam(path):
    names = method_names(path.read_text(encoding="utf-8"))
    if path.relative_to(PACKAGE_DIR).parts[0] == MCP_DIR:
        names = [name for name in names if name != "initialize"]
    assert names == []


def test_the_scan_sees_every_method_the_seam_speaks():
    """Guard the guard: each method the seam uses is one the pattern recognises."""
    seam = "".join(p.read_text(encoding="utf-8") for p in (PACKAGE_DIR / "acp").glob("*.py"))
    assert {"initialize", "session/new", "session/load", "session/prompt", "session/cancel", "session/update",
            "session/set_config_option", "session/set_mode", "session/set_model", "session/request_permission",
            "fs/read_text_file", "fs/write_text_file", "_compozy/steer"} <= set(method_names(seam))


@pytest.mark.parametrize("text", ['call("session/prompt", {})', "x = 'initialize'", "fs/write_text_file of a path",
                                  'notify("_compozy/steer")', "terminal/create"])
def test_the_scan_flags_method_names(text):
    assert method_names(text)


@pytest.mark.parametrize("text", ["sessions/<id>/meta.json", "initialize the catalog", "/api/sessions/x/prompt",
                                  "compozy/session/repair.py"])
def test_the_scan_leaves_other_text_alone(text):
    assert method_names(text) == []
