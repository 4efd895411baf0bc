"""Setting one key in config.toml's text: only that value changes; forms the edit does not understand are refused."""

import tomllib

import pytest

from compozy.session.records.config_edit import NotEditable, set_key

KEY = "session.supervision.idle_release_after"


@pytest.mark.parametrize("before, after", [
    ('[session.supervision]\nidle_release_after = "1h"  # long\n',
     '[session.supervision]\nidle_release_after = "5m"  # long\n'),
    ("[session.supervision]\r\nidle_release_after = '1h'\r\nquiet_after = \"2m\"\r\n",
     "[session.supervision]\r\nidle_release_after = \"5m\"\r\nquiet_after = \"2m\"\r\n"),
    ('[ session . supervision ]\n"idle_release_after" = "1h"\n', '[ session . supervision ]\n"idle_release_after" = "5m"\n'),
    ('[session]\nsupervision.idle_release_after = "1h"\n', '[session]\nsupervision.idle_release_after = "5m"\n'),
    ('session.supervision.idle_release_after = "1h"\n', 'session.supervision.idle_release_after = "5m"\n'),
    ('[session.supervision]\nquiet_after = "2m"\n', '[session.supervision]\nidle_release_after = "5m"\nquiet_after = "2m"\n'),
    ('', '[session.supervision]\nidle_release_after = "5m"\n'),
    ('# only a comment', '# only a comment\n\n[session.supervision]\nidle_release_after = "5m"\n'),
    ('[x]\ntext = """\n[session.supervision]\nidle_release_after = "1h"\n"""\n',
     '[x]\ntext = """\n[session.supervision]\nidle_release_after = "1h"\n"""\n\n[session.supervision]\n'
     'idle_release_after = "5m"\n'),
])
def test_the_key_changes_and_nothing_else(before, after):
    assert set_key(before, KEY, "5m") == after
    assert tomllib.loads(after)["session"]["supervision"]["idle_release_after"] == "5m"


@pytest.mark.parametrize("text", [
    '[session]\nsupervision = { idle_release_after = "1h" }\n',
    'session = { supervision = { quiet_after = "1m" } }\n',
    '[session]\nsupervision = "oops"\n',
])
def test_a_form_the_edit_does_not_understand_is_refused(text):
    with pytest.raises(NotEditable):
        set_key(text, KEY, "5m")


def test_values_are_written_as_toml_strings():
    assert set_key("", "session.busy_input.default_mode", 'a"b\\c') == \
        '[session.busy_input]\ndefault_mode = "a\\"b\\\\c"\n'
