"""The runner's backends (:mod:`simdesign.runner.backends`) with what they need to know of analyses.

:mod:`simdesign.runner.backends` computes chunks on loky, fork, threading or Dask and knows nothing of
tests; this module adds the checks that do: which tests run embedded R (not on the threading or fork
backends, and only on single-threaded Dask workers that have R).
"""
from __future__ import annotations

import sys

from simdesign.core.errors import ConfigError, MissingBackendError
from simdesign.runner import backends as _runner
from simdesign.runner.backends import (BACKENDS, DASK_ADVICE, DEFAULT_BACKEND, DEFAULT_RETRIES,  # noqa: F401
                                       WAIT_FOR_WORKERS_SECONDS, BackendSpec, describe_error, lost_worker_errors,
                                       own_libpython_for_children)
from simdesign.runner.forked_pool import fork_available


class ChunkExecutor(_runner.ChunkExecutor):
    """:class:`simdesign.runner.backends.ChunkExecutor` whose Dask workers are checked for R when tests need it.

    Examples
    --------
    >>> from joblib import delayed
    >>> with ChunkExecutor(BackendSpec("threading", jobs=2)) as executor:
    ...     sorted(executor.run(delayed(abs)(x) for x in (-2, 1)))
    [1, 2]
    """

    def __init__(self, spec: BackendSpec, needs_r: bool = False):
        super().__init__(spec, needs_r, worker_check=_r_status)


def r_backed(analyses) -> list[str]:
    """Labels of the analyses (``AnalysisSpec``s) that run embedded R."""
    # the registry imports scipy & co.; the CLI imports this module early
    from simdesign.significance.base import resolve_analysis

    return [spec.label for spec in analyses if resolve_analysis(spec.name).needs == "R"]


def check_backend(spec: BackendSpec, analyses) -> None:
    """Refuse settings that cannot work, before any work starts.

    Parameters
    ----------
    spec : BackendSpec
    analyses : sequence of AnalysisSpec
        The config's tests.

    Raises
    ------
    ConfigError
        Inconsistent options, or R-backed tests on the ``threading`` backend.
    MissingBackendError
        ``dask`` without dask.distributed installed.

    Examples
    --------
    >>> from simdesign.studies.rates.config import AnalysisSpec
    >>> check_backend(BackendSpec("threading"), [AnalysisSpec(name="clmm", label="clmm", options={})])
    Traceback (most recent call last):
    ...
    simdesign.core.errors.ConfigError: The threading backend cannot run the R-backed test(s) clmm: ...
    """
    problems = spec.problems()
    uses_r = r_backed(analyses)
    if spec.name == "threading" and uses_r:
        # rpy2 serialises calls with a lock, but R itself checks its C stack against the main
        # thread's and keeps global state: calls from worker threads crash or fail at random.
        problems.append(f"The threading backend cannot run the R-backed test(s) {', '.join(uses_r)}: embedded R "
                        "is not thread-safe; use --backend loky (processes, one R each) or --backend dask")
    if spec.name == "fork" and uses_r:
        # an embedded R session does not survive a fork of the process that started it
        problems.append(f"The fork backend cannot run the R-backed test(s) {', '.join(uses_r)}; "
                        "use --backend loky (processes, one R each) or --backend dask")
    if spec.name == "fork" and not fork_available():
        problems.append(f"The fork backend needs Linux (fork start method); this is {sys.platform}: use --backend loky")
    if problems:
        raise ConfigError(problems)
    if spec.name == "dask":
        try:
            import distributed  # noqa: F401 -- only whether it imports
        except ImportError as exc:
            raise MissingBackendError(f"--backend dask needs dask.distributed ({exc}); {DASK_ADVICE}") from exc


def _r_status() -> tuple[bool, str]:
    # Runs on each Dask worker; imported lazily so that a worker without rpy2 can still answer.
    from simdesign.significance.rsession import r_available

    return r_available()
