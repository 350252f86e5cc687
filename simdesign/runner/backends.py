"""Where the chunks of a run are computed: local processes, local threads, or a Dask cluster (the runner's).

The engine cuts a run into chunks (consecutive trials of one design) and
stores every finished chunk itself, atomically, in the coordinating process.
A backend only computes chunks and hands their results back in completion
order, so the choice of backend changes neither the results (seeds are per
design and trial, :mod:`simdesign.core.seeds`) nor what survives a crash: a lost
worker costs only the chunk it was computing.

Backends
--------
``loky`` (default)
    joblib's pool of local worker processes (``jobs`` of them).
``fork``
    Local worker processes forked from the coordinating process (Linux only;
    :mod:`simdesign.studies.forked_pool`): no worker imports the package
    again. Refused for tests that run embedded R.
``threading``
    joblib's thread pool, in the coordinating process. Refused for tests that
    run embedded R (``AnalysisInfo.needs == 'R'``): R is not thread-safe.
``dask``
    joblib's Dask backend on a ``dask.distributed`` cluster: a running
    scheduler (``scheduler='tcp://host:8786'``) or, without an address, a
    ``LocalCluster`` of ``workers`` single-threaded worker processes started
    for the run and closed after it. Dask reschedules the task of a worker
    that dies on another worker (up to the scheduler's
    ``distributed.scheduler.allowed-failures``); should a chunk still fail
    because workers died (``KilledWorker``), the engine plans the unsaved
    chunks again and resubmits them, up to ``retries`` times.

Examples
--------
>>> spec = BackendSpec("threading", jobs=2)
>>> spec.problems()
[]
>>> BackendSpec("loky", scheduler="tcp://10.0.0.1:8786").problems()
['--scheduler needs --backend dask; got --backend loky']
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import sysconfig
from dataclasses import dataclass
from typing import Iterable, Iterator

from joblib import Parallel, parallel_config

from simdesign.core.errors import ConfigError, MissingBackendError
from simdesign.runner.workers import available_cores, local_jobs, watch_coordinator
from simdesign.runner.forked_pool import fork_available, forked_results

BACKENDS = ("loky", "threading", "dask", "fork")
DEFAULT_BACKEND = "loky"
DEFAULT_RETRIES = 3
WAIT_FOR_WORKERS_SECONDS = 60.0
DASK_ADVICE = "install it with `pip install -e '.[dask]'` (dask[distributed]) in the venv of every machine"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BackendSpec:
    """How to compute the chunks of a run.

    Parameters
    ----------
    name : {'loky', 'threading', 'dask', 'fork'}
    jobs : int, default -1
        Size of the local pool for ``loky``, ``fork`` and ``threading`` (-1: all
        cores). Ignored by ``dask``, which uses every worker thread of the
        cluster.
    scheduler : str, optional
        Address of a running Dask scheduler (``dask`` only).
    workers : int, optional
        Worker processes of the ``LocalCluster`` started when no scheduler is
        given (``dask`` only; default: all cores).
    retries : int, default 3
        How often the engine resubmits the unsaved chunks after losing
        workers made the run fail.
    wait_for_workers : float, default 60
        Seconds to wait for the first Dask worker to connect.
    """

    name: str = DEFAULT_BACKEND
    jobs: int = -1
    scheduler: str | None = None
    workers: int | None = None
    retries: int = DEFAULT_RETRIES
    wait_for_workers: float = WAIT_FOR_WORKERS_SECONDS

    def problems(self) -> list[str]:
        """Every inconsistency of these settings, as messages for a :class:`ConfigError`."""
        found = []
        if self.name not in BACKENDS:
            found.append(f"The backend must be one of {', '.join(BACKENDS)}; got {self.name!r}")
        if self.name != "dask":
            if self.scheduler:
                found.append(f"--scheduler needs --backend dask; got --backend {self.name}")
            if self.workers is not None:
                found.append(f"--workers needs --backend dask (use --jobs for the local pool); got --backend {self.name}")
        if self.scheduler and self.workers is not None:
            found.append("--workers sizes the local cluster started when no --scheduler is given; "
                         "a running scheduler has the workers that connected to it: give one of the two")
        if self.workers is not None and self.workers < 1:
            found.append(f"--workers must be a positive integer; got {self.workers}")
        if self.jobs == 0:
            found.append("--jobs must be a positive number of workers or negative (-1: all cores); got 0")
        if self.retries < 0:
            found.append(f"The retries must be 0 or more; got {self.retries}")
        return found


def lost_worker_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning "a worker died", after which resubmitting the unsaved chunks is safe.

    Anything else raised by a chunk is a bug (analyses turn their own failures
    into result rows), so it propagates instead of being retried.
    """
    from concurrent.futures.process import BrokenProcessPool

    from joblib.externals.loky.process_executor import TerminatedWorkerError

    errors: list[type[BaseException]] = [TerminatedWorkerError, BrokenProcessPool]
    # Only a Dask run raises KilledWorker, and it has imported distributed by now (ChunkExecutor): importing it
    # for a local run would cost the coordinator 0.5-1 s before the first chunk is sent.
    if "distributed" in sys.modules:
        with contextlib.suppress(ImportError):
            from distributed.scheduler import KilledWorker

            errors.append(KilledWorker)
    return tuple(errors)


def describe_error(exc: BaseException) -> str:
    """``'Type: message'`` for a log line, even when the exception's ``str()`` fails.

    ``KilledWorker`` formats the worker it names, which is absent in some
    code paths of distributed.
    """
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 -- a message is a nicety; never let it hide the error being reported
        text = ", ".join(map(repr, getattr(exc, "args", ())))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@contextlib.contextmanager
def own_libpython_for_children() -> Iterator[None]:
    """Let child Python processes load this interpreter's libpython.

    Starting embedded R (even just to check that it is installed) puts R's
    library path, which includes the system's library directory, into
    ``LD_LIBRARY_PATH``. A Python built with a shared libpython outside that
    directory (pyenv, conda) then starts its children -- Dask nannies and
    workers, loky workers -- with the system's libpython of the same minor
    version but another patch level, and its extension modules fail to
    import (``_ssl``: undefined symbol). Putting our own library directory
    first for the duration of the run avoids that.
    """
    libdir = sysconfig.get_config_var("LIBDIR")
    current = os.environ.get("LD_LIBRARY_PATH")
    needed = (sys.platform.startswith("linux") and bool(sysconfig.get_config_var("Py_ENABLE_SHARED"))
              and current and libdir and os.path.isdir(libdir) and current.split(os.pathsep)[0] != libdir)
    if not needed:
        yield
        return
    os.environ["LD_LIBRARY_PATH"] = os.pathsep.join([libdir, current])
    try:
        yield
    finally:
        os.environ["LD_LIBRARY_PATH"] = current


def _call_in_r_ready_context(function, *args, **kwargs):
    """Call ``function`` with rpy2's conversion rules set, as they are in a process's main thread.

    rpy2 keeps its conversion rules in a ``ContextVar`` that it sets once,
    when ``rpy2.robjects`` is imported, in the context of the importing code.
    A Dask worker runs every task in a fresh copy of its event loop's context,
    so after the task that started R, later tasks would see no rules and
    every R call would fail (``NotImplementedError: Conversion rules ...
    missing``). Setting them in the task's own context copy restores what a
    loky worker has.
    """
    robjects = sys.modules.get("rpy2.robjects")
    if robjects is not None:
        robjects.conversion.set_conversion(robjects.default_converter)
    return function(*args, **kwargs)


def _reporting_dask_backend():
    """joblib's Dask backend, made to report tasks that fail in Dask itself.

    joblib (1.6) wraps each task so that an exception raised by the task
    comes back as a result, and it learns about results only through a
    callback. A task that fails in Dask instead -- ``KilledWorker`` after its
    workers died ``allowed-failures`` times, or a cancelled future -- only
    sets the backend's future, so the callback never fires and
    ``Parallel`` waits forever. Passing the exception to the callback makes
    joblib raise it, and the engine then resubmits the unsaved chunks.
    """
    from joblib._dask import DaskDistributedBackend

    class ReportingDaskBackend(DaskDistributedBackend):
        def submit(self, func, callback=None):
            future = super().submit(func, callback)
            if callback is not None:
                def report_failure(done):
                    # A successful task already called back; only Dask-level failures reach here.
                    if not done.cancelled() and done.exception() is not None:
                        callback(done.exception())
                future.add_done_callback(report_failure)
            return future

    return ReportingDaskBackend


class ChunkExecutor:
    """Computes chunk tasks on one backend; a context manager owning what it starts.

    Parameters
    ----------
    spec : BackendSpec
    needs_r : bool
        Whether the run has R-backed tests: then every Dask worker must have
        R and one thread (a worker process runs one R session).
    worker_check : callable, optional
        Run on every Dask worker when ``needs_r``: returns ``(ok, message)`` (whether R works there).

    Examples
    --------
    >>> from joblib import delayed
    >>> with ChunkExecutor(BackendSpec("threading", jobs=2)) as executor:
    ...     sorted(executor.run(delayed(abs)(x) for x in (-2, 1)))
    [1, 2]
    """

    def __init__(self, spec: BackendSpec, needs_r: bool = False, worker_check=None):
        self.spec = spec
        self.needs_r = needs_r
        self.worker_check = worker_check
        self.client = None
        self._cluster = None
        self._workers_at_start: set[str] = set()
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "ChunkExecutor":
        self._stack.enter_context(own_libpython_for_children())
        try:
            if self.spec.name == "dask":
                self._open_dask()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self._stack.close()

    def _open_dask(self) -> None:
        from dask.distributed import Client, LocalCluster

        if self.spec.scheduler:
            self.client = self._stack.enter_context(Client(self.spec.scheduler, set_as_default=False))
        else:
            # One thread per worker process: R-backed tests need it, and numpy-heavy chunks
            # gain nothing from threads that compete for the GIL. Port 0: never clash with another cluster.
            self._cluster = self._stack.enter_context(LocalCluster(
                n_workers=local_jobs(self.spec.workers or available_cores(), "Dask LocalCluster"),
                threads_per_worker=1, processes=True,
                dashboard_address=":0"))
            self.client = self._stack.enter_context(Client(self._cluster, set_as_default=False))
        try:
            self.client.wait_for_workers(1, timeout=self.spec.wait_for_workers)
        except TimeoutError as exc:
            raise MissingBackendError(
                f"No Dask worker connected to the scheduler {self.client.scheduler.address} within "
                f"{self.spec.wait_for_workers:.0f} s; start some with `dask worker ADDRESS --nthreads 1`") from exc
        workers = self.client.scheduler_info(n_workers=-1)["workers"]
        self._workers_at_start = set(workers)
        if self.needs_r:
            self._check_r_workers(workers)

    def _check_r_workers(self, workers: dict) -> None:
        threaded = sorted(address for address, info in workers.items() if info.get("nthreads", 1) > 1)
        if threaded:
            raise ConfigError(
                f"R-backed tests need single-threaded Dask workers (one R session per process); "
                f"{len(threaded)} worker(s) have more threads, e.g. {threaded[0]}. "
                "Start workers with `dask worker ADDRESS --nworkers N --nthreads 1`")
        if self.worker_check is None:
            return
        missing = {address: message for address, (ok, message) in self.client.run(self.worker_check).items()
                   if not ok}
        if missing:
            address, message = next(iter(missing.items()))
            raise MissingBackendError(f"{len(missing)} Dask worker(s) cannot run R, e.g. {address}: {message}")

    def workers_lost(self) -> int:
        """How many of the Dask workers present at the start have left the cluster (0 for local pools).

        Dask recomputes the chunk a departed worker was running; this count
        only tells the user that it happened. A restarted worker comes back
        under a new address, so it counts as lost.
        """
        if self.client is None:
            return 0
        return len(self._workers_at_start - set(self.client.scheduler_info(n_workers=-1)["workers"]))

    def run(self, tasks: Iterable) -> Iterator:
        """Compute joblib ``delayed`` tasks, yielding their results as they finish.

        Parameters
        ----------
        tasks : iterable of joblib delayed calls
            Consumed lazily: joblib keeps only a few tasks per worker queued.

        Yields
        ------
        The tasks' return values, in completion order.
        """
        if self.spec.name == "dask":
            # A chunk is already a sizeable unit of work and the unit the coordinator stores:
            # batching several into one Dask task would only delay their storage. All chunks go to
            # the scheduler at once, so a worker never idles while the coordinator stores a result.
            backend = _reporting_dask_backend()(client=self.client, wait_for_workers_timeout=self.spec.wait_for_workers)
            tasks = ((_call_in_r_ready_context, (function, *args), kwargs) for function, args, kwargs in tasks)
            with parallel_config(backend=backend):
                yield from Parallel(n_jobs=-1, batch_size=1, pre_dispatch="all",
                                    return_as="generator_unordered")(tasks)
        elif self.spec.name == "fork":
            yield from forked_results(tasks, self.spec.jobs)
        elif self.spec.name == "loky":
            # Every worker ends by itself once the coordinator is gone (a SIGKILLed coordinator cannot stop it).
            with parallel_config(backend="loky", initializer=watch_coordinator, initargs=(os.getpid(),)):
                yield from Parallel(n_jobs=local_jobs(self.spec.jobs, "loky"), return_as="generator_unordered")(tasks)
        else:
            yield from Parallel(n_jobs=local_jobs(self.spec.jobs, self.spec.name), backend=self.spec.name,
                                return_as="generator_unordered")(tasks)
