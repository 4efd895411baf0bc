"""Documents an agent nests deeper than any recursion goes: redaction and the depth cap walk them
iteratively (compozy.text.map_document), and the depth cap keeps what is shallow exactly."""

import json

from compozy.redact import REPLACEMENT, redact_values
from compozy.text import DEPTH_MARKER, MAX_CONTENT_DEPTH, map_document, may_nest_deeper

SECRET = "providerkey-123456789"


def nested(depth, leaf):
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def test_redaction_walks_a_document_ten_thousand_levels_deep():
    redacted = redact_values(nested(10_000, f"the key is {SECRET}"), {SECRET})
    node = redacted
    while not isinstance(node, str):
        node = node[0] if isinstance(node, list) else node["k"]
    assert node == f"the key is {REPLACEMENT}"


def test_the_depth_cap_replaces_only_what_is_deeper_and_keeps_order_and_keys():
    shallow = {"a": [1, {"b": "x", "c": [True, None, 2.5]}, "y"], "d": {}}
    assert map_document(shallow, max_depth=MAX_CONTENT_DEPTH) == shallow
    capped = map_document(nested(5_000, "x"), max_depth=3)
    assert json.dumps(capped) == json.dumps(nested(4, DEPTH_MARKER))


def test_redaction_of_a_plain_document_is_unchanged_and_copies():
    document = {"text": f"a {SECRET} b", "list": [SECRET, {"n": 1}], "key": "short"}
    redacted = redact_values(document, {SECRET})
    assert redacted == {"text": f"a {REPLACEMENT} b", "list": [REPLACEMENT, {"n": 1}], "key": "short"}
    assert document["text"] == f"a {SECRET} b"  # the original is left alone
    assert redact_values(document, set()) is document


def test_the_bracket_count_is_a_cheap_upper_bound_of_the_depth():
    assert not may_nest_deeper(json.dumps({"text": "chunk 1 "}))
    assert may_nest_deeper(json.dumps(nested(MAX_CONTENT_DEPTH + 1, "x")))
