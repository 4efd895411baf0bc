"""Unit tests for compozy.config: defaults, every SETTINGS row, durations, unknown keys, types,
providers/agents/fallback_chain validation, and messages that name the file, the key and the problem."""

import pytest

from compozy.config import (SETTINGS_BY_NAME, Agent, ConfigError, Provider, Route, from_document, load, parse_duration,
                            reference_command)
from compozy.config_settings import SETTINGS
from compozy.errors import CompozyError

INTERFACE_SAMPLE = '''
[providers.reference]
command = ["python3", "-m", "compozy.agents.reference"]
env = {}

[agents.general]
provider = "reference"
model = "echo-1"
reasoning_effort = "medium"
speed = "normal"
fallback_chain = [
  { provider = "reference", model = "echo-1" },
]

[permissions]
mode = "approve-all"

[session.busy_input]
default_mode = "steer"
queue_cap = 10

[session.supervision]
quiet_after = "30m"
stop_grace = "10m"
idle_release_after = "30m"
prompt_deadline = "0"

[session.stop]
cooperative_grace = "10s"

[session.derive]
max_replay_bytes = 131072
max_message_bytes = 16384

[session.messaging]
reply_watch_ttl = "24h"

[roles.auto_title]
enabled = false
agent = "general"
'''


def nested(name, value):
    """"a.b.c", v -> {"a": {"b": {"c": v}}}"""
    document = value
    for part in reversed(name.split(".")):
        document = {part: document}
    return document


def problems_of(document, path="/etc/compozy/config.toml"):
    with pytest.raises(ConfigError) as caught:
        from_document(document, path)
    lines = str(caught.value).splitlines()
    assert lines and all(line.startswith(f"{path}: ") for line in lines), lines
    return lines


def assert_problem(document, key, words, path="/x/config.toml"):
    lines = problems_of(document, path)
    matching = [line for line in lines if line.startswith(f"{path}: {key}: ")]
    assert matching, (key, lines)
    assert any(words in line for line in matching), (words, matching)


# -- defaults -----------------------------------------------------------------------------------------


def test_empty_document_gives_every_default():
    config = from_document({})
    for setting in SETTINGS:
        expected = parse_duration(setting.default) if setting.kind == "duration" else setting.default
        assert config[setting.name] == expected, setting.name


def test_settings_table_rows_are_well_formed():
    names = [s.name for s in SETTINGS]
    assert len(names) == len(set(names))
    assert SETTINGS_BY_NAME == {s.name: s for s in SETTINGS}
    for setting in SETTINGS:
        assert setting.kind in ("duration", "int", "str", "bool", "choice"), setting.name
        assert setting.help and setting.help.strip(), setting.name
        assert from_document(nested(setting.name, setting.default))[setting.name] is not None
        if setting.kind == "choice":
            assert setting.default in setting.choices
        if setting.kind == "int":
            assert setting.default >= setting.minimum


def test_interface_sample_config_parses_to_the_defaults():
    import tomllib
    document = tomllib.loads(INTERFACE_SAMPLE)
    config = from_document(document, "config.toml")
    defaults = from_document({})
    for name in ("permissions.mode", "session.busy_input.default_mode", "session.busy_input.queue_cap",
                 "session.supervision.quiet_after", "session.supervision.stop_grace",
                 "session.supervision.idle_release_after", "session.supervision.prompt_deadline",
                 "session.stop.cooperative_grace", "session.derive.max_replay_bytes",
                 "session.derive.max_message_bytes", "session.messaging.reply_watch_ttl",
                 "roles.auto_title.enabled", "roles.auto_title.agent"):
        assert name in SETTINGS_BY_NAME
        assert config[name] == defaults[name], name
    general = config.agent("general")
    assert general.provider == "reference" and general.model == "echo-1"
    assert general.fallback_chain == (Route("reference", "echo-1"),)


def test_builtin_general_agent_on_reference_provider():
    config = from_document({})
    general = config.agent("general")
    assert isinstance(general, Agent)
    assert general.provider == "reference"
    provider = config.provider("reference")
    assert isinstance(provider, Provider)
    assert provider.command == tuple(reference_command())
    assert "compozy.agents.reference" in provider.command or "reference" in provider.command
    assert config.provider("nope") is None


def test_unknown_agent_is_agent_not_found():
    with pytest.raises(CompozyError) as caught:
        from_document({}).agent("ghost")
    assert caught.value.code == "agent_not_found"


def test_configured_agents_and_providers_join_the_builtins():
    config = from_document({
        "providers": {"other": {"command": ["other-agent", "--acp"], "env": {"MODE": "x"}}},
        "agents": {"coder": {"provider": "other", "model": "m1",
                             "fallback_chain": [{"provider": "reference", "model": "echo-2"}]}},
    })
    assert config.provider("other") == Provider("other", ("other-agent", "--acp"), {"MODE": "x"})
    assert config.agent("coder").defaults() == {"provider": "other", "model": "m1"}
    assert config.agent("coder").fallback_chain == (Route("reference", "echo-2"),)
    assert config.agent("general").provider == "reference"


# -- every SETTINGS row: one good value read back, bad values named --------------------------------------


GOOD = {"duration": ("45s", 45.0), "int": None, "bool": (True, True), "str": ("writer", "writer")}
BAD = {"duration": ["45", "forty", 45, "1d", "-1s", "10 s", ""], "int": ["10", 1.5, True, None],
       "bool": ["yes", 1, "true"], "str": [5, True, ["a"]], "choice": ["nope", 1, ""]}


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_each_setting_accepts_a_good_value(setting):
    if setting.kind == "choice":
        for choice in setting.choices:
            assert from_document(nested(setting.name, choice))[setting.name] == choice
        return
    raw, expected = GOOD[setting.kind] or (setting.minimum + 7, setting.minimum + 7)
    names = {"providers": {"writer": {"command": ["w"]}}, "agents": {"writer": {"provider": "reference"}}}
    assert from_document({**nested(setting.name, raw), **names})[setting.name] == expected


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.name)
def test_each_setting_refuses_bad_values(setting):
    bad = list(BAD[setting.kind])
    if setting.kind == "int":
        bad.append(setting.minimum - 1)
    for value in bad:
        if value is None:
            continue  # TOML has no null
        lines = problems_of(nested(setting.name, value), "/home/u/.compozy/config.toml")
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"/home/u/.compozy/config.toml: {setting.name}: expected"), lines


# -- durations ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, seconds", [("500ms", 0.5), ("10s", 10.0), ("30m", 1800.0), ("24h", 86400.0),
                                           ("0", 0.0), ("1ms", 0.001), ("2h", 7200.0)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "10", "1d", "-5s", "5 s", "s", "ms", "10sec", "1h30m", " 10s", 10, 0, None,
                                  "0.", "zero"])
def test_parse_duration_refuses(text):
    with pytest.raises(ValueError) as caught:
        parse_duration(text)
    assert "500ms" in str(caught.value)  # the message shows the accepted forms


def test_zero_duration_disables():
    config = from_document({"session": {"supervision": {"quiet_after": "0", "idle_release_after": "0"}}})
    assert config["session.supervision.quiet_after"] == 0
    assert config["session.supervision.idle_release_after"] == 0


# -- unknown keys at every level ----------------------------------------------------------------------


@pytest.mark.parametrize("document, key", [
    ({"bogus": 1}, "bogus"),
    ({"bogus": {"deeper": 1}}, "bogus.deeper"),
    ({"session": {"bogus": 1}}, "session.bogus"),
    ({"session": {"supervision": {"quite_after": "30m"}}}, "session.supervision.quite_after"),
    ({"session": {"supervision": {"quiet_after": {"x": "1s"}}}}, "session.supervision.quiet_after.x"),
    ({"permissions": {"mode": "approve-all", "level": 3}}, "permissions.level"),
    ({"roles": {"auto_title": {"enabled": True, "temperature": "x"}}}, "roles.auto_title.temperature"),
    ({"roles": {"reviewer": {"enabled": True}}}, "roles.reviewer.enabled"),
    ({"providers": {"p": {"command": ["a"], "cwd": "/"}}}, "providers.p.cwd"),
    ({"agents": {"a": {"provider": "reference", "temperature": "hot"}}}, "agents.a.temperature"),
    ({"agents": {"a": {"provider": "reference", "fallback_chain": [{"provider": "reference", "region": "eu"}]}}},
     "agents.a.fallback_chain[1].region"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_unknown_keys_refused_at_every_level(document, key):
    assert_problem(document, key, "unknown key")


def test_every_problem_is_reported_at_once():
    lines = problems_of({"bogus": 1, "session": {"busy_input": {"queue_cap": 0}, "stop": {"cooperative_grace": "x"}}})
    keys = {line.split(": ")[1] for line in lines}
    assert keys == {"bogus", "session.busy_input.queue_cap", "session.stop.cooperative_grace"}


# -- bad types ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, value, words", [
    ("session.busy_input.queue_cap", "10", "whole number"),
    ("session.busy_input.queue_cap", True, "whole number"),
    ("session.busy_input.queue_cap", 0, ">= 1"),
    ("session.derive.max_replay_bytes", 100, ">= 4096"),
    ("session.supervision.quiet_after", 30, "duration"),
    ("session.stop.cooperative_grace", "soon", "duration"),
    ("roles.auto_title.enabled", "false", "true or false"),
    ("roles.auto_title.agent", 7, "string"),
    ("permissions.mode", "approve-some", "approve-all"),
    ("session.busy_input.default_mode", "shout", "steer"),
])
def test_bad_types_named(name, value, words):
    assert_problem(nested(name, value), name, words)


# -- providers, agents, fallback_chain ----------------------------------------------------------------


@pytest.mark.parametrize("document, key, words", [
    ({"providers": 3}, "providers", "expected a table"),
    ({"providers": {"p": "python3"}}, "providers.p", "expected a table"),
    ({"providers": {"bad name!": {"command": ["a"]}}}, "providers.bad name!", "letters, digits"),
    ({"providers": {"p": {}}}, "providers.p.command", "non-empty list of strings"),
    ({"providers": {"p": {"command": []}}}, "providers.p.command", "non-empty list of strings"),
    ({"providers": {"p": {"command": "python3 -m x"}}}, "providers.p.command", "non-empty list of strings"),
    ({"providers": {"p": {"command": ["python3", 3]}}}, "providers.p.command", "non-empty list of strings"),
    ({"providers": {"p": {"command": ["python3", ""]}}}, "providers.p.command", "non-empty list of strings"),
    ({"providers": {"p": {"command": ["a"], "env": ["X=1"]}}}, "providers.p.env", "table of strings"),
    ({"providers": {"p": {"command": ["a"], "env": {"X": 1}}}}, "providers.p.env", "table of strings"),
    ({"agents": 1}, "agents", "expected a table"),
    ({"agents": {"a": "reference"}}, "agents.a", "expected a table"),
    ({"agents": {"a": {}}}, "agents.a.provider", "provider name"),
    ({"agents": {"a": {"provider": 5}}}, "agents.a.provider", "provider name"),
    ({"agents": {"a": {"provider": "ghost"}}}, "agents.a", "unknown provider 'ghost'"),
    ({"agents": {"a": {"provider": "reference", "model": 1}}}, "agents.a.model", "expected a string"),
    ({"agents": {"a": {"provider": "reference", "speed": ["fast"]}}}, "agents.a.speed", "expected a string"),
    ({"agents": {"a": {"provider": "reference", "fallback_chain": {"provider": "reference"}}}},
     "agents.a.fallback_chain", "expected a list"),
    ({"agents": {"a": {"provider": "reference", "fallback_chain": ["reference"]}}},
     "agents.a.fallback_chain[1]", "provider"),
    ({"agents": {"a": {"provider": "reference", "fallback_chain": [{"model": "echo-1"}]}}},
     "agents.a.fallback_chain[1]", "provider"),
    ({"agents": {"a": {"provider": "reference",
                       "fallback_chain": [{"provider": "reference"}, {"provider": "ghost"}]}}},
     "agents.a", "unknown provider 'ghost'"),
    ({"agents": {"general": {"provider": "missing"}}}, "agents.general", "unknown provider 'missing'"),
])
def test_provider_and_agent_validation(document, key, words):
    assert_problem(document, key, words)


# -- load(): the file on disk -------------------------------------------------------------------------


def test_load_missing_file_gives_defaults(tmp_path):
    config = load(tmp_path / "config.toml")
    assert config["session.busy_input.queue_cap"] == SETTINGS_BY_NAME["session.busy_input.queue_cap"].default
    assert config.agent("general").provider == "reference"


def test_load_message_names_file_key_and_problem(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[session.supervision]\nquiet_after = "half an hour"\n')
    with pytest.raises(ConfigError) as caught:
        load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: session.supervision.quiet_after: ")
    assert "duration" in message and "half an hour" in message


def test_load_unparsable_toml_names_the_file(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[session\n")
    with pytest.raises(ConfigError) as caught:
        load(path)
    assert str(path) in str(caught.value)


def test_load_reads_a_valid_file(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[session.stop]\ncooperative_grace = "500ms"\n[permissions]\nmode = "deny-all"\n')
    config = load(path)
    assert config["session.stop.cooperative_grace"] == 0.5
    assert config["permissions.mode"] == "deny-all"
    assert config.path == str(path)


# -- [[hooks]] and [roles.auto_title] ------------------------------------------------------------------


def test_hooks_parse_with_a_shell_string_or_an_argv_and_a_default_timeout():
    config = from_document({"hooks": [{"event": "turn.end", "command": "echo hi", "timeout": "5s"},
                                      {"event": "session.post_stop", "command": ["notify", "--stopped"]}]})
    assert [(h.event, h.command, h.timeout) for h in config.hooks] == [
        ("turn.end", ("/bin/sh", "-c", "echo hi"), 5.0), ("session.post_stop", ("notify", "--stopped"), 30.0)]


@pytest.mark.parametrize("hook, key, problem", [
    ({"event": "turn.started", "command": "x"}, "hooks[1].event", "expected one of"),
    ({"event": "turn.end", "command": []}, "hooks[1].command", "non-empty list"),
    ({"event": "turn.end", "command": "x", "timeout": "0"}, "hooks[1].timeout", "above zero"),
    ({"event": "turn.end", "command": "x", "when": "always"}, "hooks[1].when", "unknown key"),
])
def test_bad_hooks_are_refused_by_key(hook, key, problem):
    assert_problem({"hooks": [hook]}, key, problem)


def test_the_auto_title_role_takes_its_runtime_and_fallback_chain():
    config = from_document({"roles": {"auto_title": {
        "enabled": True, "agent": "general", "provider": "reference", "model": "m", "reasoning_effort": "low",
        "fallback_chain": [{"provider": "reference", "model": "echo-1"}]}}})
    assert config["roles.auto_title.model"] == "m" and config.title_chain == (Route("reference", "echo-1"),)
    assert_problem({"roles": {"auto_title": {"provider": "nowhere"}}}, "roles.auto_title.provider", "unknown provider")
    assert_problem({"roles": {"auto_title": {"agent": "ghost"}}}, "roles.auto_title.agent", "unknown agent")
