"""Aggregating several annotators' scores of one output into one value.

Every method takes ``ratings`` (n_items, k): the k scores each item got,
``workers`` (n_items, k): who gave them (only competence models use it),
and ``scale``: the ordered score values. It returns one float per item.

* ``mean``: the mean opinion score (MOS).
* ``median``: the median (the mean of the two middle scores when k is even).
* ``majority``: the most frequent score; a tie between several most
  frequent scores is broken by taking the mean of the tied scores, a rule
  that needs no random draw and favours neither end of the scale (so an
  item with votes 2, 2, 5, 5 gets 3.5).
* ``dawid_skene``: the Dawid & Skene (1979) competence model fitted by EM;
  the item's value is its posterior expected score.
* ``mace``: MACE (Hovy, Berg-Kirkpatrick, Vaswani & Hovy 2013), a worker
  either knows the item's class or spams from their own answer
  distribution; fitted by EM (:func:`mace`); the item's value is its
  posterior expected score.

:data:`AGGREGATIONS` is the registry (name -> function).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simdesign.core.seeds import entropy_rng


def aggregate_mean(ratings: np.ndarray, workers: np.ndarray | None = None, scale=None) -> np.ndarray:
    """Mean opinion score per item.

    Examples
    --------
    >>> aggregate_mean(np.array([[1, 2, 4]])).tolist()
    [2.3333333333333335]
    """
    return np.asarray(ratings, dtype=float).mean(axis=1)


def aggregate_median(ratings: np.ndarray, workers: np.ndarray | None = None, scale=None) -> np.ndarray:
    """Median score per item (mean of the two middle values for an even number).

    Examples
    --------
    >>> aggregate_median(np.array([[1, 2, 4, 7]])).tolist()
    [3.0]
    """
    return np.median(np.asarray(ratings, dtype=float), axis=1)


def vote_counts(ratings: np.ndarray, scale) -> np.ndarray:
    """How often each scale value occurs per item, shape (n_items, len(scale))."""
    scale = np.asarray(scale)
    category = np.searchsorted(scale, ratings)
    if np.any(category >= len(scale)) or np.any(scale[np.minimum(category, len(scale) - 1)] != ratings):
        raise ValueError(f"ratings must be values of the scale {scale.tolist()}")
    n_items, n_categories = ratings.shape[0], len(scale)
    flat = (np.arange(n_items)[:, None] * n_categories + category).ravel()
    return np.bincount(flat, minlength=n_items * n_categories).reshape(n_items, n_categories)


def aggregate_majority(ratings: np.ndarray, workers: np.ndarray | None = None, scale=None) -> np.ndarray:
    """Majority vote per item; ties are broken by the mean of the tied most frequent scores.

    Examples
    --------
    >>> aggregate_majority(np.array([[3, 3, 5, 1], [2, 2, 5, 5]]), scale=range(1, 8)).tolist()
    [3.0, 3.5]
    """
    ratings = np.asarray(ratings)
    scale = np.asarray(range(int(ratings.min()), int(ratings.max()) + 1) if scale is None else list(scale))
    counts = vote_counts(ratings, scale)
    modal = counts == counts.max(axis=1, keepdims=True)
    return (modal * scale.astype(float)).sum(axis=1) / modal.sum(axis=1)


def dawid_skene(ratings: np.ndarray, workers: np.ndarray, scale, smoothing: float = 0.1, max_iter: int = 100,
                tol: float = 1e-6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dawid-Skene EM: class priors, a confusion matrix per worker, and each item's posterior.

    Written here rather than taken from crowd-kit: crowd-kit 1.4.2 pulls in
    transformers, huggingface_hub and nltk (for its text aggregators), and
    its pandas-based fit is far too slow to run thousands of times per
    simulation; this vectorised EM is some 40 lines.

    The model: item i has a true class c_i with prior p; worker w reports
    class l with probability pi_w[c, l]. EM starts from the items' vote
    shares (as Dawid and Skene do), then alternates the M-step (p and pi_w
    from the posteriors, each cell plus ``smoothing`` pseudo-counts: the
    crowd workers of a study judge few items, and an unseen cell would
    otherwise get probability 0) and the E-step (posterior of c_i), until
    the posteriors change by less than ``tol``.

    Parameters
    ----------
    ratings, workers : ndarray, shape (n_items, k)
        Scores (values of ``scale``) and worker ids (any integers).
    scale : sequence
        The ordered score values (the classes).
    smoothing : float, default 0.1
        Dirichlet pseudo-count added to every prior and confusion cell (0: plain maximum likelihood).
    max_iter : int, default 100
        EM iterations (one iteration is an M-step then an E-step).
    tol : float, default 1e-6

    Returns
    -------
    posterior : ndarray, shape (n_items, n_classes)
    confusion : ndarray, shape (n_workers, n_classes, n_classes)
        Row c: the worker's answer distribution when the true class is c; workers in sorted id order.
    prior : ndarray, shape (n_classes,)
    """
    scale = np.asarray(list(scale))
    ratings = np.asarray(ratings)
    n_items, n_classes = ratings.shape[0], len(scale)
    item = np.repeat(np.arange(n_items), ratings.shape[1])
    label = np.searchsorted(scale, ratings.ravel())
    worker_ids, worker = np.unique(np.asarray(workers).ravel(), return_inverse=True)
    n_workers = len(worker_ids)
    counts = vote_counts(ratings, scale).astype(float)
    posterior = counts / counts.sum(axis=1, keepdims=True)
    classes = np.arange(n_classes)
    # Flat cell of each (judgement, true class) in the confusion array and in the items' posteriors:
    # bincount with weights sums them far faster than np.add.at.
    confusion_cell = ((worker * n_classes)[:, None] + classes) * n_classes + label[:, None]
    item_cell = (item * n_classes)[:, None] + classes
    for _ in range(max_iter):
        prior = posterior.sum(axis=0) + smoothing
        prior /= prior.sum()
        answered = np.bincount(confusion_cell.ravel(), weights=posterior[item].ravel(),
                               minlength=n_workers * n_classes * n_classes).reshape(n_workers, n_classes, n_classes)
        answered += smoothing
        totals = answered.sum(axis=2, keepdims=True)
        confusion = np.divide(answered, totals, out=np.full_like(answered, 1.0 / n_classes), where=totals > 0)
        with np.errstate(divide="ignore"):
            log_confusion, log_prior = np.log(confusion), np.log(prior)
        log_post = log_prior + np.bincount(item_cell.ravel(), weights=log_confusion.ravel()[confusion_cell].ravel(),
                                           minlength=n_items * n_classes).reshape(n_items, n_classes)
        # Normalised by hand: scipy's logsumexp costs more than the rest of an iteration on arrays this small.
        largest = log_post.max(axis=1, keepdims=True)
        updated = np.exp(log_post - np.where(np.isfinite(largest), largest, 0.0))
        updated /= updated.sum(axis=1, keepdims=True)
        change = np.abs(updated - posterior).max()
        posterior = updated
        if change < tol:
            break
    return posterior, confusion, prior


def aggregate_dawid_skene(ratings: np.ndarray, workers: np.ndarray, scale) -> np.ndarray:
    """Posterior expected score per item under a Dawid-Skene fit (:func:`dawid_skene`)."""
    posterior, _, _ = dawid_skene(ratings, workers, scale)
    return posterior @ np.asarray(list(scale), dtype=float)


# Starts of MACE's EM: the deterministic one and random ones (issue 39: from one start it stopped at a worse
# optimum, log-likelihood -395.51 against -393.22). Each start is one EM of at most max_iter iterations.
MACE_STARTS = 5
# Starts whose log-likelihoods are this close to the best one count as having reached it.
MACE_AGREEMENT = 1e-3


@dataclass(frozen=True)
class MaceFit:
    """The best of several EM starts of MACE (:func:`mace_fit`).

    Attributes
    ----------
    posterior : ndarray, shape (n_items, n_classes)
    competence : ndarray, shape (n_workers,)
    strategy : ndarray, shape (n_workers, n_classes)
    log_likelihood : float
    starts : int
        EM starts run (the first the deterministic one).
    agreed : int
        Starts that reached the best log-likelihood (within 1e-3): fewer than all says the likelihood has
        several optima and one start alone could have stopped at a worse one.
    """

    posterior: np.ndarray
    competence: np.ndarray
    strategy: np.ndarray
    log_likelihood: float
    starts: int
    agreed: int


def mace(ratings: np.ndarray, workers: np.ndarray, scale, smoothing: float | None = None, max_iter: int = 100,
         tol: float = 1e-6, starts: int = MACE_STARTS) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """MACE (Hovy et al. 2013) by EM: item posteriors, each worker's competence and spamming distribution.

    The model: item i's true class T_i is uniform over the scale; when worker j
    judges it, they know it with probability theta_j and answer T_i, or spam
    (probability 1 - theta_j) and answer from their own distribution xi_j. So
    P(answer a | T = t) = theta_j [a = t] + (1 - theta_j) xi_j[a].

    EM (the paper's EM, not its variational variant): the E-step gives item
    posteriors q_i(t) and P(knew) = q_i(a) theta_j / (theta_j + (1 - theta_j) xi_j[a]) per
    judgement; the M-step sets theta_j, xi_j to expected counts + ``smoothing``.
    Not taken from crowd-kit (the test oracle, tests/test_mace.py): its fit is
    pandas-based with random restarts, far too slow for a simulation, and pulls
    in transformers and nltk. The first start is deterministic (theta 0.5, xi each
    worker's own answer shares), the others random (theta uniform on [0.05, 0.95],
    xi from a flat Dirichlet) from a fixed stream, so a fit is reproducible; the
    start with the best log-likelihood is kept (:func:`mace_fit` also says how many
    starts reached it). EM stops when no posterior moves by ``tol``.

    Parameters
    ----------
    ratings, workers : ndarray, shape (n_items, k)
        Scores (values of ``scale``) and worker ids (any integers).
    scale : sequence
        The ordered score values (the classes).
    smoothing : float, optional
        Pseudo-count per cell of theta and xi; default 0.01 / len(scale) (MACE's).
    max_iter, tol : int, float, default 100, 1e-6
    starts : int, default 5
        EM starts (1: the deterministic start only).

    Returns
    -------
    posterior : ndarray, shape (n_items, n_classes)
    competence : ndarray, shape (n_workers,)
        theta_j, workers in sorted id order.
    strategy : ndarray, shape (n_workers, n_classes)
        xi_j.
    log_likelihood : float
        Of the answers, at the last E-step's parameters (one M-step before those returned if max_iter ends EM).

    Examples
    --------
    >>> posterior, competence, _, _ = mace(np.array([[1, 1, 2], [2, 2, 1]]), np.array([[0, 1, 2], [0, 1, 2]]), [1, 2])
    >>> posterior.argmax(axis=1).tolist()
    [0, 1]
    """
    fit = mace_fit(ratings, workers, scale, smoothing, max_iter, tol, starts)
    return fit.posterior, fit.competence, fit.strategy, fit.log_likelihood


def mace_fit(ratings: np.ndarray, workers: np.ndarray, scale, smoothing: float | None = None, max_iter: int = 100,
             tol: float = 1e-6, starts: int = MACE_STARTS) -> MaceFit:
    """:func:`mace` with the number of starts run and of those that reached the best log-likelihood."""
    if not isinstance(starts, (int, np.integer)) or starts < 1:
        raise ValueError(f"MACE needs at least one start; got starts={starts!r}")
    scale = np.asarray(list(scale))
    ratings = np.asarray(ratings)
    n_classes = len(scale)
    smoothing = 0.01 / n_classes if smoothing is None else float(smoothing)
    label = np.searchsorted(scale, ratings.ravel())
    vote_counts(ratings, scale)  # refuses values off the scale
    worker_ids, worker = np.unique(np.asarray(workers).ravel(), return_inverse=True)
    problem = _MaceProblem(np.repeat(np.arange(ratings.shape[0]), ratings.shape[1]), worker, label,
                           ratings.shape[0], len(worker_ids), n_classes, smoothing)
    strategy = np.bincount(worker * n_classes + label, minlength=problem.n_workers * n_classes)
    strategy = strategy.reshape(problem.n_workers, n_classes)
    strategy = (strategy + smoothing) / (strategy.sum(axis=1, keepdims=True) + n_classes * smoothing)
    fits = [_mace_em(problem, np.full(problem.n_workers, 0.5), strategy, max_iter, tol)]
    # a fixed stream: the same data give the same fit (these are an optimiser's starts, not a study's draws)
    rng = entropy_rng("mace starts")  # SeedSequence(label_key("mace starts")), as MACE has always drawn them
    for _ in range(starts - 1):
        fits.append(_mace_em(problem, rng.uniform(0.05, 0.95, problem.n_workers),
                             rng.dirichlet(np.ones(n_classes), problem.n_workers), max_iter, tol))
    best = max(fits, key=lambda fit: fit[3])
    agreed = sum(fit[3] >= best[3] - MACE_AGREEMENT for fit in fits)
    return MaceFit(*best, starts=starts, agreed=agreed)


@dataclass(frozen=True)
class _MaceProblem:
    item: np.ndarray
    worker: np.ndarray
    label: np.ndarray
    n_items: int
    n_workers: int
    n_classes: int
    smoothing: float


def _mace_em(problem: _MaceProblem, competence: np.ndarray, strategy: np.ndarray, max_iter: int, tol: float):
    """One EM run of MACE from (competence, strategy): (posterior, competence, strategy, log-likelihood)."""
    item, worker, label, smoothing = problem.item, problem.worker, problem.label, problem.smoothing
    n_items, n_workers, n_classes = problem.n_items, problem.n_workers, problem.n_classes
    given = np.bincount(worker, minlength=n_workers).astype(float)
    is_label = label[:, None] == np.arange(n_classes)  # (judgements, classes)
    posterior, previous = None, None
    for _ in range(max_iter):
        # E-step: log P(a | t) per judgement and class, summed per item
        spam = (1.0 - competence[worker]) * strategy[worker, label]
        knows = competence[worker]
        log_answer = np.log(np.where(is_label, knows[:, None] + spam[:, None], spam[:, None]))
        log_joint = np.stack([np.bincount(item, weights=log_answer[:, c], minlength=n_items)
                              for c in range(n_classes)], axis=1) - np.log(n_classes)
        largest = log_joint.max(axis=1, keepdims=True)
        joint = np.exp(log_joint - largest)
        log_likelihood = float((np.log(joint.sum(axis=1)) + largest[:, 0]).sum())
        posterior = joint / joint.sum(axis=1, keepdims=True)
        if previous is not None and np.abs(posterior - previous).max() < tol:
            break
        previous = posterior
        # M-step: expected 'knew' per judgement; the rest is spam answered with its label
        knew = posterior[item, label] * knows / (knows + spam)
        knew_total = np.bincount(worker, weights=knew, minlength=n_workers)
        competence = (knew_total + smoothing) / (given + 2 * smoothing)
        spammed = np.bincount(worker * n_classes + label, weights=1.0 - knew,
                              minlength=n_workers * n_classes).reshape(n_workers, n_classes) + smoothing
        strategy = spammed / spammed.sum(axis=1, keepdims=True)
    return posterior, competence, strategy, log_likelihood


def aggregate_mace(ratings: np.ndarray, workers: np.ndarray, scale) -> np.ndarray:
    """Posterior expected score per item under a MACE fit (:func:`mace`) from its deterministic start.

    One start, as simulations fit ``clmm_native`` from one start (``starts: single``): a crowd study runs
    this thousands of times, and the committed crowd figures were computed so. Analyses of real tables
    (``simdesign fit-crowd``) take the best of several starts.
    """
    posterior = mace(ratings, workers, scale, starts=1)[0]
    return posterior @ np.asarray(list(scale), dtype=float)


AGGREGATIONS = {
    "mean": aggregate_mean,
    "median": aggregate_median,
    "majority": aggregate_majority,
    "dawid_skene": aggregate_dawid_skene,
    "mace": aggregate_mace,
}
"""Aggregation methods by name: function(ratings, workers, scale) -> one value per item."""
