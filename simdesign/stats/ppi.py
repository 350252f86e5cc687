"""Prediction-powered inference (PPI): a mean from a few human scores and many LLM-judge scores.

An LLM judge scores every output; humans score a subset. The judge's mean over the outputs humans did
not score is cheap but biased; PPI corrects it by the mean judge-minus-human difference (the
*rectifier*) on the outputs humans did score (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, 2023,
"Prediction-powered inference", Science 382; applied to model evaluation by Boyeau, Angelopoulos, Yosef,
Malik & Jordan, 2024, "AutoEval done right: using synthetic data for model evaluation")::

    estimate = lam * mean(judge on the rest) + mean(human - lam * judge on the human-scored)

``lam = 1`` is PPI, ``lam = 0`` the human-only mean, and PPI++ (Angelopoulos, Duchi & Zrnic, 2023, "PPI++:
efficient prediction-powered inference", arXiv:2311.01453) picks the ``lam`` that minimises the
estimate's variance, so it is never worse than the human-only mean asymptotically. The estimate is
unbiased for the human mean whatever the judge's bias or scale (the rectifier removes the judge's offset
and, through ``lam``, PPI++ its scale); a good judge only makes it more precise.

What this module gives:

* :func:`ppi_mean` (and :func:`ppi_lambda`): the point estimate and normal interval for independent
  scores, equal to ppi-python's ``ppi_mean_pointestimate`` and ``ppi_mean_ci`` (the authors' package;
  ``tests/test_ppi.py`` checks it to 1e-8 and 1e-6);
* :func:`ipw_ppi_mean`: PPI when each output was sent to humans with its own known probability (e.g.
  more often where the judge is least certain), with inverse-probability weights (Zrnic & Candes, 2024,
  "Active statistical inference", ICML);
* :func:`ppi_study`: every system's mean and every pair's difference (paired by document) of a
  judge-plus-human study, by the human-only, judge-only, PPI and PPI++ estimators and the judge's bias,
  each with an interval that accounts for the human scores' clustering by annotator and document (a
  cluster bootstrap) and the interval that ignores it, and the effective number of human judgements
  (:func:`effective_human_n`).

Matching ppi-python (version 0.2.x, ``ppi_py/ppi.py``), and so written the same way here:

* the PPI++ weight is ``cov(human, judge on the human-scored) / ((1 + n/N) * var(judge on all))`` with the
  covariance over the n human-scored outputs with divisor n and the variance over all n + N judge scores
  with divisor n + N - 1 (``np.cov``), computed at the PPI (lam = 1) estimate and **clipped to [0, 1]**;
* the standard error is ``sqrt(var(lam * judge on the rest) / N + var(human - lam * judge) / n)`` with both
  variances divisor N and n (numpy's ``std`` default, ddof 0);
* the interval is ``estimate -/+ z * se`` with z the standard normal's ``1 - (1 - level) / 2`` quantile.

Where ppi-python gives NaN (a judge without variance makes its weight 0/0) this module sets the weight
to 0: a judge that scores every output alike carries no information, and the estimate is the human mean.

Examples
--------
>>> import numpy as np
>>> human = np.array([3.0, 4.0, 2.0, 5.0, 4.0])
>>> judge_on_human = np.array([6.0, 8.0, 5.0, 9.0, 7.0])     # another scale: 1-10
>>> judge_on_rest = np.array([7.0, 5.0, 8.0, 6.0, 9.0, 4.0])
>>> ppi = ppi_mean(human, judge_on_human, judge_on_rest, lam=1.0)
>>> round(ppi.estimate, 3), ppi.lam
(3.1, 1.0)
>>> tuned = ppi_mean(human, judge_on_human, judge_on_rest)   # PPI++: lam tuned to the data
>>> round(tuned.lam, 3), tuned.standard_error < ppi.standard_error
(0.271, True)
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import sparse, special

# The estimators :func:`ppi_study` reports, and the two kinds of interval of each.
ESTIMATORS = ("human_only", "judge_only", "ppi", "ppi++", "judge_bias")
INTERVALS = ("clustered", "independent")
# Bootstrap resamples are drawn in chunks, so a large study's (chunk x documents) matrices stay near this size.
CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class PPIEstimate:
    """A mean (or a difference) estimated from human and judge scores, with its normal interval.

    Attributes
    ----------
    estimate, lower, upper, standard_error : float
    lam : float
        The judge's weight (1 = PPI, 0 = human only; PPI++ tunes it in [0, 1]).
    n_labelled : int
        Human-scored units (outputs, or human scores).
    n_unlabelled : int
        Units with the judge's score only.
    level : float
        The interval's confidence level.
    """

    estimate: float
    lower: float
    upper: float
    standard_error: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    level: float = 0.95

    @property
    def p_value(self) -> float:
        """Two-sided p-value of 'the mean (difference) is 0' from the interval's normal approximation."""
        return normal_p_value(self.estimate, self.standard_error)


def z_quantile(level: float) -> float:
    """The standard normal's ``1 - (1 - level) / 2`` quantile (1.96 for 0.95), as statsmodels' z interval.

    >>> round(z_quantile(0.95), 4)
    1.96
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1; got {level!r}")
    return float(special.ndtri(1 - (1 - level) / 2))


def normal_p_value(estimate, standard_error, null: float = 0.0):
    """Two-sided p-value of ``estimate == null`` with a normal reference: ``2 * Phi(-|estimate - null| / se)``.

    >>> round(normal_p_value(1.96, 1.0), 3)
    0.05
    """
    estimate, standard_error = np.asarray(estimate, float), np.asarray(standard_error, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.abs(estimate - null) / standard_error
    p = 2 * special.ndtr(-z)
    return float(p) if p.ndim == 0 else p


def _vector(values, name: str, allow_empty: bool = False) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {array.shape}")
    if not allow_empty and array.size == 0:
        raise ValueError(f"{name} is empty")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must hold finite numbers only")
    return array


def ppi_lambda(human, judge_on_human, judge_on_rest) -> float:
    """PPI++'s power-tuned weight of the judge for a mean, clipped to [0, 1] as ppi-python clips it.

    ``cov(human, judge on the human-scored) / ((1 + n / N) * var(all judge scores))``: covariance with divisor
    n, variance over the n + N judge scores with divisor n + N - 1 (ppi-python's ``_calc_lam_glm`` for a mean,
    whose Hessian is the identity). 0 when the judge's scores do not vary (ppi-python: NaN).

    >>> round(ppi_lambda([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], [2.0, 2.5]), 4)
    0.4848
    """
    human, judge_on_human = _vector(human, "human"), _vector(judge_on_human, "judge_on_human")
    judge_on_rest = _vector(judge_on_rest, "judge_on_rest")
    n, rest = human.size, judge_on_rest.size
    covariance = np.mean((human - human.mean()) * (judge_on_human - judge_on_human.mean()))
    variance = np.var(np.concatenate([judge_on_human, judge_on_rest]), ddof=1)
    if not variance > 0:  # a constant judge: no information to weigh
        return 0.0
    return float(np.clip(covariance / ((1 + n / rest) * variance), 0.0, 1.0))


def ppi_mean(human, judge_on_human, judge_on_rest, *, lam: float | None = None, level: float = 0.95) -> PPIEstimate:
    """PPI (``lam=1``) or PPI++ (``lam=None``) estimate and normal interval of the human mean.

    Angelopoulos et al. (2023, Science) for PPI; Angelopoulos, Duchi & Zrnic (2023, PPI++) for the tuned
    ``lam``. Equal to ppi-python's ``ppi_mean_pointestimate`` and ``ppi_mean_ci(alpha=1 - level)`` with the
    same ``lam`` (module docstring: its variance divisors and clipping).

    Parameters
    ----------
    human : array-like, shape (n,)
        The human scores (n >= 2).
    judge_on_human : array-like, shape (n,)
        The judge's scores of the same outputs, in the same order (any scale).
    judge_on_rest : array-like, shape (N,)
        The judge's scores of the outputs no human scored (N >= 1).
    lam : float, optional
        The judge's weight: 1 is PPI, 0 the human-only mean; None (default) tunes it (PPI++, :func:`ppi_lambda`).
    level : float
        Confidence level of the interval.

    Returns
    -------
    PPIEstimate

    Examples
    --------
    >>> estimate = ppi_mean([3.0, 4.0, 5.0], [2.0, 3.0, 4.0], [3.0, 3.0, 5.0, 1.0], lam=1.0)
    >>> round(estimate.estimate, 3), round(estimate.lower, 3), round(estimate.upper, 3)
    (4.0, 2.614, 5.386)
    """
    human, judge_on_human = _vector(human, "human"), _vector(judge_on_human, "judge_on_human")
    judge_on_rest = _vector(judge_on_rest, "judge_on_rest")
    if human.size != judge_on_human.size:
        raise ValueError(f"human ({human.size}) and judge_on_human ({judge_on_human.size}) must be as long: "
                         "one judge score per human score")
    if human.size < 2:
        raise ValueError(f"PPI needs at least 2 human scores for its variance; got {human.size}")
    lam = ppi_lambda(human, judge_on_human, judge_on_rest) if lam is None else float(lam)
    imputed = lam * judge_on_rest
    rectifier = human - lam * judge_on_human
    estimate = float(imputed.mean() + rectifier.mean())
    error = float(np.sqrt(imputed.var() / imputed.size + rectifier.var() / rectifier.size))
    z = z_quantile(level)
    return PPIEstimate(estimate, estimate - z * error, estimate + z * error, error, lam, human.size,
                       judge_on_rest.size, level)


def ipw_ppi_mean(human, judge, probability, *, lam: float | None = 1.0, level: float = 0.95) -> PPIEstimate:
    """PPI with inverse-probability weights: outputs sent to humans with known, unequal probabilities.

    When humans score the outputs where the judge is least certain, the human-scored outputs are not a
    random sample and plain PPI is biased. With each output ``i`` sent to humans independently with a known
    probability ``p_i > 0`` (Poisson sampling), every output contributes ``psi_i = lam * judge_i +
    (sent_i / p_i) * (human_i - lam * judge_i)``, whose mean is unbiased for the human mean (Horvitz &
    Thompson, 1952; "active inference", Zrnic & Candes, 2024, ICML). The estimate is ``mean(psi)``, its
    standard error ``std(psi) / sqrt(N)`` (divisor N, as :func:`ppi_mean`), the interval normal. With
    ``lam=None`` the weight minimising ``var(psi)`` is used, clipped to [0, 1] like PPI++'s.

    Parameters
    ----------
    human : array-like, shape (N,)
        The human score of each output, NaN where no human scored it.
    judge : array-like, shape (N,)
        The judge's score of every output.
    probability : array-like, shape (N,)
        The probability with which each output was to be sent to humans, in (0, 1].
    lam : float or None
        The judge's weight (default 1, PPI's); None tunes it.
    level : float

    Returns
    -------
    PPIEstimate
        ``n_labelled``: human-scored outputs; ``n_unlabelled``: the others.

    Examples
    --------
    >>> human = [4.0, np.nan, np.nan, 2.0, np.nan, 3.0]
    >>> judge = [5.0, 4.0, 2.0, 3.0, 3.0, 3.0]
    >>> result = ipw_ppi_mean(human, judge, [0.9, 0.3, 0.3, 0.6, 0.2, 0.5])
    >>> round(result.estimate, 3)
    2.87
    """
    human = np.asarray(human, dtype=float)
    judge, probability = _vector(judge, "judge"), _vector(probability, "probability")
    if not human.shape == judge.shape == probability.shape:
        raise ValueError(f"human {human.shape}, judge {judge.shape} and probability {probability.shape} must be "
                         "as long: one entry per output")
    if np.isinf(human).any():
        raise ValueError("human must hold finite numbers, NaN where no human scored the output")
    if not ((probability > 0) & (probability <= 1)).all():
        raise ValueError("every probability must be in (0, 1]: an output that could never be sent to humans "
                         "makes the weighted mean biased")
    sent = np.isfinite(human)
    if sent.sum() < 2:
        raise ValueError(f"inverse-probability-weighted PPI needs at least 2 human scores; got {int(sent.sum())}")
    weight = sent / probability
    weighted_human = weight * np.where(sent, human, 0.0)
    judge_part = judge * (1 - weight)  # psi = weighted_human + lam * judge_part
    if lam is None:
        spread = judge_part.var()
        lam = 0.0 if not spread > 0 else float(np.clip(
            -np.mean((weighted_human - weighted_human.mean()) * (judge_part - judge_part.mean())) / spread, 0, 1))
    psi = weighted_human + lam * judge_part
    estimate, error = float(psi.mean()), float(psi.std() / np.sqrt(psi.size))
    z = z_quantile(level)
    return PPIEstimate(estimate, estimate - z * error, estimate + z * error, error, float(lam), int(sent.sum()),
                       int((~sent).sum()), level)


def effective_human_n(n_human, variance_human_only, variance_ppi):
    """The number of human judgements a human-only study would need for the PPI estimate's variance.

    ``n_human * variance_human_only / variance_ppi``: the human-only estimator's variance scaled to the
    PPI estimator's, assuming that variance falls as 1 / (number of human judgements) in a design like this
    one. That holds for independent judgements; when a few annotators judge everything, more judgements
    from the same annotators shrink the annotator part of the variance less, so read it as an upper bound
    on the human judgements the judge saved there.

    >>> effective_human_n(100, 0.04, 0.02)
    200.0
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = n_human * np.asarray(variance_human_only, float) / np.asarray(variance_ppi, float)
    return float(ratio) if ratio.ndim == 0 else ratio


# ---------------------------------------------------------------------------------------------
# A judge-plus-human study: every system and pair, with clustered and independent intervals
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class JudgeStudy:
    """A judge-plus-human study as integer codes: what :func:`ppi_study` reads (:func:`judge_study` builds it).

    An *output* is one system's output for one document; the judge scored every output, humans some.

    Attributes
    ----------
    systems : tuple of str
        System names, indexed by ``output_system``.
    output_system, output_document : ndarray of int, shape (O,)
        Each output's system and document code (at most one output per system and document).
    judge : ndarray of float, shape (O,)
        The judge's score of each output.
    label_output : ndarray of int, shape (L,)
        The output each human score is of (an output may have several).
    human : ndarray of float, shape (L,)
        The human scores.
    label_annotator : ndarray of int, shape (L,), optional
        Who gave each human score. None: each human score is one observation (no annotator clustering).
    """

    systems: tuple
    output_system: np.ndarray
    output_document: np.ndarray
    judge: np.ndarray
    label_output: np.ndarray
    human: np.ndarray
    label_annotator: np.ndarray | None = None

    def __post_init__(self):
        # frozen: set the checked arrays through object.__setattr__, as dataclasses document
        for name in ("output_system", "output_document", "label_output"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        for name in ("judge", "human"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float))
        if self.label_annotator is not None:
            object.__setattr__(self, "label_annotator", np.asarray(self.label_annotator, dtype=np.int64))
        outputs, labels = self.output_system.shape, self.label_output.shape
        if self.output_document.shape != outputs or self.judge.shape != outputs or self.human.shape != labels or (
                self.label_annotator is not None and self.label_annotator.shape != labels):
            raise ValueError("output_system, output_document and judge must be as long (one entry per output), and "
                             "label_output, human and label_annotator as long (one entry per human score)")
        if not (np.isfinite(self.judge).all() and np.isfinite(self.human).all()):
            raise ValueError("judge and human scores must be finite numbers")
        if labels[0] and not 0 <= self.label_output.min() <= self.label_output.max() < outputs[0]:
            raise ValueError("label_output must index the outputs (0 .. number of outputs - 1)")

    @property
    def n_documents(self) -> int:
        return int(self.output_document.max()) + 1 if self.output_document.size else 0

    @property
    def n_annotators(self) -> int:
        """Annotators (1 when there is no annotator column: the bootstrap then resamples documents only)."""
        if self.label_annotator is None or not self.label_annotator.size:
            return 1
        return int(self.label_annotator.max()) + 1


def judge_study(frame: pd.DataFrame, systems=None) -> JudgeStudy:
    """A :class:`JudgeStudy` from a checked table, one row per judged output and human.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns ``system, document, judge`` (a number on every row, the same on every row of an output),
        ``human`` (a number, NaN where no human scored the output) and optionally ``annotator``.
    systems : sequence of str, optional
        The systems' order (default: first appearance).

    Examples
    --------
    >>> table = pd.DataFrame({"system": ["a", "a", "b", "b"], "document": ["d1", "d2", "d1", "d2"],
    ...                       "judge": [7.0, 5.0, 6.0, 6.0], "human": [4.0, np.nan, 3.0, np.nan]})
    >>> study = judge_study(table)
    >>> study.systems, study.judge.tolist(), study.human.tolist(), study.label_output.tolist()
    (('a', 'b'), [7.0, 5.0, 6.0, 6.0], [4.0, 3.0], [0, 2])
    """
    systems = tuple(pd.unique(frame["system"]) if systems is None else systems)
    outputs = frame.drop_duplicates(["system", "document"])[["system", "document", "judge"]]
    documents = pd.Index(pd.unique(outputs["document"]))
    output_index = pd.MultiIndex.from_frame(outputs[["system", "document"]])
    labels = frame[np.isfinite(frame["human"].to_numpy(float))]
    label_output = output_index.get_indexer(pd.MultiIndex.from_frame(labels[["system", "document"]]))
    annotator = None
    if "annotator" in frame.columns:
        annotator = pd.Index(pd.unique(labels["annotator"])).get_indexer(labels["annotator"])
    return JudgeStudy(systems, pd.Index(systems).get_indexer(outputs["system"]),
                      documents.get_indexer(outputs["document"]), outputs["judge"].to_numpy(float),
                      np.asarray(label_output), labels["human"].to_numpy(float), annotator)


@dataclass(frozen=True)
class _Cells:
    """A study as (system x document) arrays, and per system sparse (annotator x document) human sums."""

    judge: np.ndarray      # (S, D): the judge's score, 0 where the system has no output for the document
    has: np.ndarray        # (S, D) bool: the output exists
    labelled: np.ndarray   # (S, D) bool: a human scored it
    human_sum: tuple       # S sparse (A, D): sum of the human scores by annotator and document
    count: tuple           # S sparse (A, D): number of human scores


def _cells(study: JudgeStudy) -> _Cells:
    shape = (len(study.systems), study.n_documents)
    judge, has = np.zeros(shape), np.zeros(shape, bool)
    judge[study.output_system, study.output_document] = study.judge
    has[study.output_system, study.output_document] = True
    system = study.output_system[study.label_output]
    document = study.output_document[study.label_output]
    annotator = np.zeros(system.size, int) if study.label_annotator is None else study.label_annotator
    size = (study.n_annotators, shape[1])
    human_sum, count = [], []
    for s in range(shape[0]):
        mine = system == s  # a COO matrix sums repeated (annotator, document) entries on conversion
        human_sum.append(sparse.csr_array((study.human[mine], (annotator[mine], document[mine])), shape=size))
        count.append(sparse.csr_array((np.ones(mine.sum()), (annotator[mine], document[mine])), shape=size))
    labelled = np.array([c.sum(axis=0) > 0 for c in count]).reshape(shape)
    return _Cells(judge, has, labelled, tuple(human_sum), tuple(count))


@dataclass(frozen=True)
class _Sums:
    """Weighted sums of one target (a system or a pair), one entry per weighting (the data, or a resample).

    ``human``, ``judge``, ``weight``: over the human-scored units (human scores for a system, documents
    for a pair); ``rest_*``: the judge's scores of the units without human scores; ``all_*``: of every unit.
    """

    human: np.ndarray
    judge: np.ndarray
    weight: np.ndarray
    rest_judge: np.ndarray
    rest_weight: np.ndarray
    all_judge: np.ndarray
    all_weight: np.ndarray

    def estimate(self, estimator: str, lam: float = 1.0) -> np.ndarray:
        """The estimator's value under each weighting (NaN where a resample drew no unit it needs)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            if estimator == "human_only":
                return self.human / self.weight
            if estimator == "judge_only":
                return self.all_judge / self.all_weight
            if estimator == "judge_bias":
                return (self.judge - self.human) / self.weight
            imputed = lam * self.rest_judge / self.rest_weight if lam else 0.0
            return imputed + (self.human - lam * self.judge) / self.weight


def _pairs(n_systems: int) -> list:
    return list(combinations(range(n_systems), 2))


def _weighted_sums(cells: _Cells, document_weight: np.ndarray, annotator_weight: np.ndarray) -> dict:
    """Each system's and each pair's :class:`_Sums` under (resample x document) and (resample x annotator) weights.

    A system's human part is over its human scores, each weighted by its annotator's weight times its
    document's (the pigeonhole bootstrap's product weight); a pair's is over the documents where both
    systems have human scores, each difference of the two outputs' annotator-weighted mean human scores
    weighted by its document's weight (a document whose human scores all drew weight 0 drops out).
    """
    sums, means = {}, {}
    for s in range(cells.judge.shape[0]):
        totals, counts = annotator_weight @ cells.human_sum[s], annotator_weight @ cells.count[s]
        judge, has = cells.judge[s], cells.has[s]
        rest = has & ~cells.labelled[s]
        scored = document_weight * counts
        sums[s] = _Sums(np.einsum("rd,rd->r", document_weight, totals), scored @ judge, scored.sum(axis=1),
                        document_weight @ (judge * rest), document_weight @ rest,
                        document_weight @ (judge * has), document_weight @ has)
        with np.errstate(divide="ignore", invalid="ignore"):
            means[s] = totals / counts
    for a, b in _pairs(cells.judge.shape[0]):
        common = cells.has[a] & cells.has[b]
        both = common & cells.labelled[a] & cells.labelled[b]
        rest = common & ~both
        judged = cells.judge[a] - cells.judge[b]
        difference = means[a] - means[b]
        valid = both & np.isfinite(difference)
        weight = document_weight * valid
        sums[a, b] = _Sums(np.einsum("rd,rd->r", weight, np.where(valid, difference, 0.0)), weight @ judged,
                           weight.sum(axis=1), document_weight @ (judged * rest), document_weight @ rest,
                           document_weight @ (judged * common), document_weight @ common)
    return sums


def _bootstrap_sums(cells: _Cells, rng: np.random.Generator, resamples: int) -> dict:
    """:func:`_weighted_sums` over ``resamples`` pigeonhole resamples, drawn in chunks to bound memory.

    Documents and annotators are resampled independently (each with replacement, as many as there are),
    so the judge's mean term moves with the same documents as the rectifier. Without annotators (one
    pseudo-annotator) only documents are resampled: the human scores of a document go with it.
    """
    n_annotators, n_documents = cells.human_sum[0].shape
    chunk = max(1, min(resamples, CHUNK_CELLS // max(1, n_documents * len(cells.human_sum))))
    parts = []
    for start in range(0, resamples, chunk):
        size = min(chunk, resamples - start)
        documents = rng.multinomial(n_documents, np.full(n_documents, 1.0 / n_documents), size=size).astype(float)
        annotators = (np.ones((size, 1)) if n_annotators == 1 else
                      rng.multinomial(n_annotators, np.full(n_annotators, 1.0 / n_annotators), size=size)
                      .astype(float))
        parts.append(_weighted_sums(cells, documents, annotators))
    return {key: _Sums(*(np.concatenate([getattr(part[key], name) for part in parts])
                         for name in _Sums.__dataclass_fields__)) for key in parts[0]}


@dataclass(frozen=True)
class _Units:
    """One target's units as plain arrays (for the independent intervals and PPI++'s weight).

    A system's human-scored units are its human scores (each with its output's judge score); a pair's are
    the documents where both systems have human scores (the difference of the outputs' mean human scores,
    and of their judge scores).
    """

    human: np.ndarray
    judge: np.ndarray
    rest: np.ndarray    # the judge's scores of the units no human scored
    every: np.ndarray   # the judge's scores of every unit


def _units(study: JudgeStudy, cells: _Cells) -> dict:
    units = {}
    label_system = study.output_system[study.label_output]
    for s in range(len(study.systems)):
        mine = label_system == s
        rest = cells.has[s] & ~cells.labelled[s]
        units[s] = _Units(study.human[mine], study.judge[study.label_output[mine]], cells.judge[s][rest],
                          cells.judge[s][cells.has[s]])
    with np.errstate(divide="ignore", invalid="ignore"):
        means = [c_sum.sum(axis=0) / c_count.sum(axis=0) for c_sum, c_count in zip(cells.human_sum, cells.count)]
    for a, b in _pairs(len(study.systems)):
        common = cells.has[a] & cells.has[b]
        both = common & cells.labelled[a] & cells.labelled[b]
        judged = cells.judge[a] - cells.judge[b]
        units[a, b] = _Units((means[a] - means[b])[both], judged[both], judged[common & ~both], judged[common])
    return units


def _independent_error(units: _Units, estimator: str, lam: float) -> float:
    """The standard error that treats every unit as independent (ppi-python's, for PPI and PPI++)."""
    if units.human.size < 2 and estimator != "judge_only":
        return np.nan
    if estimator in ("ppi", "ppi++") and lam:
        return ppi_mean(units.human, units.judge, units.rest, lam=lam).standard_error
    values = {"judge_only": units.every, "judge_bias": units.judge - units.human}.get(estimator, units.human)
    return float(values.std() / np.sqrt(values.size)) if values.size >= 2 else np.nan


STUDY_COLUMNS = ("target", "system_a", "system_b", "estimator", "interval", "estimate", "standard_error", "low",
                 "high", "p_value", "lam", "n_human", "n_judge_only", "effective_n", "resamples", "status")


def _weights(units: _Units) -> tuple[dict, str]:
    """Each estimator's judge weight, and the target's status."""
    if units.human.size < 2:
        return dict.fromkeys(("human_only", "ppi", "ppi++"), 0.0), (
            f"{units.human.size} human-scored unit(s): at least 2 are needed for an interval")
    if units.rest.size == 0:  # every unit has human scores: the judge's mean term is empty
        return dict.fromkeys(("human_only", "ppi", "ppi++"), 0.0), "every unit human-scored: PPI is the human mean"
    return {"human_only": 0.0, "ppi": 1.0, "ppi++": ppi_lambda(units.human, units.judge, units.rest)}, "ok"


def _target_rows(key, systems, units: _Units, point: _Sums, boot: _Sums, level: float) -> list:
    """The rows of one system or pair: every estimator with its clustered and independent interval."""
    pair = isinstance(key, tuple)
    names = (systems[key[0]], systems[key[1]]) if pair else (systems[key], None)
    target = f"{names[0]} - {names[1]}" if pair else names[0]
    lams, status = _weights(units)
    z, rows, variance = z_quantile(level), [], {}
    for estimator in ESTIMATORS:
        lam = lams.get(estimator, np.nan)
        estimate = float(point.estimate(estimator, lam)[0]) if units.human.size or estimator == "judge_only" \
            else np.nan
        draws = boot.estimate(estimator, lam)
        finite = draws[np.isfinite(draws)]
        errors = {"clustered": float(finite.std(ddof=1)) if finite.size >= 2 else np.nan,
                  "independent": _independent_error(units, estimator, lam)}
        for interval, error in errors.items():
            variance[estimator, interval] = error ** 2
            tested = pair or estimator == "judge_bias"
            rows.append({"target": target, "system_a": names[0], "system_b": names[1], "estimator": estimator,
                         "interval": interval, "estimate": estimate, "standard_error": error,
                         "low": estimate - z * error, "high": estimate + z * error,
                         "p_value": normal_p_value(estimate, error) if tested else np.nan, "lam": lam,
                         "n_human": units.human.size, "n_judge_only": units.rest.size, "effective_n": np.nan,
                         "resamples": finite.size if interval == "clustered" else np.nan, "status": status})
    for row in rows:
        if row["estimator"] in ("ppi", "ppi++"):
            row["effective_n"] = effective_human_n(units.human.size, variance["human_only", row["interval"]],
                                                   variance[row["estimator"], row["interval"]])
    return rows


def ppi_study(study: JudgeStudy, rng: np.random.Generator, *, resamples: int = 2000,
              level: float = 0.95) -> pd.DataFrame:
    """Every system's mean and every pair's difference of a judge-plus-human study, by every estimator.

    Stratified by system: each system's estimates (and PPI++'s weight) use its own outputs only. A system's
    PPI estimate is ``lam * mean(judge on its outputs without human scores) + mean(human - lam * judge)`` over
    its human scores (each human score one unit, weighted alike; Angelopoulos et al. 2023, Science; PPI++:
    Angelopoulos, Duchi & Zrnic 2023; per system as in Boyeau et al. 2024, "AutoEval done right"). A pair
    ``a - b`` is paired by document: the unit is a document with outputs of both systems, its human value the
    difference of the two outputs' mean human scores (on documents where both have human scores), its judge
    value the difference of the judge's scores; PPI then estimates the mean per-document difference.

    Estimators: ``human_only`` (the human scores alone), ``judge_only`` (the judge's mean over every unit: on
    the judge's scale, and biased when the judge is; shown so that is seen), ``ppi`` (lam = 1), ``ppi++``
    (lam tuned, :func:`ppi_lambda`), ``judge_bias`` (mean judge minus human over the human-scored units).

    Intervals (normal, ``estimate -/+ z * se``):

    * ``clustered``: se from a cluster bootstrap (``resamples`` draws from ``rng``): annotators and documents
      resampled independently, each human score weighted by the product of its annotator's and its
      document's multiplicities (the two-way "pigeonhole" bootstrap, as ``simdesign analyse`` uses for
      crossed designs), the judge's mean term resampled with the same documents; lam is held at its value on
      the data. Without annotators only documents are resampled. The pigeonhole bootstrap counts the
      judgement-level noise with both factors, so it errs on the wide side.
    * ``independent``: the textbook se that treats units as independent (ppi-python's for PPI and PPI++),
      which ignores the clustering: reported beside the clustered one so its cost is seen.

    Parameters
    ----------
    study : JudgeStudy
    rng : numpy.random.Generator
        The bootstrap's random numbers.
    resamples : int
    level : float

    Returns
    -------
    pandas.DataFrame
        One row per target, estimator and interval: ``target`` (a system, or 'a - b'), ``system_a``,
        ``system_b`` (None for a system), ``estimator``, ``interval``, ``estimate``, ``standard_error``,
        ``low``, ``high``, ``p_value`` (two-sided, normal; of 'difference = 0' for pairs and 'no bias' for
        ``judge_bias``; NaN for system means), ``lam``, ``n_human`` (human scores of a system, documents
        with human scores of both systems of a pair), ``n_judge_only`` (units without human scores),
        ``effective_n`` (PPI rows: :func:`effective_human_n` with that interval's variances), ``resamples``
        (finite bootstrap draws), ``status``.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> quality = rng.normal(size=(2, 40)) + np.array([[0.5], [0.0]])
    >>> table = pd.DataFrame({"system": np.repeat(["a", "b"], 40), "document": np.tile(np.arange(40), 2),
    ...                       "judge": (quality + rng.normal(0, 0.5, quality.shape)).ravel(),
    ...                       "human": np.where(np.arange(80) % 40 < 15, quality.ravel(), np.nan)})
    >>> result = ppi_study(judge_study(table), rng, resamples=200)
    >>> sorted(result["target"].unique())
    ['a', 'a - b', 'b']
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator (np.random.default_rng(seed)); got {type(rng).__name__}")
    cells = _cells(study)
    units = _units(study, cells)
    n_annotators, n_documents = cells.human_sum[0].shape
    point = _weighted_sums(cells, np.ones((1, n_documents)), np.ones((1, n_annotators)))
    boot = _bootstrap_sums(cells, rng, int(resamples))
    rows = [row for key in units for row in _target_rows(key, study.systems, units[key], point[key], boot[key],
                                                         level)]
    return pd.DataFrame(rows, columns=list(STUDY_COLUMNS))
