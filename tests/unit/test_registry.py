"""The registry's pure parts: pinning, choosing a distribution, rewriting config.toml's text, and telling
whether a command is really installed (real files in a temporary folder, a real npm cache layout)."""

import json
import os
import tomllib

import pytest

from compozy.errors import CompozyError
from compozy.registry import catalog, configfile, install, installed

ENTRY = {"id": "both", "name": "Both", "version": "1.2.3",
         "distribution": {"npx": {"package": "@scope/agent", "args": ["--acp"]},
                          "binary": {catalog.platform_key(): {"archive": "https://example.invalid/a.tar.gz",
                                                              "cmd": "./agent"}}}}


@pytest.mark.parametrize("kind, package, pinned", [
    ("npx", "@scope/agent", "@scope/agent@1.2.3"), ("npx", "@scope/agent@0.9.0", "@scope/agent@0.9.0"),
    ("npx", "plain", "plain@1.2.3"), ("uvx", "tool", "tool@1.2.3"), ("uvx", "tool==2.0", "tool==2.0"),
])
def test_a_package_is_pinned_to_the_entrys_version_unless_it_names_one(kind, package, pinned):
    assert catalog.pinned(kind, package, "1.2.3") == pinned


def test_package_names_drop_versions_and_extras():
    assert install.package_name("npx", "@scope/agent@1.0.0") == "@scope/agent"
    assert install.package_name("uvx", "hermes-agent[acp]==1.0") == "hermes-agent"


def test_npx_comes_first_and_a_binary_needs_install():
    assert catalog.choose(ENTRY, install=False).package == "@scope/agent@1.2.3"
    assert catalog.choose(ENTRY, install=True, wanted="binary").cmd == "./agent"
    only_binary = {**ENTRY, "distribution": {"binary": ENTRY["distribution"]["binary"]}}
    with pytest.raises(CompozyError) as refused:
        catalog.choose(only_binary, install=False)
    assert refused.value.code == "invalid_request"
    elsewhere = {**ENTRY, "distribution": {"binary": {"plan9-mips": {"archive": "https://x.invalid/a", "cmd": "a"}}}}
    with pytest.raises(CompozyError) as refused:
        catalog.choose(elsewhere, install=True)
    assert refused.value.code == "distribution_unavailable"


def test_force_removes_exactly_the_named_tables_and_an_earlier_adds_comment():
    text = ('# top\n[providers.keep]\ncommand = ["k"]\n\n# Added by `compozy agent add x`: X\n[providers.x]\n'
            'command = ["x"]\n\n[[providers.x.launch_aliases]]\nmatch = {model = "m"}\nargs = []\n\n'
            '[agents.x]\nprovider = "x"\n# mine\n[session.stop]\ncooperative_grace = "5s"\n')
    kept = configfile.without_tables(text, "x")
    document = tomllib.loads(kept)
    assert set(document["providers"]) == {"keep"} and "agents" not in document
    assert "# top" in kept and "Added by" not in kept and document["session"]["stop"]["cooperative_grace"] == "5s"


def test_values_are_written_as_toml_that_reads_back():
    values = {"command": ["a b", 'quote"d'], "env": {"K": "v", "odd key": "x"}, "handshake_timeout": "1m"}
    block = configfile.render("n", values, {"provider": "n"}, ["a comment"])
    assert tomllib.loads(block)["providers"]["n"] == values


def executable(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def test_a_program_is_installed_only_when_it_and_its_interpreter_run(tmp_path):
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    assert installed.state(["compozy-no-such-program"], env)["detail"] == "compozy-no-such-program is not on PATH"
    script = executable(tmp_path / "agent", "#!/usr/bin/env compozy-no-such-interpreter\n")
    assert installed.state([script], env) == {
        "installed": False, "program": script,
        "detail": f"{script} needs compozy-no-such-interpreter, which is not on PATH"}
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\n")
    assert installed.state([str(plain)], env)["installed"] is False
    assert installed.state([executable(tmp_path / "ok", "#!/bin/sh\nexit 0\n")], env)["installed"] is True


def test_npx_is_installed_when_npms_cache_holds_the_pinned_version(tmp_path):
    executable(tmp_path / "npx", "#!/bin/sh\n")
    executable(tmp_path / "uvx", "#!/bin/sh\n")
    env = {"PATH": str(tmp_path), "npm_config_cache": str(tmp_path / "cache")}
    command = ["npx", "-y", "@scope/agent@1.2.3", "--acp"]
    assert installed.state(command, env)["installed"] is False
    manifest = tmp_path / "cache" / "_npx" / "0a1b2c" / "node_modules" / "@scope" / "agent" / "package.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"name": "@scope/agent", "version": "1.2.0"}))
    assert installed.state(command, env)["installed"] is False
    manifest.write_text(json.dumps({"name": "@scope/agent", "version": "1.2.3"}))
    assert installed.state(command, env)["installed"] is True
    assert installed.state(["uvx", "tool==1"], env)["installed"] is False


def test_a_node_package_needing_a_newer_node_than_the_one_on_path_is_not_installed(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    executable(bin_dir / "node", "#!/bin/sh\necho v20.20.2\n")
    package = tmp_path / "prefix" / "node_modules" / "@scope" / "agent"
    (package / "dist").mkdir(parents=True)
    program = executable(package / "dist" / "index.js", "#!/usr/bin/env node\n")
    link = tmp_path / "prefix" / "node_modules" / ".bin" / "agent"
    link.parent.mkdir()
    link.symlink_to(program)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    (package / "package.json").write_text(json.dumps({"name": "@scope/agent", "engines": {"node": ">=22"}}))
    assert installed.state([str(link)], env) == {
        "installed": False, "program": str(link),
        "detail": f"{link} needs Node.js >=22, and {bin_dir / 'node'} is v20.20.2"}
    (package / "package.json").write_text(json.dumps({"name": "@scope/agent", "engines": {"node": ">=20.0.0"}}))
    assert installed.state([str(link)], env)["installed"] is True
