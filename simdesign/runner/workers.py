"""Local worker processes: as many as the machine has cores, and none outliving its coordinator.

* :func:`local_jobs` caps a pool size far above the cores (``--jobs 100000``), which would only start
  processes that compete for the same cores, at the core count with a note. Remote Dask schedulers
  decide their own workers and are not capped.
* :func:`watch_coordinator` is every local worker's initializer (loky and fork): a daemon thread that
  ends the worker within :data:`WATCH_SECONDS` once its coordinator is gone. A coordinator killed
  with SIGKILL cannot stop its pool itself, and an idle loky worker would otherwise wait for tasks
  (and keep its resource tracker alive) indefinitely.
"""
from __future__ import annotations

import logging
import os
import threading
import time

log = logging.getLogger(__name__)

# How often a worker checks that its coordinator is alive; it ends within about this many seconds.
WATCH_SECONDS = 0.5
_watching = False
_noted: set = set()  # (jobs, backend) already noted


def available_cores() -> int:
    """Cores this process may use (joblib's count: affinity and cgroup quotas included)."""
    from joblib import cpu_count

    return max(1, cpu_count())


def local_jobs(jobs: int, backend: str = "loky") -> int:
    """``jobs`` for a local pool, capped at the cores with a logged note when it asks for more.

    Negative values keep joblib's meaning (-1: all cores, -2: all but one) and are returned unchanged.

    Parameters
    ----------
    jobs : int
    backend : str
        Named in the note.
    """
    cores = available_cores()
    if jobs > cores:
        if (jobs, backend) not in _noted:  # once per process: a plan opens its pool many times
            _noted.add((jobs, backend))
            log.warning("--jobs %d is more than the %d core(s) of this machine: using %d %s workers (more would "
                        "only compete for the same cores)", jobs, cores, cores, backend)
        return cores
    return jobs


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


def watch_coordinator(coordinator: int) -> None:
    """Worker initializer: end this process (exit code 1) soon after its parent, the coordinator, is gone.

    A process whose parent dies is re-parented, so a changed parent id means the coordinator is gone (a
    check that needs no signal and no permission).

    Parameters
    ----------
    coordinator : int
        The coordinating process's id: nothing is watched in that process itself.
    """
    global _watching
    if _watching or os.getpid() == coordinator:  # once per process; never in the coordinator itself
        return
    _watching = True
    parent = os.getppid()

    def watch() -> None:
        # A worker that starts slowly (imports on a loaded machine) can reach this initializer after its
        # coordinator was killed and it was re-parented: then its parent never changes again, so the
        # coordinator's own pid is watched too.
        while os.getppid() == parent and _alive(coordinator):
            time.sleep(WATCH_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="simdesign-coordinator-watch", daemon=True).start()
