"""Request-body depth, measured without recursion so no body can overflow the stack."""

from compozy.http.guards import MAX_JSON_DEPTH, too_deep


def test_json_depth_is_measured_without_recursion():
    nested = value = {}
    for _ in range(MAX_JSON_DEPTH - 1):
        value["a"] = value = {}
    assert not too_deep(nested)
    value["a"] = [[]]
    assert too_deep(nested)
    deep = []
    for _ in range(100_000):
        deep = [deep]
    assert too_deep(deep)
