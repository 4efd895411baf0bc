"""A/B of issue 24 item 6 (docs/performance.md): the warm turn of bench_checkpoints.py, checkpoints on and off,
through four daemons, a baseline checkout's and this one's, rounds interleaved (the order alternating).

    BASE_ENTRY=/path/to/other/checkout/compozy.py ROUNDS=50 python3 bench/ab_checkpoints.py

Prints, per side: on/off p50 (admission -> done), the checkpoints' own time, what is beyond it, and the same
inside the daemon (user_message -> done, from the events' timestamps). A script, not collected by pytest.
"""
import os
import statistics
import sys
import tempfile
ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
from conftest import create_session, stream_prompt, ms
from tests.harness.daemon import DaemonProcess

ROUNDS = int(os.environ.get("ROUNDS", "40"))
BASE = os.environ["BASE_ENTRY"]
NEW = os.environ.get("NEW_ENTRY", str(ROOT / "compozy.py"))

def make(label, entry, enabled, root):
    home, ws = root / f"home-{label}", root / f"ws-{label}"
    home.mkdir()
    ws.mkdir()
    (home / "config.toml").write_text(f"[checkpoints]\nenabled = {'true' if enabled else 'false'}\n")
    os.chmod(home / "config.toml", 0o600)
    for n in range(200):
        (ws / f"src{n:03d}.py").write_text(f"value = {n}\n" * 20)
    d = DaemonProcess(home, entry=entry).start()
    c = d.client(timeout=120)
    s = create_session(c, ws)
    stream_prompt(c, s, "warm up")
    stream_prompt(c, s, "warm up")
    return d, c, s

from pathlib import Path
root = Path(tempfile.mkdtemp(prefix="abck-"))
cfg = [("base-on", BASE, True), ("base-off", BASE, False), ("new-on", NEW, True), ("new-off", NEW, False)]
ds = {l: make(l, e, en, root) for l, e, en in cfg}
res = {l: [] for l in ds}
try:
    for r in range(ROUNDS):
        order = list(ds) if r % 2 == 0 else list(reversed(list(ds)))
        for l in order:
            _, c, s = ds[l]
            res[l].append(stream_prompt(c, s, "hello")[1])
    own = {}
    for l in ("base-on", "new-on"):
        _, c, s = ds[l]
        path = f"/api/workspaces/{s['workspace_id']}/sessions/{s['id']}/checkpoints"
        e = c.call("GET", path)[1]["checkpoints"][4:]
        own[l] = statistics.median([e[i]["duration_ms"] + e[i + 1]["duration_ms"] for i in range(0, len(e) - 1, 2)])
        print(l, "start", statistics.median([x["duration_ms"] for x in e if x["kind"] == "start"]),
              "end", statistics.median([x["duration_ms"] for x in e if x["kind"] == "end"]))
    from datetime import datetime
    def ts(e):
        return datetime.strptime(e["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
    span, ownturn = {}, {}
    for l, (_, c, s) in ds.items():
        path = f"/api/workspaces/{s['workspace_id']}/sessions/{s['id']}/events"
        evs, after = [], 0
        while True:
            page = c.call("GET", path + f"?after_sequence={after}&limit=1000")[1]["events"]
            evs += page
            if len(page) < 1000: break
            after = page[-1]["sequence"]
        turns = {}
        for e in evs:
            turns.setdefault(e["turn_id"], []).append(e)
        spans, owns = [], []
        for tid, es in list(turns.items())[2:]:
            um = [e for e in es if e["type"] == "user_message"]
            dn = [e for e in es if e["type"] == "done"]
            if um and dn:
                own_t = sum(e["content"].get("duration_ms", 0) for e in es if e["type"] == "checkpoint")
                spans.append((ts(dn[0]) - ts(um[0])) * 1000 - own_t)
                owns.append(own_t)
        span[l] = statistics.median(spans)
    print("daemon span user_message->done minus own:", {l: round(v, 2) for l, v in span.items()})
    for side in ("base", "new"):
        print(f"{side}: in-daemon beyond own = {span[side+'-on'] - span[side+'-off']:+.2f} ms")
finally:
    for d, _, _ in ds.values():
        d.stop()
med = {l: ms(statistics.median(v)) for l, v in res.items()}
print("load", open("/proc/loadavg").read().strip())
for l in ds:
    print(f"{l:9s} p50 {med[l]:6.2f} ms  mean {ms(statistics.mean(res[l])):6.2f}")
for side in ("base", "new"):
    on, off = med[f"{side}-on"], med[f"{side}-off"]
    print(f"{side}: on-off {on-off:+.2f} ms, own {own[side+'-on']:.2f} ms, beyond {on-off-own[side+'-on']:+.2f} ms")
