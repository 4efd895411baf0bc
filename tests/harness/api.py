"""Small helpers for tests that drive a real daemon through the HTTP client directly."""

import threading
import time
from urllib.parse import quote

from compozy.errors import CompozyError
from tests.harness.daemon import client_for

TURN_TIMEOUT = 15.0


def path_of(*parts):
    """A URL path of these parts, each quoted whole."""
    return "/" + "/".join(quote(str(p), safe="") for p in parts)


def spath(session, *rest):
    """The workspace-scoped path of a session resource (S in interface.md)."""
    return path_of("api", "workspaces", session["workspace_id"], "sessions", session["id"], *rest)


def wait_for(predicate, timeout=TURN_TIMEOUT, interval=0.05, what="condition"):
    """Poll until predicate() is truthy and return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not reached within {timeout}s")
        time.sleep(interval)


def events(api, session, **query):
    return api.call("GET", spath(session, "events"), query=query)[1]["events"]


def run_turn(api, session, message):
    """Send a prompt, wait for its turn to end, and return its agent_message and done events."""
    _, document = api.call("POST", spath(session, "prompt"), {"message": message})
    turn_id = document["prompt"]["turn_id"]
    wait_for(lambda: events(api, session, turn_id=turn_id, type="done,error"), what=f"end of turn {turn_id}")
    return events(api, session, turn_id=turn_id, type="agent_message,done")


def at_once(url, method, path, bodies):
    """One request per body, each on its own connection, all released by one barrier:
    [(status, document)] for answers and [(status, error code)] for refusals, in body order."""
    barrier, answers = threading.Barrier(len(bodies)), [None] * len(bodies)

    def send(index):
        client = client_for(url, timeout=60)
        barrier.wait()
        try:
            answers[index] = client.call(method, path, bodies[index])
        except CompozyError as error:
            answers[index] = (getattr(error, "http_status", None), error.code)
    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert None not in answers, "a request never answered"
    return answers
