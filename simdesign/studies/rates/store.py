"""The results store of rate studies: the one :class:`~simdesign.runner.stores.Store` in this kind's format.

Layout of a results directory::

    manifest.json                 provenance: config, its fingerprint, root seed, versions, git commit
    .lock                         the claim of the run writing it (simdesign.runner.stores)
    trials/<design label>/t0000000-0000025-<fingerprint>-<tests>.parquet
                                  per-trial, per-test, per-pair rows of one chunk

A chunk file appears only complete (written to a temporary name, then
``os.replace``d), so an interrupted run loses at most the chunks in flight,
and a re-run computes only the (trial, test) combinations no file holds yet.
Stored trials are reused only when the model, effect and seed match (the
"results fingerprint") and each analysis label keeps its options; otherwise
the store refuses, so different settings are never mixed in one directory.
Each chunk carries that fingerprint (its digest in the file name, and the
fingerprints of its tests in the file's metadata), and a store reads only
chunks of its own; one run at a time writes a store (:mod:`simdesign.runner.stores`).
This format is :data:`RATE_CHUNKS`; the tests are the store's parts.
"""
from __future__ import annotations

from simdesign.runner.stores import (CHUNK_METADATA, DISTRIBUTION, MANIFEST, TEMPORARY_SUFFIX,  # noqa: F401
                                     TRACKED_PACKAGES, ManifestRequest, Store, StoreFormat, git_commit,
                                     now_utc, package_versions)
from simdesign.studies.rates.config import SimulationConfig, stable_digest
from simdesign.studies.rates.method_specs import DEFAULT_METHODS

TRIALS_DIR = "trials"
RESULT_COLUMNS = ("design", "trial", "test", "pair", "system_a", "system_b", "true_diff", "estimate", "p_value",
                  "status", "message", "fit_status", "fit_seconds")


def _clash_message(directory, clashes: list, config: SimulationConfig) -> str:
    """Why stored results of these labels cannot be resumed: the options, or the model's rank generator."""
    from simdesign.methods import get_method
    from simdesign.studies.rates.method_specs import spec_method

    ranked = {spec.label for spec in config.work_specs if not get_method(spec_method(spec)).is_default}
    rank_clashes = [label for label in clashes if label in ranked]
    parts = []
    if rank_clashes:
        # a rank result's fingerprint holds the model's rank_noise: a changed rank_noise is the usual cause
        parts.append(f"rank result(s) {rank_clashes} were computed with another 'rank_noise' of the model "
                     f"(now {getattr(config.model, 'rank_noise', None)!r}) or other test options: give the "
                     "model its stored rank_noise")
    others = [label for label in clashes if label not in ranked]
    if others:
        parts.append(f"test label(s) {others} were computed with other options: give the changed test a new "
                     "'label'")
    return f"{directory} holds results that this config would mix with others: {'; '.join(parts)}; " \
           "or write elsewhere with --out DIR."


def rate_manifest(config: SimulationConfig, raw_config: dict | None = None) -> ManifestRequest:
    """What a rate study's run asks of its store (``Store.prepare(config)`` in :data:`RATE_CHUNKS`).

    The manifest stores ``config.to_mapping()``, from which ``simdesign plot`` and ``replay`` (and
    :func:`simdesign.api.load_results`) rebuild an equal config, however the run was started; its tests'
    fingerprints (``analyses``) are the store's parts. ``raw_config`` is ignored (the mapping as read was
    stored before configs round-tripped); kept for callers.
    """
    mapping = config.to_mapping()
    fingerprint = config.results_fingerprint()

    def fields(stored: dict | None) -> dict:
        now, designs = now_utc(), {d.label: d.columns() for d in config.designs}
        if stored is None:
            head = {"created": now, "root_seed": config.seed, "fingerprint": fingerprint, "designs": designs,
                    "history": []}
        else:
            head = {"designs": {**stored.get("designs", {}), **designs},
                    "history": [*stored.get("history", []), {"time": now, "config_hash": stable_digest(mapping),
                                                             "git_commit": git_commit()}]}
        return {**head, "updated": now, "config_name": config.name, "config_hash": stable_digest(mapping),
                "config": mapping, "versions": package_versions(), "git_commit": git_commit()}

    def mismatch(directory, stored: dict) -> str:
        return (f"{directory} holds trials simulated with a different model, effect or seed "
                f"(stored {stored.get('fingerprint')}, this config {fingerprint}); they must not be mixed. "
                "Write elsewhere with --out DIR, or delete the directory to start over.")

    return ManifestRequest(
        fingerprint, fields, mismatch, parts=config.analysis_fingerprints(),
        # Likert tests also accept stores written before an option they now have at its default existed.
        accepted={spec.label: spec.accepted_fingerprints for spec in config.analyses},
        parts_clash=lambda directory, clashes: _clash_message(directory, clashes, config))


RATE_CHUNKS = StoreFormat(
    kind=None, part_column="test", parts_field="analyses", metadata_cell="design",
    unique=("design", "trial", "test", "pair"), order=("design", "test", "trial", "pair"), columns=RESULT_COLUMNS,
    # chunks of Likert-only work have no method column (engine.with_method_column)
    defaults={"method": DEFAULT_METHODS[0]}, describe=rate_manifest)
"""Rate studies' format: ``trials/<design>/t<first>-<stop>-<fingerprint>-<tests>.parquet``, the tests' own
fingerprints in each chunk's Parquet metadata (``simdesign``) and in the manifest's ``analyses``; no
``kind`` in the manifest (rate stores never had one)."""


def rate_store(directory) -> Store:
    """The store of a rate study in ``directory`` (:data:`RATE_CHUNKS`): ``prepare(config)``,
    ``write_chunk(design, first, stop, tests, rows)``, ``completed(design)`` -> test -> trials,
    ``read(designs, trials, parts=tests)``, ``trial_rows(design, trial, test)``."""
    return Store(directory, RATE_CHUNKS)


ResultsStore = rate_store  # the name callers used before every kind shared one Store class (issue 40)
