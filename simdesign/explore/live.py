"""Live runs: the engine's chunks computed in worker processes, the summary refined as trials arrive.

A :class:`LiveRun` computes the trials of one config in order, in chunks of the engine's own
:func:`~simdesign.studies.rates.engine.simulate_chunk` (same seeds, same analyses), and summarises the
trials done so far with :func:`~simdesign.studies.rates.summary.summarise`: at ``n`` trials its summary
is the one ``simdesign.simulate(config, trials=n)`` gives, and it narrows as the run goes on.

Why a pool of our own rather than the engine's joblib backends: the page must be able to drop a run
at any moment (a control changed, or Cancel), including a mixed-model fit in flight that can take
minutes; :class:`multiprocessing.pool.Pool` can be terminated, and a run hands it at most one chunk
per worker at a time, so dropping a run leaves no queue behind.
"""
from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
import time
from collections import OrderedDict

import pandas as pd
import cloudpickle  # a dependency of joblib, which the engine needs

from simdesign.core.estimands import headline_estimand, role_name
from simdesign.significance.classical import CLASSICAL_TESTS
from simdesign.core.errors import ConfigError, MissingBackendError
from simdesign.studies.rates.engine import Chunk, check_backends, chunk_registry, simulate_chunk
from simdesign.studies.rates.method_specs import DEFAULT_METHODS
from simdesign.studies.rates.summary import summarise

log = logging.getLogger(__name__)

# Trials per chunk: small, so the first result comes early and a dropped run wastes little. Results do not
# depend on the chunk size (the engine's seeds are per trial).
CLASSICAL_CHUNK_TRIALS = 10
SLOW_CHUNK_TRIALS = 1
# The summary is recomputed at most this often while trials arrive (it takes ~0.1 s per call).
SUMMARY_INTERVAL_SECONDS = 0.4
# A cancelled run's chunks in flight may finish within this time; after it the worker processes are killed.
CANCEL_GRACE_SECONDS = 1.0
# The first trials whose arrival time the page reports: the 2-second budget for classical tests.
FIRST_STAGE_TRIALS = 200
CLOSE_SECONDS = 10.0  # stopping the workers when the server ends takes at most this long
DEATH_WAIT_SECONDS = 0.25  # a signal to the process group reaches the workers within this time of the server
KEPT_RUNS = 20  # finished runs kept, so going back to an earlier setting shows its results at once

def shown_estimands() -> tuple[str, ...]:
    """The rates the page shows: the headline rates under the null and an effect, and the failure share."""
    return headline_estimand(True), headline_estimand(False), role_name("failure_share")


def _warm_up() -> None:
    """Worker start-up: import the engine and the analyses once, before the first chunk arrives."""
    import simdesign.significance  # noqa: F401
    import simdesign.studies.rates.engine  # noqa: F401


def _start_worker(server: int) -> None:
    """A worker ignores Ctrl-C, which a terminal sends to the server and its workers alike: the server stops
    them (an idle worker dying on it would hold the pool's task lock, and the server would wait for it). It
    ends by itself soon after the server is gone, even when the server was killed (no orphans)."""
    from simdesign.runner.workers import watch_coordinator

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_coordinator(server)
    _warm_up()


def _stop_pool(pool) -> None:
    pool.terminate()
    pool.join()


def _chunk_job(payload: bytes):
    # cloudpickle (as joblib's loky backend): the registry's analyses include lambdas, which pickle refuses
    model, effect, seed, chunk, registry = cloudpickle.loads(payload)
    return simulate_chunk(model, effect, seed, chunk, registry)


class _Done:
    """The result of a chunk computed in this process (``workers=0``), shaped like an AsyncResult."""

    def __init__(self, function, args):
        try:
            self._value, self._error = function(*args), None
        except Exception as exc:  # noqa: BLE001 -- handed to the run, which reports it
            self._value, self._error = None, exc

    def ready(self) -> bool:
        return True

    def get(self, timeout=None):
        if self._error is not None:
            raise self._error
        return self._value


class ChunkPool:
    """Worker processes for chunks (``workers=0``: compute in the calling thread, for tests and debugging)."""

    def __init__(self, workers: int = 2):
        self.workers = workers
        self._pool = None
        self._lock = threading.Lock()
        self._warm = threading.Event()

    def start(self) -> None:
        """Start the workers now (they import the engine while the page loads)."""
        with self._lock:
            if self._pool is None and self.workers > 0:
                self._warm.clear()
                # spawn: a fork of a threaded web server may copy a lock held by another thread
                context = multiprocessing.get_context("spawn")
                self._pool = context.Pool(self.workers, initializer=_start_worker, initargs=(os.getpid(),))
                warm = self._warm
                self._pool.apply_async(_warm_up, callback=lambda _: warm.set())

    def submit(self, args: tuple):
        payload = cloudpickle.dumps(args)
        self.start()
        # Until a worker has imported the engine (seconds on a loaded machine), this process computes: it
        # has everything imported, so the first result does not wait for the workers' start.
        if self.workers == 0 or not self._warm.is_set():
            return _Done(_chunk_job, (payload,))
        with self._lock:
            return self._pool.apply_async(_chunk_job, (payload,))

    def restart(self) -> None:
        """Kill the workers (and whatever they compute) and start new ones."""
        with self._lock:
            old, self._pool = self._pool, None
        if old is not None:
            threading.Thread(target=_stop_pool, args=(old,), daemon=True).start()
        self.start()

    def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Stop the workers (within ``timeout`` seconds, whatever happened to them)."""
        with self._lock:
            old, self._pool = self._pool, None
        if old is None:
            return
        workers = list(getattr(old, "_pool", ()))
        # A signal to the whole process group (SIGTERM from 'timeout' or a service manager) kills the workers
        # a moment after it stops the server. A worker killed while waiting for a task may hold the pool's task
        # lock, on which Pool.terminate waits for ever: when one has died, the rest are killed at once and
        # terminate is only started (it unregisters the pool's exit handler, which would wait on the lock too).
        died = bool(workers) and bool(multiprocessing.connection.wait([w.sentinel for w in workers],
                                                                      DEATH_WAIT_SECONDS))
        if died:
            self._kill_workers(timeout)
        stopper = threading.Thread(target=_stop_pool, args=(old,), daemon=True)
        stopper.start()
        stopper.join(DEATH_WAIT_SECONDS if died else timeout)
        if stopper.is_alive() and not died:
            # a worker was killed while waiting for a task after the check above: the same lock
            self._kill_workers(timeout)

    @staticmethod
    def _kill_workers(timeout: float) -> None:
        for child in multiprocessing.active_children():
            child.kill()
            child.join(timeout)


def is_classical(config) -> bool:
    """Only model-free tests (milliseconds per trial): the run answers within seconds."""
    return all(spec.name in CLASSICAL_TESTS for spec in config.analyses)


def null_companion(config):
    """The same study under the null (effect zero): its type I errors are shown beside a run's power.

    Same design, tests, method, seed and trials; only the effect differs, so its rates are those of
    ``simdesign run`` with ``effect: zero`` and the same seed. A liberal test's power means little.
    """
    return dataclasses.replace(config, effect="zero")


class _Stream:
    """The trials of one config within a live run, gathered in trial order and summarised."""

    def __init__(self, config):
        self.config = config
        self.frames: dict[int, tuple] = {}  # first trial -> (stop trial, rows) of finished chunks
        self.next_trial = 0  # the trials 0..next_trial-1 are in the prefix
        self.prefix: list[pd.DataFrame] = []
        self.summary: pd.DataFrame | None = None
        self.trials_done = 0

    def extend_prefix(self) -> bool:
        """Move finished chunks that continue the trials 0..n-1 into the prefix."""
        grew = False
        while self.next_trial in self.frames:
            stop, frame = self.frames.pop(self.next_trial)
            self.prefix.append(frame)
            self.next_trial = stop
            grew = True
        return grew

    def summarise(self):
        """The summary of the trials in the prefix (None when it is the one already made)."""
        done = self.next_trial
        if done == 0 or (done == self.trials_done and self.summary is not None):
            return None
        return summarise(dataclasses.replace(self.config, trials=done), pd.concat(self.prefix, ignore_index=True))


class LiveRun:
    """One config's trials, computed in order and summarised as they arrive.

    A run with an effect (power) also computes its :func:`null_companion`, chunk for chunk alongside,
    so the page shows each test's type I error beside its power.

    Parameters
    ----------
    config : SimulationConfig
        One design (the explorer's); its ``trials`` is where the run stops.
    pool : ChunkPool
    key : str
        The run's name for the page.
    """

    def __init__(self, config, pool: ChunkPool, key: str = ""):
        self.config = config
        self.key = key
        self.pool = pool
        self.classical = is_classical(config)
        self.status = "running"
        self.message = ""
        self.started = time.perf_counter()
        self.finished_at: float | None = None
        self.first_result_seconds: float | None = None
        self.first_stage_seconds: float | None = None
        self.trials_done = 0
        self.summary: pd.DataFrame | None = None
        self.null_trials_done = 0
        self.null_summary: pd.DataFrame | None = None  # the companion's (power runs only)
        self._streams = [_Stream(config)] + ([] if config.is_null else [_Stream(null_companion(config))])
        self._after: LiveRun | None = None
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"live-run-{key[:8]}")

    def start(self, after: "LiveRun | None" = None) -> "LiveRun":
        self._after = after
        self._thread.start()
        return self

    def cancel(self) -> None:
        self._cancel.set()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self.status == "running"

    def _chunks(self):
        """(stream, chunk) pairs: the engine's chunks of a run with nothing stored (as ``plan_chunks(config,
        None, trials)``) for each stream, the streams' chunks of the same trials one after the other; made one
        at a time, so that a huge number of trials costs no memory before it is computed."""
        size = CLASSICAL_CHUNK_TRIALS if self.classical else SLOW_CHUNK_TRIALS
        work = tuple(self.config.work_specs)  # one item per (test, method), as the engine's plan_chunks
        for design in self.config.designs:
            for start in range(0, self.config.trials, size):
                for stream in self._streams:
                    yield stream, Chunk(design, start, min(start + size, self.config.trials), work)

    def _run(self) -> None:
        try:
            if self._after is not None:
                self._after.join()  # one run at a time on the pool: the previous one leaves first
            check_backends(self.config)
            self._compute(self._chunks())
        except (ConfigError, MissingBackendError) as exc:
            self._finish("error", str(exc))
        except Exception as exc:  # noqa: BLE001 -- the page shows it; the server goes on
            log.exception("live run failed")
            self._finish("error", f"{type(exc).__name__}: {exc}")

    def _compute(self, chunks) -> None:
        pending = iter(chunks)
        upcoming = next(pending, None)
        in_flight: list = []
        limit = max(self.pool.workers, 1)
        last_summary = 0.0
        while upcoming is not None or in_flight:
            if self._cancel.is_set():
                self._drop(in_flight)
                self._finish("cancelled", f"cancelled after {self.trials_done} of {self.config.trials} trials")
                return
            while upcoming is not None and len(in_flight) < limit:
                (stream, chunk), upcoming = upcoming, next(pending, None)
                config = stream.config
                args = (config.model, config.effect, config.seed, chunk, chunk_registry(chunk.analyses))
                in_flight.append((stream, chunk, self.pool.submit(args)))
            done = [item for item in in_flight if item[2].ready()]
            if not done:
                time.sleep(0.02)
                continue
            for item in done:
                in_flight.remove(item)
                stream, chunk, result = item
                stream.frames[chunk.first_trial] = (chunk.stop_trial, result.get())
            grew = [stream.extend_prefix() for stream in self._streams]
            now = time.perf_counter()
            if any(grew) and (now - last_summary >= SUMMARY_INTERVAL_SECONDS or self.first_result_seconds is None
                              or (self.first_stage_seconds is None
                                  and self._streams[0].next_trial >= self._first_stage())):
                self._summarise()
                last_summary = time.perf_counter()
        self._summarise()
        for stream in self._streams:
            stream.prefix = []  # the summary is all a finished run shows
        self._finish("done", "")

    def _first_stage(self) -> int:
        return min(FIRST_STAGE_TRIALS, self.config.trials)

    def _summarise(self) -> None:
        summaries = [stream.summarise() for stream in self._streams]
        elapsed = time.perf_counter() - self.started
        with self._lock:
            for stream, summary in zip(self._streams, summaries):
                if summary is not None:
                    stream.summary, stream.trials_done = summary, stream.next_trial
            main = self._streams[0]
            self.summary, self.trials_done = main.summary, main.trials_done
            if len(self._streams) > 1:
                self.null_summary, self.null_trials_done = self._streams[1].summary, self._streams[1].trials_done
            if self.trials_done and self.first_result_seconds is None:
                self.first_result_seconds = elapsed
            if self.first_stage_seconds is None and self.trials_done >= self._first_stage():
                self.first_stage_seconds = elapsed

    def _drop(self, in_flight) -> None:
        deadline = time.perf_counter() + CANCEL_GRACE_SECONDS
        while in_flight and time.perf_counter() < deadline:
            in_flight = [item for item in in_flight if not item[2].ready()]
            time.sleep(0.02)
        if in_flight:
            self.pool.restart()

    def _finish(self, status: str, message: str) -> None:
        with self._lock:
            self.status, self.message = status, message
            self.finished_at = time.perf_counter()

    def snapshot(self) -> dict:
        """The run's state for the page: progress, timings and the rates with their 95% intervals.

        ``rows`` holds the run's rows and, for a power run, the type I error rows of its null companion
        (``null_trials_done`` of them so far).
        """
        with self._lock:
            summary, null_summary, done = self.summary, self.null_summary, self.trials_done
            elapsed = (self.finished_at or time.perf_counter()) - self.started
            state = {"key": self.key, "status": self.status, "message": self.message, "trials_done": done,
                     "trials_total": self.config.trials, "elapsed": round(elapsed, 2),
                     "first_result_seconds": self.first_result_seconds,
                     "first_stage_seconds": self.first_stage_seconds, "classical": self.classical,
                     "estimand": headline_estimand(self.config.is_null),
                     "null_trials_done": self.null_trials_done if not self.config.is_null else None}
        rows = rate_rows(summary)
        if null_summary is not None:
            rows += [row for row in rate_rows(null_summary) if row["estimand"] == headline_estimand(True)]
        state["rows"] = rows
        return state


def rate_rows(summary: pd.DataFrame | None) -> list[dict]:
    """The summary rows the page shows: each test's type I error or power, and its failure rate."""
    if summary is None:
        return []
    shown = summary[summary["estimand"].isin(shown_estimands())]
    if "method" not in shown:  # the summary has a method column only when a method other than Likert ran
        shown = shown.assign(method=DEFAULT_METHODS[0])
    columns = ["design", "test", "method", "estimand", "rate", "ci_low", "ci_high", "mcse", "n_failed", "trials"]
    rows = shown[columns].astype(object).where(shown[columns].notna(), None)
    return rows.to_dict(orient="records")


class Runs:
    """The server's runs: at most one computing at a time, finished ones kept for going back."""

    def __init__(self, pool: ChunkPool):
        self.pool = pool
        self._runs: OrderedDict[str, LiveRun] = OrderedDict()
        self._lock = threading.Lock()
        self._current: LiveRun | None = None

    def start(self, key: str, config) -> LiveRun:
        """The run of ``config`` (``key`` identifies it): a kept one, or a new one that replaces the current."""
        with self._lock:
            run = self._runs.get(key)
            if run is not None and run.status in ("running", "done"):
                self._runs.move_to_end(key)
                return run
            previous = self._current
            if previous is not None and previous.running:
                previous.cancel()
            run = LiveRun(config, self.pool, key).start(after=previous)
            self._current = run
            self._runs[key] = run
            while len(self._runs) > KEPT_RUNS:
                self._runs.popitem(last=False)
            return run

    def get(self, key: str) -> LiveRun | None:
        with self._lock:
            return self._runs.get(key)

    def cancel(self, key: str) -> bool:
        run = self.get(key)
        if run is None or not run.running:
            return False
        run.cancel()
        return True

    def cancel_current(self) -> bool:
        """Cancel the run computing now, if any (True when one was)."""
        with self._lock:
            run = self._current
        if run is None or not run.running:
            return False
        run.cancel()
        return True
