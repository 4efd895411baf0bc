"""A/B of the stream budget (issue 26 item 3, docs/performance.md): the 5,000-chunk turn of bench_eventlog.py
through a baseline checkout's daemon and this one's, each round after a fresh 5,000-commit sqlite3 baseline,
the two turns' order alternating.

    BASE_ENTRY=/path/to/other/checkout/compozy.py ROUNDS=14 python3 bench/ab_stream.py

Prints, per side: the turn's p50 against the baseline's, the median of per-round ratios, and the daemon's CPU
(every thread's schedstat). A script, not collected by pytest.
"""
import os
import statistics
import sys
import tempfile
ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]
from conftest import create_session, stream_prompt, ms
from bench_eventlog import sqlite_commits
from tests.harness.daemon import DaemonProcess
from pathlib import Path
ROUNDS = int(os.environ.get("ROUNDS", "10"))
sides = {"base": os.environ["BASE_ENTRY"], "new": os.environ.get("NEW_ENTRY", str(ROOT / "compozy.py"))}
root = Path(tempfile.mkdtemp(prefix="abst-"))
ds = {}
for label, entry in sides.items():
    home, ws = root / f"home-{label}", root / f"ws-{label}"
    home.mkdir()
    ws.mkdir()
    d = DaemonProcess(home, entry=entry).start()
    c = d.client(timeout=120)
    s = create_session(c, ws)
    stream_prompt(c, s, "hello")
    stream_prompt(c, s, "[chunks 200] warm")
    ds[label] = (d, c, s)
def cpu(pid):
    total = 0
    for t in os.listdir(f"/proc/{pid}/task"):
        try: total += int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0])
        except OSError: pass
    return total / 1e9
base, res, cpus = [], {l: [] for l in ds}, {l: [] for l in ds}
loads = []
try:
    for r in range(ROUNDS):
        p = str(root / f"b{r}.db")
        base.append(sqlite_commits(p))
        for suf in ("", "-wal", "-shm"):
            try: os.unlink(p + suf)
            except FileNotFoundError: pass
        order = list(ds) if r % 2 == 0 else list(reversed(list(ds)))
        for l in order:
            _, c, s = ds[l]
            c0 = cpu(ds[l][0].process.pid)
            a, t, term, n = stream_prompt(c, s, "[chunks 5000] x")
            assert term == "done"
            cpus[l].append(cpu(ds[l][0].process.pid) - c0)
            res[l].append(t)
        loads.append(float(open("/proc/loadavg").read().split()[0]))
finally:
    for d, _, _ in ds.values(): d.stop()
b = statistics.median(base)
print(f"load {min(loads):.1f}-{max(loads):.1f}; baseline 5,000 commits p50 {ms(b):.1f} ms")
for l in ds:
    paired = statistics.median(t / bb for t, bb in zip(res[l], base))
    print(f"{l}: turn p50 {ms(statistics.median(res[l])):.1f} ms -> {statistics.median(res[l]) / b:.2f}x "
          f"(per-round median {paired:.2f}x); daemon CPU p50 {ms(statistics.median(cpus[l])):.0f} ms, "
          f"mean {ms(statistics.mean(cpus[l])):.0f}")
