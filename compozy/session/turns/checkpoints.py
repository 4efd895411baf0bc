"""File checkpoints at every turn boundary: the workspace's state when a turn starts and when it ends.

Layer 4. A checkpoint runs on its workspace's own worker thread (one at a time per workspace: the
sessions of a workspace share its shadow repository), never on the agent's output path. The runner
waits for a turn's start checkpoint, bounded by checkpoints.timeout, before it sends the prompt (so
the checkpoint is the state before the agent acted), and for its end checkpoint before the turn's
terminal event, bounded the same way: the worker hands that one back and the runner commits it in the
terminal event's transaction (one commit less on the turn's way to `done`); one that comes too late is
recorded by the worker itself. Git runs through proc.run_captured. Whatever happens, the outcome is a
`checkpoint` event: a tree, or why there is none (no git, a workspace too large, a timeout). A checkpoint never
fails a turn. It is also an observer: a removed session's references go, and once the daemon closes
its workers end as soon as their queues are empty.
"""

import json
import logging
import queue
import threading

from compozy.checkpoints.retention import to_drop
from compozy.checkpoints.shadow import LISTED_CHANGES, ShadowError, ShadowRepo
from compozy.ids import new_id
from compozy.paths import make_private_dir, write_private_json
from compozy.proc import run_captured

log = logging.getLogger("compozy.checkpoints")

IDLE_WORKER_SECONDS = 30.0
DRAINING_SECONDS = 0.2
LISTED_SKIPS = 20
UNCARRIED = "compozy-uncarried"  # in a shadow repository: a note per adopted session whose checkpoints stayed behind


class Job:
    def __init__(self, session, kind, turn_id, work=None, hand_back=False):
        self.session, self.kind, self.turn_id = session, kind, turn_id
        self.work = work  # instead of recording: what to run on the worker (its answer is the job's event)
        self.hand_back = hand_back  # the caller records the event (claim), unless it gave up waiting first
        self.done = threading.Event()
        self.event = None  # the committed checkpoint event's content
        self._lock = threading.Lock()
        self._abandoned = False

    def claim(self):
        """A hand-back job's content, now the caller's to record; None when not taken yet (the worker records
        it when it is)."""
        with self._lock:
            self._abandoned = self.event is None
            return self.event

    def handed(self, content):
        """The worker's side: True when the caller will record the content, False when the worker must."""
        with self._lock:
            self.event = content
            return not self._abandoned


class Checkpointer:
    def __init__(self, services):
        self.services = services
        self._lock = threading.Lock()
        self._repos = {}      # (workspace_id, folder) -> ShadowRepo
        self._workers = {}    # workspace_id -> (queue, thread)
        self._last = {}       # session id -> the tree of its last checkpoint
        self._closing = False

    @property
    def enabled(self):
        return bool(self.services.config["checkpoints.enabled"])

    def folder(self, workspace_id):
        return self.services.home.checkpoints_dir / workspace_id

    def repo(self, record):
        key = (record.workspace_id, record.cwd)
        with self._lock:
            if key not in self._repos:
                self._repos[key] = ShadowRepo(self.folder(record.workspace_id), record.cwd,
                                              self.services.config["checkpoints.timeout"], run_captured)
            return self._repos[key]

    # -- the runner's hooks -------------------------------------------------------------------

    def turn_started(self, session, turn):
        """The start checkpoint; waits for it at most checkpoints.timeout (the turn goes on regardless)."""
        self._bounded(session, "start", turn.id)

    def turn_ended(self, session, turn):
        """The end checkpoint, taken before the turn's terminal event (bounded the same way): its content, for
        the runner to commit with that event; None when checkpoints are off or it came too late (the worker
        records it when it is taken)."""
        if not self.enabled:
            return None
        job = Job(session, "end", turn.id, hand_back=True)
        self._enqueue(session.record.workspace_id, job)
        job.done.wait(self.services.config["checkpoints.timeout"] + 1.0)
        return job.claim()

    def _bounded(self, session, kind, turn_id):
        if self.enabled:
            self.submit(session, kind, turn_id).done.wait(self.services.config["checkpoints.timeout"] + 1.0)

    def take(self, session, kind, turn_id=None):
        """A checkpoint taken now, waited for (a restore's undo point); its event's content."""
        job = self.submit(session, kind, turn_id)
        job.done.wait()
        return job.event

    def after_crash(self, record, log_, turn_id):
        """The end checkpoint of a turn the daemon died in, taken when the transcript is repaired (at the next
        boot, or by `session repair`): the folder as it is then, described but not recorded (the repair
        appends it before the turn's terminal error). None when checkpoints are off."""
        if not self.enabled:
            return None
        job = Job(None, "end", turn_id, work=lambda: {**self.capture_record(record, log_, "end"), "repaired": True})
        self._enqueue(record.workspace_id, job)
        job.done.wait()
        return job.event

    def carry(self, record, source, from_node):
        """An adopted session's checkpoints brought to this node (docs/fleet.md): its references, and the trees
        and files they reach, fetched from source (the shadow repository of its workspace in its old node's
        home, from_node's) into this node's, on the workspace's worker as a checkpoint is. How many references
        it has here now; None when they could not be carried (logged, and noted for the diffs and restores
        that will miss their trees: uncarried)."""
        job = Job(None, "carry", None, work=lambda: self._carry(record, source, from_node))
        self._enqueue(record.workspace_id, job)
        job.done.wait()
        return job.event

    def _carry(self, record, source, from_node):
        note = self._uncarried_note(record)
        if not (source / "HEAD").is_file():
            return 0  # the old node never took a checkpoint in that workspace
        try:
            carried = len(self.repo(record).fetch(source, record.id))
        except (ShadowError, OSError) as error:
            reason = getattr(error, "message", str(error))
            log.warning("session %s: its checkpoints were not carried from %s: %s", record.id, source, reason)
            make_private_dir(note.parent)
            write_private_json(note, {"from_node": from_node, "error": reason[:500]})
            return None
        note.unlink(missing_ok=True)  # an earlier adoption's failure, made good
        return carried

    def uncarried(self, record):
        """Why the session's checkpoints are not in this node's repository ({from_node, error}), or None: its
        adoption could not bring them over."""
        try:
            return json.loads(self._uncarried_note(record).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def _uncarried_note(self, record):
        return self.folder(record.workspace_id) / UNCARRIED / f"{record.id}.json"

    def settle(self, workspace_id, within=None):
        """Wait until the workspace's queued checkpoints are taken (a diff asked right after `done`)."""
        worker = self._workers.get(workspace_id)
        if worker is not None:
            marker = Job(None, None, None)
            worker[0].put(marker)
            marker.done.wait(within or self.services.config["checkpoints.timeout"] + 1.0)

    # -- the workers ----------------------------------------------------------------------------

    def submit(self, session, kind, turn_id):
        job = Job(session, kind, turn_id)
        self._enqueue(session.record.workspace_id, job)
        return job

    def _enqueue(self, workspace_id, job):
        with self._lock:
            worker = self._workers.get(workspace_id)
            if worker is None:
                jobs = queue.Queue()
                thread = self.services.threads.start(f"checkpoints-{workspace_id}", self._serve, workspace_id, jobs)
                worker = self._workers[workspace_id] = (jobs, thread)
            worker[0].put(job)

    def _serve(self, workspace_id, jobs):
        while True:
            try:  # once the daemon closes, a worker ends as soon as it has nothing left to do
                job = jobs.get(timeout=DRAINING_SECONDS if self._closing else IDLE_WORKER_SECONDS)
            except queue.Empty:
                with self._lock:
                    if jobs.empty():
                        self._workers.pop(workspace_id, None)
                        return
                continue
            if job is None:
                return
            try:
                if job.work is not None:
                    job.event = job.work()
                elif job.hand_back:
                    content = self.capture(job.session, job.kind)
                    if not job.handed(content):
                        job.session.append_event("checkpoint", content, job.turn_id)
                elif job.session is not None:
                    job.event = self._record(job.session, job.kind, job.turn_id)
            except Exception:  # noqa: BLE001 (a checkpoint never breaks anything else)
                log.exception("checkpoint of session %s failed", job.session.id if job.session else job.turn_id)
            finally:
                job.done.set()

    def _record(self, session, kind, turn_id):
        content = self.capture(session, kind)
        session.append_event("checkpoint", content, turn_id)
        return content

    def capture(self, session, kind):
        """Take the checkpoint and describe it (without recording it)."""
        return self.capture_record(session.record, session.log, kind)

    def capture_record(self, record, log_, kind):
        """capture, for a session's record and event log (a repair has no live session)."""
        config, started = self.services.config, self.services.clock.monotonic()
        try:
            repo = self.repo(record)
            snapshot = repo.snapshot(self._last_tree(record.id, log_), config["checkpoints.max_file_bytes"],
                                     config["checkpoints.max_files"])
            checkpoint_id = new_id("ckpt")
            repo.keep(record.id, checkpoint_id, snapshot.tree)
        except (ShadowError, OSError) as error:
            error = error if isinstance(error, ShadowError) else ShadowError("git_failed", str(error))
            log.warning("session %s: no %s checkpoint: %s", record.id, kind, error.message)
            return {"checkpoint_id": None, "kind": kind, "status": "failed", "reason": error.reason,
                    "message": error.message}
        self._last[record.id] = snapshot.tree
        return {"checkpoint_id": checkpoint_id, "kind": kind, "status": "taken", "tree": snapshot.tree,
                "files_changed": snapshot.changed, "files": snapshot.changes,
                "files_truncated": snapshot.changed > LISTED_CHANGES, "bytes": snapshot.bytes,
                "skipped": snapshot.skipped[:LISTED_SKIPS], "skipped_count": len(snapshot.skipped),
                "duration_ms": round((self.services.clock.monotonic() - started) * 1000, 1)}

    def _last_tree(self, session_id, log_):
        tree = self._last.get(session_id)
        if tree is None:
            taken = [e for e in log_.read_all(types=["checkpoint"]) if e["content"].get("tree")]
            tree = taken[-1]["content"]["tree"] if taken else None
        return tree

    # -- retention ------------------------------------------------------------------------------

    def gc(self, sessions):
        """Drop the references retention lets go (and those of sessions that are gone), then prune what no
        reference reaches, in every workspace's repository; what was done."""
        config, root = self.services.config, self.services.home.checkpoints_dir
        report = {"repositories": 0, "checkpoints_dropped": 0, "checkpoints_kept": 0, "bytes_before": 0,
                  "bytes_after": 0}
        for folder in sorted(root.iterdir()) if root.is_dir() else ():
            if not (folder / "HEAD").exists():
                continue
            repo = ShadowRepo(folder, folder, max(config["checkpoints.timeout"], 300.0), run_captured)
            refs = repo.refs()
            dropped = to_drop(refs, sessions, self.services.clock.wall(), config["checkpoints.keep_last"],
                              config["checkpoints.keep_for"])
            repo.drop(dropped)
            before, after = repo.prune()
            report["repositories"] += 1
            report["checkpoints_dropped"] += len(dropped)
            report["checkpoints_kept"] += len(refs) - len(dropped)
            report["bytes_before"] += before
            report["bytes_after"] += after
        log.info("checkpoints gc: %s", report)
        return report

    # -- observer signals -----------------------------------------------------------------------

    def removed(self, record):
        self._last.pop(record.id, None)
        self._uncarried_note(record).unlink(missing_ok=True)
        try:
            repo = self.repo(record)
            if repo.git_dir.exists():
                repo.drop(list(repo.refs(record.id)))
        except ShadowError as error:
            log.warning("the checkpoints of removed session %s stay: %s", record.id, error.message)

    def closing(self):
        """The daemon shuts down: the stops still end their turns, with end checkpoints; then each worker,
        its queue empty, ends instead of waiting for more."""
        self._closing = True
        with self._lock:
            for jobs, _ in self._workers.values():
                jobs.put(Job(None, None, None))  # wakes a worker waiting for work, to see it
