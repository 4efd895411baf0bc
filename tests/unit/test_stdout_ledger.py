"""StdoutLedger on a real pipe: a waiter returns only once what the pipe held when it asked is handled."""

import os
import threading
import time

import pytest

from compozy.acp.output import StdoutLedger


@pytest.fixture
def pipe():
    read_end, write_end = os.pipe()
    yield read_end, write_end
    for fd in (read_end, write_end):
        try:
            os.close(fd)
        except OSError:
            pass


def slow_reader(ledger, handled, delay):
    """Read like the agent reader does, taking `delay` to handle each read."""
    def run():
        while data := ledger.read(65536):
            time.sleep(delay)
            handled.append(data)
            ledger.handled(data)
        ledger.close()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_settle_waits_for_what_was_written_before_it_to_be_handled(pipe):
    read_end, write_end = pipe
    ledger, handled = StdoutLedger(read_end), []
    os.write(write_end, b'{"result": "the tool result"}\n')
    slow_reader(ledger, handled, delay=0.3)
    assert ledger.settle(timeout=5)
    assert b"".join(handled) == b'{"result": "the tool result"}\n'


def test_settle_does_not_wait_for_what_is_written_after_it(pipe):
    read_end, write_end = pipe
    ledger, handled = StdoutLedger(read_end), []
    reader = slow_reader(ledger, handled, delay=0.5)
    started = time.monotonic()
    assert ledger.settle(timeout=5)  # nothing written yet: nothing to wait for
    assert time.monotonic() - started < 0.4
    os.write(write_end, b"later\n")
    os.close(write_end)
    reader.join(5)  # a reader left running would read the next test's pipe, which reuses these descriptors


def test_settle_gives_up_after_its_timeout_when_nothing_reads(pipe):
    read_end, write_end = pipe
    ledger = StdoutLedger(read_end)
    os.write(write_end, b"never read\n")
    assert ledger.settle(timeout=0.2) is False


def test_settle_returns_at_once_once_the_pipe_has_ended(pipe):
    read_end, write_end = pipe
    ledger, handled = StdoutLedger(read_end), []
    reader = slow_reader(ledger, handled, delay=0)
    os.close(write_end)
    reader.join(5)
    assert ledger.settle(timeout=5)
