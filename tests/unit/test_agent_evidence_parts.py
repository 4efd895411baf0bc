"""The evidence a failing agent leaves, as pure parts and one real pipe: a JSON-RPC error's data (bounded,
redacted, its readable reason), stderr read back plain and redacted (its last 64 KiB), and a turn's usage."""

import os
import threading

from compozy.acp import stderr as stderr_ring
from compozy.acp.driver import AcpError
from compozy.acp.evidence import DATA_LIMIT, agent_error, described, reason_of
from compozy.session.turns.usage import cost_before, totals, turn_usage
from compozy.text import terminal_output


def test_an_errors_data_is_kept_redacted_and_bounded_and_its_reason_read():
    env = {"ANTHROPIC_API_KEY": "sk-ant-0123456789"}
    exc = AcpError(-32603, "Internal error",
                   {"details": "Claude Code process exited with code 1 (sk-ant-0123456789)"})
    assert agent_error(exc, env) == {"code": -32603, "message": "Internal error",
                                     "data": {"details": "Claude Code process exited with code 1 ([redacted])"}}
    assert described(exc, env) == "Internal error (-32603): Claude Code process exited with code 1 ([redacted])"
    big = agent_error(AcpError(-32603, "x", {"blob": "y" * 10000}))
    assert isinstance(big["data"], str) and len(big["data"]) <= DATA_LIMIT + 20
    assert agent_error(TimeoutError("late")) is None and agent_error(AcpError(1, "m"))["code"] == 1
    assert reason_of({"message": "bad model"}) == "bad model" and reason_of("text\nmore") == "text\\nmore"
    assert reason_of({"errors": [1]}) == '{"errors":[1]}' and reason_of(None) is None


def test_terminal_output_is_plain_lines():
    written = "\x1b[31mfatal:\x1b[0m no\r\n50%\r100%\x1b]0;title\x07 \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\x07"
    assert terminal_output(written) == "fatal: no\n50%\n100% link\\x07"


def test_stderr_is_read_back_plain_redacted_complete_and_bounded():
    read, write = os.pipe()
    pipe = os.fdopen(read, "rb", buffering=0)
    ring = stderr_ring.StderrRing(pipe, {"OPENAI_API_KEY": "sk-open-0123456789"})
    drainer = threading.Thread(target=ring.drain, daemon=True)
    drainer.start()
    os.write(write, b"\x1b[33mwarn\x1b[0m key sk-open-0123456789\n")
    assert ring.tail() == "warn key [redacted]\n"  # written before we looked: in it, without waiting on luck
    for _ in range(40):  # 160 KiB of numbered lines
        os.write(write, b"".join(b"line %06d\n" % n for n in range(_ * 372, _ * 372 + 372)))
    os.close(write)
    drainer.join(5)
    text = ring.tail()
    assert len(text) == stderr_ring.RING_BYTES and text.endswith("line 014879\n")
    assert ring.tail(2) == "line 014878\nline 014879"


def test_a_turns_usage_keeps_tokens_context_cost_and_its_share():
    answered = {"inputTokens": 1000, "outputTokens": 200, "totalTokens": 1200, "bogus": 1, "thoughtTokens": True}
    update = {"used": 53000, "size": 200000, "cost": {"amount": 0.75, "currency": "USD"}}
    assert turn_usage(answered, update, {"amount": 0.5, "currency": "USD"}) == {
        "tokens": {"inputTokens": 1000, "outputTokens": 200, "totalTokens": 1200},
        "context": {"used": 53000, "size": 200000}, "cost": {"amount": 0.75, "currency": "USD"},
        "turn_cost": {"amount": 0.25, "currency": "USD"}}
    assert "turn_cost" not in turn_usage(None, update, None)  # the cost before it is not known
    assert "turn_cost" not in turn_usage(None, update, {"amount": 1, "currency": "EUR"})
    assert turn_usage(None, None, None) is None and turn_usage({}, {"used": "x"}, None) is None


def test_the_cost_before_a_turn_and_the_sum_of_turns():
    seen = {"acp_session_id": "s1", "amount": 0.5, "currency": "USD"}
    assert cost_before(seen, "s1", fresh=False) == {"amount": 0.5, "currency": "USD"}
    assert cost_before(seen, "s2", fresh=True) == {"amount": 0, "currency": None}
    assert cost_before(None, "s2", fresh=False) is None
    assert totals([{"tokens": {"inputTokens": 3}, "turn_cost": {"amount": 0.1, "currency": "USD"}},
                   {"tokens": {"inputTokens": 4, "outputTokens": 1}, "turn_cost": {"amount": 0.2, "currency": "USD"}},
                   {"context": {"used": 1, "size": 2}}]) == {
        "turns": 3, "tokens": {"inputTokens": 7, "outputTokens": 1}, "cost": [{"amount": 0.3, "currency": "USD"}]}
