"""The workload and the audit of the crash torture (tests/test_torture.py).

A round: the daemon starts, every session gets a viewer (its event stream, resumed after what is
stored) and a driver (prompts with keys, some retried at once), and at a seeded random moment the
daemon is SIGKILLed. The audit then reads what the dead daemon left on disk, restarts it, and checks
the promise: nothing a viewer saw is lost or changed, sequences stay dense, boot repair ends every
open turn exactly once, no admitted prompt ran twice, and the catalog agrees with the directories.
"""

import http.client
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from compozy.errors import CompozyError
from tests.harness.api import spath
from tests.harness.daemon import ENTRY, test_environment
from tests.harness.runner import read_events
from tests.harness.sse import Viewer

TERMINALS = ("done", "error")
# Refusals that leave no trace: the same request later may be admitted, never run twice.
STABLE_REFUSALS = {"idempotency_conflict", "message_conflict", "session_turn_in_progress", "queue_full",
                   "session_not_active", "session_stop_in_progress"}
SHAPES = ("[chunks {n}] {tag}", "[thought thinking {tag}] [chunks {n}] {tag}", "[tool t-{tag}] [chunks {n}] {tag}",
          "[plan] [usage] [chunks {n}] {tag}")


@dataclass
class Figures:
    kills: int = 0
    kills_during_boot: int = 0
    prompts_sent: int = 0
    prompts_admitted: int = 0
    prompts_in_flight_at_kill: int = 0
    retries_replayed: int = 0
    retries_conflict: int = 0
    events_seen_by_viewers: int = 0
    events_stored: int = 0
    turns_ended_by_repair: int = 0
    turns: int = 0
    lost: int = 0

    def as_dict(self):
        return dict(self.__dict__)


@dataclass
class Sent:
    body: dict
    answer: dict | None = None  # the prompt object when admitted
    error: str | None = None
    in_flight: bool = False  # the daemon died before it answered: admitted or not, unknown


@dataclass
class SessionLoad:
    session: dict
    sent: list = field(default_factory=list)
    seen: dict = field(default_factory=dict)  # sequence -> the record a viewer received


class Round:
    """One daemon lifetime under load, ended by SIGKILL."""

    def __init__(self, daemon, loads, rng, number):
        self.daemon, self.loads, self.rng, self.number = daemon, loads, rng, number
        self.stop = threading.Event()
        self.figures = Figures()

    def run(self, kill_after):
        port = int(self.daemon.http_url.rsplit(":", 1)[1])
        threads = []
        for index, load in enumerate(self.loads):
            seed = self.rng.random()
            threads.append(threading.Thread(target=self._view, args=(port, load), daemon=True))
            threads.append(threading.Thread(target=self._drive, args=(load, index, random.Random(seed)), daemon=True))
        for thread in threads:
            thread.start()
        time.sleep(kill_after)
        self.daemon.kill()
        self.stop.set()
        for thread in threads:
            thread.join(60)
            assert not thread.is_alive(), "a viewer or driver hung after the daemon died"

    def _view(self, port, load):
        after = max(load.seen, default=0)
        try:
            viewer = Viewer(port, spath(load.session, "stream") + f"?after_sequence={after}", timeout=30)
        except OSError:
            return
        try:
            for frame in viewer.frames():
                record = frame["data"]
                load.seen[record["sequence"]] = record
        except (OSError, ValueError):
            pass  # the daemon died mid-frame: only whole frames count as received
        finally:
            viewer.close()

    def _drive(self, load, index, rng):
        client = self.daemon.client(timeout=30)
        number, restart = 0, False
        while not self.stop.is_set():
            admitted = [s for s in load.sent if s.answer is not None]
            if admitted and rng.random() < 0.15:
                body = rng.choice(admitted).body  # a client retrying what it already sent
            else:
                number += 1
                tag = f"s{index}r{self.number}p{number}"
                text = rng.choice(SHAPES).format(n=rng.randint(1, 6), tag=tag)
                body = {"message": text, "message_id": f"m-{tag}", "idempotency_key": f"k-{tag}"}
                if rng.random() < 0.8 and not restart:
                    body["mode"] = "queue"  # else the configured busy mode (interrupt), which also restarts
            sent = send_prompt(client, load.session, body)
            restart = sent.error == "session_not_active"
            load.sent.append(sent)
            if sent.in_flight:
                return
            if sent.error == "queue_full":
                time.sleep(0.2)
            time.sleep(rng.uniform(0, 0.15))


def send_prompt(client, session, body):
    sent = Sent(dict(body))
    try:
        _, document = client.call("POST", spath(session, "prompt"), body)
        sent.answer = document["prompt"]
    except CompozyError as error:
        if getattr(error, "http_status", None) is None:
            sent.in_flight = True
        else:
            sent.error = error.code
    except (OSError, ValueError, http.client.HTTPException):  # the daemon died mid-answer
        sent.in_flight = True
    return sent


def kill_during_boot(home, delay):
    """Start a daemon and SIGKILL it `delay` seconds later, ready or not (mid-boot, mid-repair)."""
    process = subprocess.Popen([sys.executable, ENTRY, "daemon", "run", "--http", "127.0.0.1:0"],
                               env=test_environment(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    time.sleep(delay)
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)


# -- the audit -----------------------------------------------------------------------------------


def stored_records(client, session):
    """Every event of the session as the API serves it, in sequence order."""
    records, after = [], 0
    while True:
        query = {"after_sequence": after, "limit": 1000, "archive": "all"}
        page = client.call("GET", spath(session, "events"), query=query)[1]["events"]
        records.extend(page)
        if len(page) < 1000:
            return records
        after = page[-1]["sequence"]


def audit_session(client, home, load, before_restart, figures):
    """Check one session after a restart against what the viewers saw and what the dead daemon left."""
    records = stored_records(client, load.session)
    sequences = [r["sequence"] for r in records]
    assert sequences == list(range(1, len(records) + 1)), f"{load.session['id']}: sequences not dense"
    by_sequence = {r["sequence"]: r for r in records}
    for sequence, seen in load.seen.items():
        if by_sequence.get(sequence) != seen:
            figures.lost += 1
            raise AssertionError(f"{load.session['id']}: event {sequence} a viewer received is "
                                 f"{'gone' if sequence not in by_sequence else 'changed'}: {seen}")
    now = read_events(home, load.session["id"])
    assert now[:len(before_restart)] == before_restart, "boot rewrote events the dead daemon had committed"
    repaired = {r["turn_id"] for r in now[len(before_restart):] if r["type"] in TERMINALS}
    figures.turns_ended_by_repair += len(repaired)
    figures.events_stored = figures.events_stored + len(records)
    check_turns(load, records)


def check_turns(load, records):
    """Each turn with a user message ends exactly once, after it; no message or key ran twice."""
    runs, ends, keys = {}, {}, {}
    for record in records:
        turn, kind, content = record["turn_id"], record["type"], record["content"]
        if kind == "user_message" and not content.get("steer"):
            assert content.get("message_id") not in runs, f"message {content.get('message_id')} ran twice"
            runs[content.get("message_id")] = turn
            keys.setdefault(turn, record["sequence"])
        elif kind in TERMINALS and turn is not None:
            ends.setdefault(turn, []).append(record["sequence"])
    for turn, start in keys.items():
        assert len(ends.get(turn, [])) == 1, f"turn {turn} ended {len(ends.get(turn, []))} times"
        assert ends[turn][0] > start, f"turn {turn} ended before it started"
    for sent in load.sent:
        if sent.answer is None:
            continue
        message_id, turn_id = sent.answer["message_id"], sent.answer["turn_id"]
        if sent.answer["disposition"] == "started":
            assert runs.get(message_id) == turn_id, f"started prompt {message_id} has no user message in its turn"
        elif message_id in runs:
            assert runs[message_id] == turn_id, f"queued prompt {message_id} ran under another turn"
    return len(keys)


def retry_after_restart(client, load, rng, figures):
    """Resend what was admitted (and what was in flight at the kill): the recorded answer or a stable
    conflict, never a second run."""
    admitted = {s.body["message_id"]: s for s in load.sent if s.answer is not None}
    unknown = [s for s in load.sent if s.in_flight and s.body["message_id"] not in admitted]
    picks = rng.sample(sorted(admitted), min(2, len(admitted)))
    for message_id in picks:
        first = admitted[message_id]
        again = send_prompt(client, load.session, first.body)
        if again.answer is not None:
            assert again.answer["replayed"] is True, f"a retry of {message_id} was admitted afresh: {again.answer}"
            assert again.answer["turn_id"] == first.answer["turn_id"], "a retry answered another turn"
            figures.retries_replayed += 1
        else:
            assert again.error in STABLE_REFUSALS, f"a retry of {message_id} answered {again.error}"
            figures.retries_conflict += 1
        load.sent.append(again)
    for sent in unknown:  # admitted or not before the kill: either way it runs at most once
        again = send_prompt(client, load.session, sent.body)
        assert not again.in_flight and (again.answer is not None or again.error in STABLE_REFUSALS), again
        load.sent.append(again)


def catalog_agrees_with_directories(home):
    """Every session directory has its catalog row with the same state, and no row lacks its directory."""
    folders = {p.name: json.loads((p / "meta.json").read_text()) for p in (Path(home) / "sessions").iterdir()
               if (p / "meta.json").exists()}
    connection = sqlite3.connect(f"file:{Path(home) / 'compozy.db'}?mode=ro", uri=True, timeout=10)
    try:
        rows = dict(connection.execute("SELECT id, state FROM sessions WHERE orphaned = 0").fetchall())
    finally:
        connection.close()
    assert set(rows) == set(folders), f"catalog {sorted(rows)} vs directories {sorted(folders)}"
    for session_id, meta in folders.items():
        assert rows[session_id] == meta["state"], f"{session_id}: catalog {rows[session_id]}, meta {meta['state']}"
