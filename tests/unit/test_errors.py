"""Unit tests for compozy.errors: the registry, the status mapping, the body shape."""

import re
from collections import Counter

import pytest

from compozy.errors import ERRORS, TOP_LEVEL_FIELDS, CompozyError, ErrorKind, error_body, invalid

# Statuses the interface fixes by name (shared/reference/interface.md, HTTP conventions).
# session_fence_conflict and session_turn_in_progress (409) are registered with rewind, continue
# and fork, the operations that raise them.
INTERFACE_STATUSES = {
    "invalid_request": 400, "host_not_allowed": 403, "origin_not_allowed": 403,
    "idempotency_conflict": 409,
    "active_turn_mismatch": 409, "revision_conflict": 409, "session_archived": 409,
    "session_archive_stop_failed": 409, "queue_full": 413, "body_too_large": 413,
    "unsupported_media_type": 415, "model_unavailable": 422, "provider_auth_failure": 422,
    "new_work_admission_unavailable": 503, "session_not_found": 404, "endpoint_not_found": 404,
}


@pytest.mark.parametrize("code", sorted(ERRORS))
def test_every_code_maps_to_one_error_status(code):
    kind = ERRORS[code]
    assert isinstance(kind, ErrorKind)
    assert isinstance(kind.status, int) and 400 <= kind.status <= 599
    assert re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", code)
    assert kind.summary and kind.summary.strip() == kind.summary
    assert CompozyError(code).status == kind.status


@pytest.mark.parametrize("code, status", sorted(INTERFACE_STATUSES.items()))
def test_interface_codes_have_interface_statuses(code, status):
    assert code in ERRORS
    assert ERRORS[code].status == status


def test_not_found_codes_are_404():
    for code, kind in ERRORS.items():
        if code.endswith("_not_found"):
            assert kind.status == 404, code


def test_no_two_codes_share_a_summary():
    summaries = Counter(kind.summary.lower() for kind in ERRORS.values())
    assert [s for s, n in summaries.items() if n > 1] == []


def test_unregistered_code_refused():
    with pytest.raises(AssertionError):
        CompozyError("no_such_code", "whatever")


def test_error_body_shape():
    body = error_body("session_not_found", "no session sess_x", {"session_id": "sess_x"})
    assert body == {"error": "no session sess_x", "code": "session_not_found", "details": {"session_id": "sess_x"}}
    assert list(body) == ["error", "code", "details"]


def test_error_body_without_details_has_empty_details():
    assert error_body("invalid_request", "bad") == {"error": "bad", "code": "invalid_request", "details": {}}


def test_error_body_does_not_share_details():
    details = {"field": "name"}
    body = error_body("invalid_request", "bad", details)
    body["details"]["field"] = "changed"
    assert details == {"field": "name"}


@pytest.mark.parametrize("field", TOP_LEVEL_FIELDS)
def test_seed_named_fields_are_lifted_next_to_details(field):
    body = error_body("active_turn_mismatch", "busy", {field: "x_1", "other": 2})
    assert body[field] == "x_1"
    assert body["details"] == {field: "x_1", "other": 2}
    assert set(body) == {"error", "code", "details", field}


def test_compozy_error_carries_code_message_details():
    error = CompozyError("queue_full", "the queue holds 10", queue_cap=10)
    assert error.code == "queue_full"
    assert error.message == "the queue holds 10"
    assert error.details == {"queue_cap": 10}
    assert error.status == 413
    assert error.to_body() == {"error": "the queue holds 10", "code": "queue_full", "details": {"queue_cap": 10}}
    assert str(error) == "queue_full: the queue holds 10"


def test_compozy_error_default_message_is_the_summary():
    assert CompozyError("body_too_large").message == ERRORS["body_too_large"].summary


def test_invalid_helper_is_invalid_request():
    error = invalid("name must not be blank", field="name")
    assert isinstance(error, CompozyError)
    assert error.code == "invalid_request" and error.status == 400
    assert error.details == {"field": "name"}


def test_http_layer_codes_are_registered_with_matching_status():
    from compozy.http.app import HTTP_CODES
    for status, code in HTTP_CODES.items():
        assert code in ERRORS
        assert ERRORS[code].status == status
