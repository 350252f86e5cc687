"""Random streams: one per (design, trial), one per (design, trial, analysis).

Streams derive from the config's root seed with ``SeedSequence`` spawn keys
built from *stable hashes of labels* (design label, analysis label) and the
trial index, never from positions in a list or ``seed + i``. So a trial's
data do not depend on the number of workers, the chunking, or which other
designs and analyses a config lists, and any trial can be replayed alone.
"""
from __future__ import annotations

import functools
import hashlib

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
