"""The one chunk loop: compute planned chunks on a backend, save each as it finishes, retry lost workers.

Every study kind runs its trials through :func:`run_chunks`: it supplies what is missing (``plan``),
how to compute one chunk (``task``) and how to keep a finished one (``save``); the loop knows nothing
of rates, panels or metrics. Only the coordinating process saves, so a chunk is stored once however
often it was computed.
"""
from __future__ import annotations

import logging
import sys
from typing import Callable, Iterable

from simdesign.core.errors import ConfigError
from simdesign.runner.backends import DEFAULT_RETRIES, BackendSpec, ChunkExecutor, describe_error, lost_worker_errors
from simdesign.runner.forked_pool import fork_available

log = logging.getLogger(__name__)


def run_chunks(executor: ChunkExecutor, plan: Callable[[], Iterable], task: Callable, save: Callable,
               retries: int = DEFAULT_RETRIES, order: Callable[[Iterable], Iterable] | None = None) -> None:
    """Compute every chunk ``plan()`` returns on ``executor`` and ``save`` each as it finishes.

    After losing workers made the backend fail, the chunks not yet saved are planned anew (``plan()``
    must consult what ``save`` stored) and resubmitted, at most ``retries`` times.

    Parameters
    ----------
    executor : ChunkExecutor
        An open executor.
    plan : callable
        ``plan()`` -> iterable of chunks still missing (consumed lazily).
    task : callable
        ``task(chunk)`` -> a joblib ``delayed`` call returning ``(chunk, result)``.
    save : callable
        ``save(chunk, result)``, called in this process.
    retries : int
    order : callable, optional
        Reorders the planned chunks (e.g. the slowest first).
    """
    lost_worker = lost_worker_errors()
    retried = 0
    while True:
        chunks = plan() if order is None else order(plan())
        try:
            for chunk, result in executor.run(task(chunk) for chunk in chunks):
                save(chunk, result)
            return
        except lost_worker as exc:
            if retried >= retries:
                raise
            retried += 1
            # The store knows exactly what is saved: plan the rest anew rather than track futures.
            log.warning("Lost a worker (%s); resubmitting the %d unsaved chunk(s), retry %d of %d",
                        describe_error(exc), sum(1 for _ in plan()), retried, retries)


def backend_spec(backend, jobs: int) -> BackendSpec:
    """A checked :class:`BackendSpec` from a backend name (with ``jobs``) or a spec.

    Raises
    ------
    ConfigError
        Inconsistent settings, or the fork backend where the platform has no safe fork.
    """
    spec = backend if isinstance(backend, BackendSpec) else BackendSpec(backend, jobs)
    problems = spec.problems()
    if spec.name == "fork" and not fork_available():
        problems.append(f"The fork backend needs Linux (fork start method); this is {sys.platform}: use --backend loky")
    if problems:
        raise ConfigError(problems)
    return spec
