"""`compozy agent add ID`: agents from a registry in the ACP registry's format (tests/registry/registry.json,
our own entries naming the reference agent), written into config.toml and installed, then listed and doctored
by a real daemon. Archives and npm packages are served by servers on 127.0.0.1 the tests start."""

import base64
import hashlib
import http.server
import io
import json
import shutil
import sys
import tarfile
import threading
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.harness.cli import cli_json, run_cli
from tests.harness.daemon import DaemonProcess

FIXTURE = Path(__file__).resolve().parent / "registry" / "registry.json"
AGENT_SCRIPT = f'#!/bin/sh\nexec "{sys.executable}" -m compozy.agents.reference "$@"\n'
BEFORE = ('# my own settings, kept as written\ndefault_agent = "general"   # the built-in one\n\n'
          '[permissions]\nmode = "approve-all"\n')


class Files(http.server.ThreadingHTTPServer):
    """Serves `routes` (path -> bytes) on 127.0.0.1 and records every path asked for."""

    def __init__(self, routes):
        self.routes, self.asked = routes, []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                owner.asked.append(self.path)
                body = owner.routes.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


def tarball(files, mode=0o755):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            bundle.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def releases():
    server = Files({"/v1.0.0/reference-acp.tar.gz": tarball({"reference-acp": AGENT_SCRIPT}),
                    "/v2.1.0/reference-acp.tar.gz": tarball({"reference-acp": AGENT_SCRIPT})})
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def registry(tmp_path, releases):
    path = tmp_path / "registry.json"
    path.write_text(FIXTURE.read_text().replace("http://127.0.0.1:0", releases.base))
    return path


def config_of(home):
    return tomllib.loads((home / "config.toml").read_text())


def write_before(home):
    (home / "config.toml").write_text(BEFORE)
    (home / "config.toml").chmod(0o600)


def test_add_writes_a_pinned_provider_after_what_the_file_held(home, registry):
    write_before(home)
    added = cli_json(home, "agent", "add", "compozy-reference", "--registry", str(registry))
    text = (home / "config.toml").read_text()
    assert text.startswith(BEFORE)
    provider = config_of(home)["providers"]["compozy-reference"]
    assert provider["command"] == ["npx", "-y", "compozy-reference-acp@1.0.0", "--acp"]
    assert config_of(home)["agents"]["compozy-reference"] == {"provider": "compozy-reference"}
    assert added["version"] == "1.0.0" and added["distribution"] == "npx" and added["installed"] is False
    assert run_cli(home, "config", "check").returncode == 0
    # An entry that pins its own version keeps it; its env is the provider's.
    cli_json(home, "agent", "add", "reference-login", "--registry", str(registry), "--name", "login")
    login = config_of(home)["providers"]["login"]
    assert login["command"] == ["npx", "-y", "compozy-reference-acp@2.1.0"]
    assert login["env"]["COMPOZY_REFERENCE_REQUIRE_AUTH"] == "1"


def test_an_existing_name_is_refused_and_force_replaces_only_its_tables(home, registry):
    write_before(home)
    hand_written = ('\n[providers.compozy-reference]\ncommand = ["old-agent"]\n\n'
                    '[[providers.compozy-reference.launch_aliases]]\nmatch = { model = "m" }\nargs = ["--m"]\n\n'
                    '[agents.compozy-reference]\nprovider = "compozy-reference"\n\n[session.stop]\n'
                    'cooperative_grace = "5s"  # mine too\n')
    (home / "config.toml").write_text(BEFORE + hand_written)
    refused = run_cli(home, "agent", "add", "compozy-reference", "--registry", str(registry))
    assert refused.returncode == 1 and "Error: agent_conflict:" in refused.stderr
    assert (home / "config.toml").read_text() == BEFORE + hand_written
    assert run_cli(home, "agent", "add", "compozy-reference", "--registry", str(registry), "--force").returncode == 0
    text = (home / "config.toml").read_text()
    assert text.count("[providers.compozy-reference]") == 1 and "old-agent" not in text and "launch_aliases" not in text
    assert 'cooperative_grace = "5s"  # mine too' in text and text.startswith(BEFORE)
    assert config_of(home)["session"]["stop"]["cooperative_grace"] == "5s"
    # A second forced add replaces its own block, comment line included.
    assert run_cli(home, "agent", "add", "compozy-reference", "--registry", str(registry), "--force").returncode == 0
    assert (home / "config.toml").read_text().count("Added by `compozy agent add compozy-reference`") == 1


@pytest.mark.parametrize("args, code, words", [
    (("compozy-referenc",), "registry_agent_not_found", "did you mean compozy-reference"),
    (("reference-binary",), "invalid_request", "add --install"),
    (("compozy-reference", "--distribution", "uvx"), "distribution_unavailable", "it offers npx"),
    (("x", "--registry", "http://127.0.0.1:9/registry.json"), "registry_unavailable", "cannot reach the registry"),
    (("x", "--registry", "/nonexistent/registry.json"), "registry_unavailable", "No such file"),
    (("x", "--registry", "NOTJSON"), "registry_invalid", "is not JSON"),
    (("x", "--registry", "NODISTRIBUTION"), "registry_invalid", "distribution names none of npx, uvx, binary"),
    (("compozy-reference", "--name", "bad name"), "invalid_request", "use letters, digits"),
])
def test_refusals_have_stable_codes_and_change_nothing(home, registry, tmp_path, args, code, words):
    (tmp_path / "bad.txt").write_text("not json")
    (tmp_path / "broken.json").write_text(json.dumps({"agents": [{"id": "x", "name": "X", "version": "1.0.0",
                                                                  "distribution": {"pip": {}}}]}))
    args = [{"NOTJSON": str(tmp_path / "bad.txt"), "NODISTRIBUTION": str(tmp_path / "broken.json")}.get(a, a)
            for a in args]
    if "--registry" not in args:
        args += ["--registry", str(registry)]
    refused = run_cli(home, "agent", "add", *args)
    assert refused.returncode == 1, refused.stdout
    assert refused.stderr.startswith(f"Error: {code}:") and words in refused.stderr, refused.stderr
    assert not (home / "config.toml").exists()


def test_a_binary_is_downloaded_only_from_the_named_url_and_the_daemon_runs_it(home, registry, releases, workspace):
    added = cli_json(home, "agent", "add", "reference-binary", "--registry", str(registry), "--install")
    program = home / "agents" / "reference-binary" / "1.0.0" / "reference-acp"
    assert added["command"] == [str(program), "acp"] and added["installed"] is True
    assert releases.asked == ["/v1.0.0/reference-acp.tar.gz"]
    assert config_of(home)["providers"]["reference-binary"]["env"] == {"COMPOZY_REFERENCE_CLOSE": "1"}
    daemon = DaemonProcess(home).start()
    try:
        listed = {a["name"]: a for a in cli_json(home, "agent", "list")["agents"]}
        assert listed["reference-binary"]["installed"] is True
        report = cli_json(home, "agent", "doctor", "reference-binary")["doctor"]
        assert report["ok"] and report["stopped"] and [s["step"] for s in report["steps"]] == [
            "launch", "authenticate", "session/new", "session/close"]
        text = run_cli(home, "agent", "doctor", "reference-binary").stdout
        assert "reference-binary (provider reference-binary): ok" in text and "stopped       verified" in text
        sid = cli_json(home, "session", "new", "--cwd", str(workspace), "--agent", "reference-binary")["session"]["id"]
        answered = run_cli(home, "session", "prompt", sid, "hi from the registry")
        assert answered.returncode == 0 and "echo: hi from the registry" in answered.stdout, answered.stderr
        assert cli_json(home, "session", "stop", sid, "--wait")["verified"] is True
    finally:
        daemon.stop()


def test_the_installed_agents_auth_methods_are_written_and_the_doctor_names_the_login(home, registry):
    added = cli_json(home, "agent", "add", "reference-login", "--registry", str(registry), "--install",
                     "--distribution", "binary")
    assert [(m["id"], m["type"]) for m in added["auth_methods"]] == [("reference-key", "env_var"),
                                                                    ("reference-terminal", "terminal")]
    text = (home / "config.toml").read_text()
    assert "#   reference-key (env_var, needs REFERENCE_API_KEY): Use REFERENCE_API_KEY" in text
    assert '# auth_method = "reference-key"' in text
    refused = run_cli(home, "agent", "add", "reference-login", "--registry", str(registry), "--install",
                      "--distribution", "binary", "--force", "--auth-method", "nope")
    assert refused.returncode == 1 and "not one the agent declares: reference-key, reference-terminal" in refused.stderr
    daemon = DaemonProcess(home).start()
    try:
        doctor = run_cli(home, "agent", "doctor", "reference-login", "-o", "json")
        assert doctor.returncode == 1
        error = json.loads(doctor.stdout)["doctor"]["error"]
        assert error["code"] == "provider_auth_failure"
        assert error["next_command"] == "compozy agent login reference-login --method reference-terminal"
    finally:
        daemon.stop()


def npm_package(name, version, files):
    """(packument, tarball) of a package an npm client installs from a registry on loopback."""
    manifest = {"name": name, "version": version, "bin": {name: "bin/agent.sh"}}
    data = tarball({"package/package.json": json.dumps(manifest), **{f"package/{k}": v for k, v in files.items()}})
    return manifest, data


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_npx_agents_install_with_npm_and_are_then_installed(home, registry, tmp_path):
    manifest, data = npm_package("compozy-reference-acp", "1.0.0", {"bin/agent.sh": AGENT_SCRIPT})
    npm = Files({})
    tarball_path = "/compozy-reference-acp/-/compozy-reference-acp-1.0.0.tgz"
    npm.routes = {"/compozy-reference-acp": json.dumps({
        "name": "compozy-reference-acp", "dist-tags": {"latest": "1.0.0"},
        "versions": {"1.0.0": {**manifest, "dist": {"tarball": npm.base + tarball_path,
                                                    "shasum": hashlib.sha1(data).hexdigest()}}}}).encode(),
                  tarball_path: data}
    env = {"npm_config_registry": npm.base + "/", "npm_config_cache": str(tmp_path / "npm-cache")}
    try:
        write_before(home)
        before = run_cli(home, "agent", "add", "compozy-reference", "--registry", str(registry), "-o", "json",
                         extra_env=env)
        assert json.loads(before.stdout)["installed"] is False
        added = run_cli(home, "agent", "add", "compozy-reference", "--registry", str(registry), "--install",
                        "--force", "-o", "json", extra_env=env, timeout=300)
        assert added.returncode == 0, added.stderr
        document = json.loads(added.stdout)
        program = home / "agents" / "compozy-reference" / "node_modules" / ".bin" / "compozy-reference-acp"
        assert document["command"] == [str(program), "--acp"] and document["installed"] is True
        assert "/compozy-reference-acp" in npm.asked and tarball_path in npm.asked
    finally:
        npm.shutdown()
        npm.server_close()
    daemon = DaemonProcess(home).start()
    try:
        report = cli_json(home, "agent", "doctor", "compozy-reference")["doctor"]
        assert report["ok"] is True and report["stopped"] is True, report
    finally:
        daemon.stop()


def wheel(folder, name, version, module_text, script):
    """A pure-Python wheel made by hand: one module and one console script."""
    package, dist = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}"
    files = {f"{package}/__init__.py": module_text,
             f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n",
             f"{dist}.dist-info/entry_points.txt": f"[console_scripts]\n{script} = {package}:main\n"}
    def digest(text):
        return base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record = [f"{path},sha256={digest(text)},{len(text.encode())}" for path, text in files.items()]
    record.append(f"{dist}.dist-info/RECORD,,")
    path = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as bundle:
        for name_in, text in {**files, f"{dist}.dist-info/RECORD": "\n".join(record) + "\n"}.items():
            bundle.writestr(name_in, text)
    return path


def test_uvx_agents_install_into_a_virtual_environment_with_pip(home, registry, tmp_path):
    links = tmp_path / "wheels"
    links.mkdir()
    wheel(links, "compozy-reference-acp", "1.0.0", "import os\nimport sys\n\n\ndef main():\n"
          f"    os.execv({sys.executable!r}, [{sys.executable!r}, '-m', 'compozy.agents.reference', *sys.argv[1:]])\n",
          "compozy-reference-acp")
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links), "UV_OFFLINE": "1", "UV_FIND_LINKS": str(links)}
    added = run_cli(home, "agent", "add", "reference-python", "--registry", str(registry), "--install", "-o", "json",
                    extra_env=offline, timeout=300)
    assert added.returncode == 0, added.stderr
    document = json.loads(added.stdout)
    program = home / "agents" / "reference-python" / "venv" / "bin" / "compozy-reference-acp"
    assert document["command"] == [str(program)] and document["installed"] is True
    assert config_of(home)["providers"]["reference-python"]["env"] == {"COMPOZY_REFERENCE_RESUME": "1"}
    daemon = DaemonProcess(home).start()
    try:
        report = cli_json(home, "agent", "doctor", "reference-python")["doctor"]
        assert report["ok"] is True and report["capabilities"]["sessionCapabilities"] == {"resume": {}}, report
    finally:
        daemon.stop()


def test_a_folder_of_entries_and_a_single_agent_json_are_registries_too(home, tmp_path):
    entries = json.loads(FIXTURE.read_text())["agents"]
    folder = tmp_path / "registry-repo"
    for entry in entries:
        (folder / entry["id"]).mkdir(parents=True)
        (folder / entry["id"] / "agent.json").write_text(json.dumps(entry))
    (folder / "_not_yet_unsupported" / "broken").mkdir(parents=True)  # skipped, as the registry's own build does
    (folder / "_not_yet_unsupported" / "broken" / "agent.json").write_text("{}")
    added = cli_json(home, "agent", "add", "reference-login", "--registry", str(folder))
    assert added["command"] == ["npx", "-y", "compozy-reference-acp@2.1.0"]
    single = folder / "compozy-reference" / "agent.json"
    assert cli_json(home, "agent", "add", "compozy-reference", "--registry", str(single))["version"] == "1.0.0"
    assert set(config_of(home)["agents"]) == {"reference-login", "compozy-reference"}
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = run_cli(home, "agent", "add", "x", "--registry", str(empty))
    assert refused.returncode == 1 and "Error: registry_invalid:" in refused.stderr
