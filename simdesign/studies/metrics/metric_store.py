"""Resumable storage of metric-validation trials (:mod:`simdesign.studies.metrics.metric_validation`).

Layout of a results directory::

    manifest.json                       provenance: fingerprint, settings, root seed, versions, git commit
    .lock                               the claim of the run writing it (simdesign.runner.stores)
    trials/S<systems>-D<documents>/t0000000-0000020-<fingerprint>.parquet
                                        per-trial, per-estimand rows of one chunk of one cell

The one :class:`~simdesign.runner.stores.Store` in this kind's format (:data:`METRIC_CHUNKS`). As in
every kind's store, a chunk file appears only complete (written under a temporary name, then renamed), so
an interrupted run loses at most the chunks in flight, and a re-run computes only the (cell, trial) pairs
that no file holds yet, whatever the chunking or number of workers of the earlier run. Stored trials are
reused only when everything that determines them (model, population, metrics, sizes per document,
methods, resamples, levels, seed: the fingerprint) is unchanged; the cells (systems x documents) and the
number of trials may change freely. Each chunk's name carries that fingerprint, and a store reads only
chunks of its own; one run at a time writes a store (:mod:`simdesign.runner.stores`).
"""
from __future__ import annotations

from simdesign.runner.stores import (ManifestRequest, Store, StoreFormat, digest, git_commit, now_utc,
                                     package_versions)

TRIALS_DIR = "trials"
ROW_COLUMNS = ("systems", "documents", "trial", "estimand", "method", "scheme", "value")
KIND = "metric-validation"


def metric_manifest(settings: dict, root_seed: int, config: dict | None = None) -> ManifestRequest:
    """What a metric validation's run asks of its store (``Store.prepare(settings, root_seed, config)``):
    the trials are determined by ``settings``, whose digest is the fingerprint."""
    fingerprint = digest(settings)

    def fields(stored: dict | None) -> dict:
        now = now_utc()
        return {**({"created": now} if stored is None else {}), "kind": KIND, "fingerprint": fingerprint,
                "root_seed": root_seed, "settings": settings, "config": config, "updated": now,
                "versions": package_versions(), "git_commit": git_commit()}

    def mismatch(directory, stored: dict) -> str:
        return (f"{directory} holds metric-validation trials computed with other settings (model, population, "
                "metrics, methods, resamples, levels or seed); they must not be mixed. Write elsewhere with --out "
                "DIR, or delete the directory to start over.")

    return ManifestRequest(fingerprint, fields, mismatch)


METRIC_CHUNKS = StoreFormat(kind=KIND, unique=("systems", "documents", "trial", "estimand", "method", "scheme"),
                            columns=ROW_COLUMNS, describe=metric_manifest)
"""Metric validation's format: ``trials/S<systems>-D<documents>/t<first>-<stop>-<fingerprint>.parquet``."""


def metric_store(directory) -> Store:
    """The store of a metric validation in ``directory`` (:data:`METRIC_CHUNKS`)."""
    return Store(directory, METRIC_CHUNKS)
