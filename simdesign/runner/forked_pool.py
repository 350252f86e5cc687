"""The ``fork`` backend: local worker processes forked from the coordinating process (Linux).

A loky worker is a fresh interpreter that imports the package, numpy, pandas and scipy.special again
before its first chunk: about 1.4 CPU seconds per worker, which on the classical Figure-4 grid
(8000 trials of about 1.5 ms each) is a tenth of the run's work. A forked worker starts with
every module already imported. The tasks and their results are pickled as for loky (the task with
cloudpickle, so analyses registered in the coordinating process, lambdas included, travel with the
chunk); results are the same whichever backend runs them (seeds are per design and trial).

Not offered where ``fork`` is unsafe or absent: on macOS and Windows, and for tests that run
embedded R (an R session does not survive a fork). A worker that dies breaks the pool
(``BrokenProcessPool``, one of :func:`simdesign.runner.backends.lost_worker_errors`): the engine
then plans the unsaved chunks again and resubmits them to a new pool, as for a lost loky worker.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Iterable, Iterator

from simdesign.runner.workers import local_jobs, watch_coordinator

# Tasks queued per worker beyond the one it runs: enough that a worker never waits for the coordinator
# (which stores a finished chunk before it submits the next), few enough that an interrupted run has
# little queued work to cancel.
QUEUED_PER_WORKER = 2


def fork_available() -> bool:
    """Whether this platform has a safe ``fork`` start method (Linux)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def pool_size(jobs: int) -> int:
    """joblib's reading of ``n_jobs``: a positive count, or -1 for all cores, -2 for all but one, ..."""
    from joblib import effective_n_jobs  # the loky backend's reading, cores as loky counts them

    return effective_n_jobs(local_jobs(jobs, "fork"))


def _worker_signals(coordinator: int) -> None:
    # A forked worker inherits the coordinator's handlers (the CLI turns SIGTERM into an interrupt): restore
    # the default SIGTERM, and leave Ctrl-C (sent to the whole process group) to the coordinator, which stops
    # the workers itself. A coordinator killed outright cannot: the worker then ends by itself.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_coordinator(coordinator)


def _call_pickled(payload: bytes):
    function, args, kwargs = pickle.loads(payload)
    return function(*args, **kwargs)


def forked_results(tasks: Iterable, jobs: int) -> Iterator:
    """Compute joblib ``delayed`` tasks in forked worker processes, yielding results as they finish.

    Parameters
    ----------
    tasks : iterable of (function, args, kwargs)
        Consumed lazily, a few per worker ahead.
    jobs : int
        Workers, as joblib's ``n_jobs``.

    Yields
    ------
    The tasks' return values, in completion order.
    """
    import cloudpickle  # a dependency of joblib; what loky pickles tasks with

    workers = pool_size(jobs)
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_worker_signals,
                               initargs=(os.getpid(),))
    finished = False
    try:
        pending = set()
        remaining = iter(tasks)

        def fill():
            for function, args, kwargs in remaining:
                pending.add(pool.submit(_call_pickled, cloudpickle.dumps((function, args, kwargs))))
                if len(pending) >= workers * (1 + QUEUED_PER_WORKER):
                    return

        fill()
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                pending.discard(future)
                result = future.result()  # a task's exception (or BrokenProcessPool) propagates
                fill()
                yield result
        finished = True
    finally:
        if not finished:  # an error, an interrupt, or a consumer that stopped early: stop the workers now
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.kill()
        pool.shutdown(wait=finished, cancel_futures=True)
