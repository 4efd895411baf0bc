"""Unit tests for compozy.ids: prefixes, ULID shape and order, validation before the file system."""

import re
import time

import pytest

from compozy.errors import ERRORS, CompozyError
from compozy.ids import PREFIXES, is_valid_id, new_id, new_ulid, validate_client_token, validate_id

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
ULID = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
GOOD_SESSION = "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"


def decode_time(ulid):
    value = 0
    for char in ulid[:10]:
        value = value * 32 + CROCKFORD.index(char)
    return value


@pytest.mark.parametrize("kind", ["sess", "ws", "msg", "turn", "queue", "evt"])
def test_interface_prefixes_exist(kind):
    assert kind in PREFIXES


@pytest.mark.parametrize("kind", PREFIXES)
def test_new_id_has_prefix_and_ulid(kind):
    value = new_id(kind)
    prefix, _, ulid = value.partition("_")
    assert prefix == kind
    assert ULID.match(ulid), value
    assert is_valid_id(value, kind)
    assert validate_id(value, kind) == value


def test_new_id_refuses_unknown_kind():
    with pytest.raises(AssertionError):
        new_id("bogus")


def test_ulid_timestamp_is_now():
    before = time.time_ns() // 1_000_000
    ulid = new_ulid()
    after = time.time_ns() // 1_000_000
    assert before - 1 <= decode_time(ulid) <= after + 1


def test_ids_monotonic_within_a_millisecond():
    values = [new_id("evt") for _ in range(5000)]
    assert len(set(values)) == len(values)
    assert values == sorted(values)
    times = [decode_time(v[4:]) for v in values]
    assert len(times) > len(set(times)), "expected several IDs in one millisecond"
    assert times == sorted(times)


def test_ids_of_different_kinds_share_one_order():
    first, second = new_id("sess"), new_id("turn")
    assert first.partition("_")[2] < second.partition("_")[2]


TRAVERSALS = ["../../etc/passwd", "..", "sess_..", "sess_../../x", f"{GOOD_SESSION}/..", f"{GOOD_SESSION}/../x",
              "sess_01ARZ3NDEKTSV4RRFFQ69G5FA/", "sess_..\\..\\x", "/etc/passwd", f"../{GOOD_SESSION}",
              f"{GOOD_SESSION}\x00", f"{GOOD_SESSION}\n", f" {GOOD_SESSION}", f"{GOOD_SESSION} ",
              "sess_01arz3ndektsv4rrffq69g5fav",
              "sess_01ARZ3NDEKTSV4RRFFQ69G5FAVX", "sess_01ARZ3NDEKTSV4RRFFQ69G5FA", "sess_01ARZ3NDEKTSV4RRFFQ69G5FAI",
              "sess_", ""]


@pytest.mark.parametrize("value", TRAVERSALS)
def test_validate_id_rejects_traversal_and_malformed(value):
    assert not is_valid_id(value, "sess")
    with pytest.raises(CompozyError) as caught:
        validate_id(value, "sess")
    assert caught.value.code == "invalid_request"
    with pytest.raises(CompozyError) as caught:
        validate_id(value, "sess", not_found="session_not_found")
    assert caught.value.code == "session_not_found"
    assert ERRORS[caught.value.code].status == 404


@pytest.mark.parametrize("value, kind", [("ws_01ARZ3NDEKTSV4RRFFQ69G5FAV", "sess"), (GOOD_SESSION, "ws"),
                                         ("turn_01ARZ3NDEKTSV4RRFFQ69G5FAV", "msg"),
                                         ("session_01ARZ3NDEKTSV4RRFFQ69G5FAV", "sess"),
                                         ("SESS_01ARZ3NDEKTSV4RRFFQ69G5FAV", "sess"),
                                         ("sess01ARZ3NDEKTSV4RRFFQ69G5FAV", "sess")])
def test_validate_id_rejects_wrong_prefix(value, kind):
    assert not is_valid_id(value, kind)
    with pytest.raises(CompozyError) as caught:
        validate_id(value, kind, field="some_field")
    assert caught.value.code == "invalid_request"
    assert "some_field" in caught.value.message
    with pytest.raises(CompozyError) as caught:
        validate_id(value, kind, not_found="queue_entry_not_found")
    assert caught.value.code == "queue_entry_not_found"


@pytest.mark.parametrize("value", [None, 5, b"sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", ["sess"], {"id": 1}])
def test_validate_id_rejects_non_strings_as_invalid_request(value):
    assert not is_valid_id(value, "sess")
    for not_found in (None, "session_not_found"):
        with pytest.raises(CompozyError) as caught:
            validate_id(value, "sess", not_found=not_found)
        assert caught.value.code == "invalid_request"


def test_validate_id_not_found_message_is_bounded():
    with pytest.raises(CompozyError) as caught:
        validate_id("x" * 10_000, "sess", not_found="session_not_found")
    assert len(caught.value.message) < 200


# -- client-chosen tokens -----------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["a", "7", "m1", "msg-1", "key_2.v3:x@y+z=w", "A" * 200, "a" + "-" * 199])
def test_client_token_accepts_bounded_safe_values(value):
    assert validate_client_token(value, "message_id") == value


@pytest.mark.parametrize("value", ["", "A" * 201, "a" * 1000, ".hidden", "-flag", "_x", "../x", "a/b", "a\\b",
                                   "a b", "a\nb", "abc\n", "a\x00", "é", "caf\u00e9", None, 5, ["a"]])
def test_client_token_rejects_unsafe_or_unbounded(value):
    with pytest.raises(CompozyError) as caught:
        validate_client_token(value, "idempotency_key")
    assert caught.value.code == "invalid_request"
    assert caught.value.details.get("field") == "idempotency_key"
    assert "idempotency_key" in caught.value.message


def test_ids_made_in_a_batch_are_valid_distinct_and_in_creation_order():
    from compozy.ids import new_id, new_ids
    before = new_id("evt")
    batch = new_ids("evt", 500)
    after = new_id("evt")
    assert all(is_valid_id(i, "evt") for i in batch)
    assert len(set(batch)) == 500
    assert [before, *batch, after] == sorted([before, *batch, after])
