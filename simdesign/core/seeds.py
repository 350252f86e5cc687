"""Random streams: the one place where simdesign makes a random generator.

Streams derive from a root seed with ``SeedSequence`` spawn keys built from
*stable hashes of labels* (design label, analysis label, what the stream is
for) and indices (trial, replicate), never from positions in a list, from
``seed + i`` or from a fixed number. So a trial's data do not depend on the
number of workers, the chunking, or which other designs and analyses a config
lists; a bootstrap's resamples do not depend on which other tests an analysis
runs; and any trial or replicate can be replayed alone.

The convention (issue 40)
-------------------------
:func:`stream` ``(root_seed, *keys)`` is the one way to make a new stream: each
key is a label (a ``str``, hashed by :func:`label_key`) or a non-negative
``int`` (a trial, replicate or other index). Labels name what a stream is for,
as ``"<module>/<purpose>"`` (``"analyse/bootstrap"``, ``"check/trial"``), so
two purposes never share a stream. Named forms read better where a kind of
stream recurs: :func:`bootstrap_rng`, :func:`check_rng`, :func:`resample_rng`,
:func:`helper_rng` (a deterministic helper's fixed draw), and the simulated
studies' :func:`data_rng`, :func:`analysis_rng`, :func:`replication_rng`,
:func:`criterion_rng`, :func:`judge_rng`.

Two older forms stay, only so that simulated studies written before issue 40
draw the same numbers (tests/test_regression.py and tests/test_streams.py pin
them): :func:`cell_trial_rng` (the generic runner's trial streams) and
:func:`entropy_rng` (keys in the entropy list rather than the spawn key). New
streams never use them. ``tests/test_architecture.py`` refuses
``SeedSequence(``, a bit generator, ``.spawn(`` and ``default_rng(`` anywhere
in simdesign/ but here.

Examples
--------
>>> from simdesign.core.seeds import bootstrap_rng, stream
>>> a = stream(2021, "analyse/bootstrap").random()
>>> a == bootstrap_rng(2021, "analyse/bootstrap").random()
True
>>> stream(2021, "check/trial", 0).random() == stream(2021, "check/trial", 1).random()
False
"""
from __future__ import annotations

import functools
import hashlib
import json
import numbers

import numpy as np

DATA_STREAM, ANALYSIS_STREAM, REPLICATION_STREAM, CRITERION_STREAM, JUDGE_STREAM = 0, 1, 2, 3, 4

# The generator's version: it changes whenever the same seed would draw other studies (other random
# parts, other responses), so that a store never mixes two generators: every store's manifest and chunk
# names carry it, and a store written by another version is refused (runner/stores.py).
#   1: covariance roots from LAPACK's eigen-decomposition (their signs and bases depended on the kernel)
#   2: covariance roots from a pivoted LDL^T in plain arithmetic, random parts summed in a fixed order
#      (simdesign/model/common.py): the same draws on every CPU, BLAS kernel and thread count
GENERATOR_VERSION = 2


@functools.lru_cache(maxsize=4096)  # a few labels per run, hashed for every trial's streams
def label_key(label: str) -> int:
    """A stable 64-bit integer for a label (sha256; Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.sha256(label.encode()).digest()[:8], "little")


def _generator(sequence: np.random.SeedSequence) -> np.random.Generator:
    # what np.random.default_rng(sequence) returns, without its argument checks (a few microseconds a stream)
    return np.random.Generator(np.random.PCG64(sequence))


def data_rng(root_seed: int, design_label: str, trial: int, stream_suffix: tuple = ()) -> np.random.Generator:
    """The generator that samples one trial's study.

    ``stream_suffix`` is the annotation method's (:attr:`simdesign.methods.AnnotationMethod.stream_suffix`):
    the default method's is empty, so its studies keep the key they have always had (stored results stay
    valid); another method adds its labels to the key, so its studies are independent of the default
    method's and the same whichever other methods a config lists.
    """
    if isinstance(stream_suffix, str):
        raise TypeError("data_rng takes the method's stream_suffix (a tuple of labels), not a method name")
    key = (label_key(design_label), trial, DATA_STREAM) + tuple(label_key(label) for label in stream_suffix)
    sequence = np.random.SeedSequence(root_seed, spawn_key=key)
    return _generator(sequence)


def analysis_rng(root_seed: int, design_label: str, trial: int, analysis_label: str) -> np.random.Generator:
    """The generator an analysis uses on one trial (e.g. ART's sign flips)."""
    sequence = np.random.SeedSequence(
        root_seed, spawn_key=(label_key(design_label), trial, ANALYSIS_STREAM, label_key(analysis_label)))
    return _generator(sequence)


def replication_rng(root_seed: int, design_label: str, trial: int) -> np.random.Generator:
    """The generator that samples one trial's independent replication study.

    A third stream of the trial's SeedSequence key (design, trial), beside the original study's
    (:func:`data_rng`): the original is the study a run without replication samples, and the
    replication depends on neither workers nor chunking.
    """
    sequence = np.random.SeedSequence(root_seed, spawn_key=(label_key(design_label), trial, REPLICATION_STREAM))
    return _generator(sequence)


def criterion_rng(root_seed: int, design_label: str, trial: int, criterion: str) -> np.random.Generator:
    """The generator of one criterion's random effects and noise in one trial (several criteria per study).

    The criteria of a trial share its layout (assignment and coverage, drawn from :func:`data_rng`);
    each criterion's own draws come from this stream, keyed by the criterion's name, so they are the same
    whichever other criteria a config lists.
    """
    sequence = np.random.SeedSequence(root_seed, spawn_key=(label_key(design_label), trial, CRITERION_STREAM,
                                                            label_key(criterion)))
    return _generator(sequence)


def judge_rng(root_seed: int, design_label: str, trial: int, judge: str) -> np.random.Generator:
    """The generator of one LLM judge's noise in one trial (:mod:`simdesign.model.judge`).

    A fifth stream of the trial's key, keyed by the judge's name, so a judge's scores are the same whichever
    other judges a config lists, and the human data (:func:`data_rng`) the same with or without judges.
    """
    sequence = np.random.SeedSequence(root_seed, spawn_key=(label_key(design_label), trial, JUDGE_STREAM,
                                                            label_key(judge)))
    return _generator(sequence)


# ------------------------------------------------------------------------------------------ the one way
def _spawn_key(key) -> int:
    """One key of a stream: a label's :func:`label_key`, or a non-negative integer as it is."""
    if isinstance(key, str):
        return label_key(key)
    if isinstance(key, numbers.Integral) and not isinstance(key, bool) and key >= 0:
        return int(key)
    raise TypeError(f"A stream's key is a label (str) or a non-negative integer (a trial or replicate index); "
                    f"got {key!r} ({type(key).__name__})")


def _root(root_seed) -> int:
    if isinstance(root_seed, numbers.Integral) and not isinstance(root_seed, bool) and root_seed >= 0:
        return int(root_seed)
    raise TypeError(f"A root seed is a non-negative integer; got {root_seed!r} ({type(root_seed).__name__})")


def seed_sequence(root_seed: int, *keys) -> np.random.SeedSequence:
    """The ``SeedSequence`` of :func:`stream` (for code that hands a sequence on, e.g. to a worker).

    ``SeedSequence(root_seed, spawn_key=keys)`` with each label replaced by its :func:`label_key`.
    """
    return np.random.SeedSequence(_root(root_seed), spawn_key=tuple(_spawn_key(key) for key in keys))


def stream(root_seed: int, *keys) -> np.random.Generator:
    """The generator keyed by a root seed and ``keys``: the one way to make a new random stream.

    Parameters
    ----------
    root_seed : int
        The run's, analysis's or check's seed (non-negative).
    *keys : str or int
        Labels (hashed by :func:`label_key`; name what the stream is for, ``"<module>/<purpose>"``) and
        non-negative indices (a trial, a replicate). The same root and keys give the same numbers on every
        machine and in every process; any other key gives an independent stream.

    Returns
    -------
    numpy.random.Generator
        A PCG64 generator, as ``numpy.random.default_rng(seed_sequence(root_seed, *keys))``.

    Raises
    ------
    TypeError
        A key that is neither a str nor a non-negative integer, or a negative or non-integer root seed.
    """
    return _generator(seed_sequence(root_seed, *keys))


def bootstrap_rng(root_seed: int, label: str, replicate: int | None = None) -> np.random.Generator:
    """The generator of a bootstrap named ``label``: ``stream(root_seed, label)`` for all its resamples, or
    ``stream(root_seed, label, replicate)`` for replicate ``replicate`` alone (replayable one at a time)."""
    return stream(root_seed, label) if replicate is None else stream(root_seed, label, replicate)


def check_rng(root_seed: int, label: str, trial: int) -> np.random.Generator:
    """The generator of a predictive check's simulated study ``trial``: ``stream(root_seed, label, trial)``
    (the observed data's own draws, e.g. split-half splits, get a stream of their own label)."""
    return stream(root_seed, label, trial)


def resample_rng(root_seed: int, scheme: str, size: int) -> np.random.Generator:
    """The generator of one (scheme, size) of a resampling study (:mod:`simdesign.realdata.resample`):
    ``stream(root_seed, "resample", scheme, size)``, the same whichever other schemes and sizes are run."""
    return stream(root_seed, "resample", scheme, size)


def helper_rng(label: str, seed: int = 0) -> np.random.Generator:
    """A deterministic helper's fixed generator (a picture's example draw, a contract check's example study,
    a warm-up fit, an optimiser's starts): ``stream(seed, label)``, named by what it is for."""
    return stream(seed, label)


# ------------------------------------------------------------- older forms, kept for identical results
# Streams made before issue 40 with a fixed number where a label belongs: the number stays (with the label it
# stands for) so that their results stay identical. A new stream never gets one; it uses stream() with the label.
FIXED_KEYS = {"crowd/knee-bootstrap": 7919}


def entropy_rng(*keys) -> np.random.Generator:
    """``default_rng(SeedSequence([*keys]))``: keys in the entropy list rather than the spawn key.

    The older convention of the TAC tests' streams, the crowd kind's knee bootstrap and MACE's starts, kept
    so that their studies draw the same numbers; new streams use :func:`stream`. A label is replaced by its
    :data:`FIXED_KEYS` number if it has one, else by its :func:`label_key`; integers stay as they are.
    """
    entropy = [FIXED_KEYS[key] if isinstance(key, str) and key in FIXED_KEYS else _spawn_key(key) for key in keys]
    return _generator(np.random.SeedSequence(entropy))


@functools.lru_cache(maxsize=4096)  # one cell per trial of a chunk: hash each cell once
def cell_key(cell: str) -> int:
    """The generic runner's 32-bit key of a cell: the first 8 hex digits of sha256 of the cell's canonical JSON
    (as :func:`simdesign.runner.stores.digest` computes it)."""
    text = json.dumps(cell, sort_keys=True, default=str)
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def cell_trial_rng(root_seed: int, cell: str, trial: int) -> np.random.Generator:
    """The stream of one trial of one cell of a study kind run by the generic runner
    (:func:`simdesign.runner.study.trial_stream`): ``SeedSequence([root_seed, cell_key(cell), trial])``, as
    the runner has always drawn it (the TAC and crowd kinds' stored and pinned results)."""
    return entropy_rng(_root(root_seed), cell_key(cell), trial)
