"""Statistics of pairwise preference judgements: A/B judgements and Arena-style battle logs (issue 42).

One comparison names two systems (``first`` and ``second``, indices ``0..n_systems-1``) and an
``outcome``: :data:`FIRST` (1, the first-named system preferred), :data:`TIE` (0.5) or :data:`SECOND` (0).

* :func:`bradley_terry`: the Bradley & Terry (1952) model, P(i beats j) = pi_i / (pi_i + pi_j), fitted by
  maximum likelihood, with ties either as half a win to each side (``ties="half"``, the convention of the
  Chatbot Arena, Chiang et al. 2024) or by Davidson's (1970) tie model (``ties="davidson"``);
* :func:`robust_covariance`: cluster-robust (sandwich) covariance of the strengths, one-way or multi-way
  (Cameron, Gelbach & Miller 2011), for logs in which one annotator or one prompt judges many pairs;
* :func:`elo`: the Arena's Elo scale;
* :func:`bootstrap_strengths`: percentile intervals from resampling prompts (and judges), vectorised over
  resamples;
* :func:`win_rates` and :func:`pair_sign_tests`: model-free summaries and per-pair sign tests on units.

The fits work on sufficient statistics per pair of systems (wins of each side and ties), so a log of a
million battles costs no more to fit than its ``n_systems**2`` table, and the bootstrap fits all resamples
at once by Newton's method on those tables. Layer 2: numpy and scipy only.

References: Bradley, R. A. & Terry, M. E. (1952), Biometrika 39, 324-345. Davidson, R. R. (1970), JASA 65,
317-328. Cameron, A. C., Gelbach, J. B. & Miller, D. L. (2011), J. Bus. Econ. Stat. 29, 238-249. Chiang, W.-L.
et al. (2024), Chatbot Arena: an open platform for evaluating LLMs by human preference, ICML.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special

from simdesign.core.checks import is_integer, is_number
from simdesign.core.errors import ConfigError
from simdesign.core.lazy_scipy import stats  # scipy.stats, imported on first use

FIRST, TIE, SECOND = 1.0, 0.5, 0.0
TIES = ("half", "davidson")
# Elements of the resamples-by-cells weight matrix the bootstrap builds at once (bounds its memory to ~32 MB).
_BOOTSTRAP_CHUNK_ELEMENTS = 4_000_000
_LINE_SEARCH_HALVINGS = 40


@dataclass(frozen=True)
class _Log:
    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    weights: np.ndarray
    n_systems: int


def _rows(mask: np.ndarray, limit: int = 5) -> str:
    rows = np.flatnonzero(mask)
    text = ", ".join(str(r) for r in rows[:limit])
    return text + (f" (and {rows.size - limit} more)" if rows.size > limit else "")


def _index_problems(name: str, values: np.ndarray, n_systems: int) -> list[str]:
    allowed = f"system indices 0..{n_systems - 1} (n_systems={n_systems})"
    if values.dtype.kind not in "iuf" or (values.dtype.kind == "f" and not np.all(np.isfinite(values))):
        return [f"{name} must hold integer {allowed}; got values of type {values.dtype}"]
    if values.dtype.kind == "f" and np.any(values != np.round(values)):
        return [f"{name} must hold integer {allowed}; got non-integers in row(s) {_rows(values != np.round(values))}"]
    outside = (values < 0) | (values >= n_systems)
    if outside.any():
        bad = np.unique(values[outside])[:5].tolist()
        return [f"{name} must hold {allowed}; got {bad} in row(s) {_rows(outside)}"]
    return []


def _check_log(first, second, outcome, n_systems, weights=None) -> _Log:
    """The comparisons as validated arrays, or a ConfigError naming every bad field and what is allowed."""
    if not is_integer(n_systems, 2):
        raise ConfigError(f"n_systems must be an integer of at least 2; got {n_systems!r}")
    fields = {"first": first, "second": second, "outcome": outcome}
    if weights is not None:
        fields["weights"] = weights
    arrays = {name: np.asarray(value) for name, value in fields.items()}
    flat = [name for name, array in arrays.items() if array.ndim != 1]
    if flat:
        raise ConfigError([f"{name} must be a one-dimensional sequence (one entry per comparison); "
                           f"got shape {arrays[name].shape}" for name in flat])
    lengths = {name: array.size for name, array in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ConfigError(f"{', '.join(lengths)} must have one entry per comparison (equal lengths); got "
                          + ", ".join(f"{name}={length}" for name, length in lengths.items()))
    if lengths["outcome"] == 0:
        raise ConfigError("the log holds no comparisons: first, second and outcome are empty")
    problems = _index_problems("first", arrays["first"], n_systems)
    problems += _index_problems("second", arrays["second"], n_systems)
    if not problems:
        same = arrays["first"] == arrays["second"]
        if same.any():
            problems.append(f"first and second must name two different systems; a system is compared with "
                            f"itself in row(s) {_rows(same)}")
    outcome = arrays["outcome"]
    if outcome.dtype.kind not in "iuf" or outcome.dtype.kind == "b":
        problems.append(f"outcome must be numbers, 1 (first preferred), 0.5 (tie) or 0 (second preferred); "
                        f"got values of type {outcome.dtype}")
    else:
        bad = ~np.isin(outcome, (FIRST, TIE, SECOND))
        if bad.any():
            problems.append(f"outcome must be 1 (first preferred), 0.5 (tie) or 0 (second preferred); got "
                            f"{np.unique(outcome[bad])[:5].tolist()} in row(s) {_rows(bad)}")
    if weights is not None:
        w = arrays["weights"]
        if w.dtype.kind not in "iuf" or not np.all(np.isfinite(w)) or np.any(w < 0):
            problems.append("weights must be finite numbers of at least 0 (one per comparison)")
    if problems:
        raise ConfigError(problems)
    w = np.ones(outcome.size) if weights is None else arrays["weights"].astype(float)
    return _Log(arrays["first"].astype(np.int64), arrays["second"].astype(np.int64), outcome.astype(float), w,
                n_systems)


def _check_labels(name: str, values, length: int) -> tuple[np.ndarray, int]:
    """Integer codes 0..G-1 of a per-comparison label array (prompts, judges, units, a clustering), and G."""
    array = np.asarray(values)
    if array.ndim != 1 or array.size != length:
        raise ConfigError(f"{name} must be a one-dimensional sequence with one entry per comparison ({length}); "
                          f"got shape {array.shape}")
    if array.dtype.kind == "f" and not np.all(np.isfinite(array)):
        raise ConfigError(f"{name} must not hold NaN or infinite labels")
    levels, codes = np.unique(array, return_inverse=True)
    return codes.reshape(-1).astype(np.int64), levels.size


# --- sufficient statistics per pair ----------------------------------------------------------------------

def _pairs(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) of every pair with i < j, in model order (as :func:`simdesign.stats.contrasts.system_pairs`)."""
    return np.triu_indices(n_systems, 1)


def _pair_codes(log: _Log) -> tuple[np.ndarray, np.ndarray]:
    """Each comparison's pair index (model order) and the credit of the pair's lower-indexed system."""
    n = log.n_systems
    low, high = np.minimum(log.first, log.second), np.maximum(log.first, log.second)
    pair = low * n - low * (low + 1) // 2 + (high - low - 1)
    credit = np.where(log.first == low, log.outcome, 1.0 - log.outcome)
    return pair, credit


def _comparison_stats(log: _Log) -> tuple[np.ndarray, np.ndarray]:
    """Pair index and (wins of the lower system, wins of the higher, ties), weighted, per comparison."""
    pair, credit = _pair_codes(log)
    columns = np.stack([credit == 1.0, credit == 0.0, credit == 0.5], axis=1) * log.weights[:, None]
    return pair, columns


def _pair_stats(log: _Log) -> np.ndarray:
    """(n_pairs, 3): weighted wins of i, wins of j and ties for every pair i < j."""
    pair, columns = _comparison_stats(log)
    n_pairs = log.n_systems * (log.n_systems - 1) // 2
    return np.stack([np.bincount(pair, columns[:, k], minlength=n_pairs) for k in range(3)], axis=1)


# --- likelihoods, batched over resamples (axis 0) ---------------------------------------------------------

def _pair_terms(theta, stats, n, davidson, derivatives=True):
    """Per-pair log-likelihood and its derivatives in d = s_i - s_j (and tau = log nu for Davidson).

    Both models are exponential families in (d, tau), so the information does not depend on the data."""
    i, j = _pairs(n)
    d = theta[:, i] - theta[:, j]
    a, b, t = stats[..., 0], stats[..., 1], stats[..., 2]
    total = a + b + t
    if not davidson:
        # A tie is half a win to each side: the logistic likelihood with fractional outcomes.
        y = a + 0.5 * t
        loglik = y * special.log_expit(d) + (total - y) * special.log_expit(-d)
        if not derivatives:
            return loglik
        p = special.expit(d)
        return loglik, (y - total * p,), (total * p * (1 - p),)
    tau = theta[:, n:n + 1]
    # Davidson (1970) divided through by sqrt(pi_i pi_j): P(i) = e^{d/2}/D, P(j) = e^{-d/2}/D, P(tie) = nu/D.
    log_denominator = np.logaddexp(np.logaddexp(0.5 * d, -0.5 * d), tau)
    loglik = 0.5 * (a - b) * d + t * tau - total * log_denominator
    if not derivatives:
        return loglik
    p_i, p_j, p_t = (np.exp(x - log_denominator) for x in (0.5 * d, -0.5 * d, tau + 0 * d))
    half_diff = 0.5 * (p_i - p_j)
    gradient = (0.5 * (a - b) - total * half_diff, t - total * p_t)
    information = (total * (0.25 * (p_i + p_j) - half_diff ** 2), -total * half_diff * p_t, total * p_t * (1 - p_t))
    return loglik, gradient, information


def _loglik(theta, stats, n, davidson, ridge=0.0):
    value = _pair_terms(theta, stats, n, davidson, derivatives=False).sum(axis=1)
    return value - 0.5 * ridge * (theta[:, :n] ** 2).sum(axis=1)


def _assemble(theta, stats, n, davidson, ridge):
    """Penalised log-likelihood (B,), gradient (B, p) and information (B, p, p) at ``theta`` (B, p)."""
    loglik, gradient, information = _pair_terms(theta, stats, n, davidson)
    i, j = _pairs(n)
    batch, p = theta.shape
    incidence = np.zeros((i.size, n))
    incidence[np.arange(i.size), i], incidence[np.arange(i.size), j] = 1.0, -1.0
    grad = np.zeros((batch, p))
    grad[:, :n] = gradient[0] @ incidence - ridge * theta[:, :n]
    info = np.zeros((batch, p, p))
    info[:, i, j] = info[:, j, i] = -information[0]
    diagonal = np.arange(n)
    info[:, diagonal, diagonal] = information[0] @ np.abs(incidence) + ridge
    if davidson:
        grad[:, n] = gradient[1].sum(axis=1)
        info[:, :n, n] = info[:, n, :n] = information[1] @ incidence
        info[:, n, n] = information[2].sum(axis=1)
    return loglik.sum(axis=1) - 0.5 * ridge * (theta[:, :n] ** 2).sum(axis=1), grad, info


def _centring(n: int, p: int) -> np.ndarray:
    """The unit vector of the direction the likelihood ignores (all strengths shifted together)."""
    v = np.zeros(p)
    v[:n] = 1.0 / np.sqrt(n)
    return v


def _line_search(theta, step, loglik, stats, n, davidson, ridge):
    """Halve each resample's Newton step until its log-likelihood does not fall (the likelihoods are concave)."""
    scale = np.ones(theta.shape[0])
    for _ in range(_LINE_SEARCH_HALVINGS):
        trial = theta + scale[:, None] * step
        trial_loglik = _loglik(trial, stats, n, davidson, ridge)
        worse = ~(trial_loglik >= loglik - 1e-12 * (1.0 + np.abs(loglik)))
        if not worse.any():
            break
        scale[worse] *= 0.5
    return trial, trial_loglik


def _newton(stats, n, davidson, start, ridge, max_iterations, tolerance):
    """Newton's method with a line search for every resample of ``stats`` (B, n_pairs, 3) at once.

    The strengths stay centred: the step solves (I + v v') step = g, whose solution is orthogonal to the
    shift direction v because the gradient is. Returns theta (B, p), converged (B,), information (B, p, p)."""
    theta = np.array(start, dtype=float)
    v = _centring(n, theta.shape[1])
    shift = np.outer(v, v)
    loglik, grad, info = _assemble(theta, stats, n, davidson, ridge)
    converged = np.zeros(theta.shape[0], dtype=bool)
    for _ in range(max_iterations):
        todo = np.flatnonzero(~converged)
        if todo.size == 0:
            break
        step = np.linalg.solve(info[todo] + shift, grad[todo][..., None])[..., 0]
        theta[todo], _ = _line_search(theta[todo], step, loglik[todo], stats[todo], n, davidson, ridge)
        converged[todo] = np.abs(step).max(axis=1) < tolerance
        loglik[todo], grad[todo], info[todo] = _assemble(theta[todo], stats[todo], n, davidson, ridge)
    return theta, converged, info


def _reachability(stats, n) -> np.ndarray:
    """(B, n, n): whether system i reaches j along 'has won or tied against' edges (boolean matrix powers)."""
    i, j = _pairs(n)
    edges = np.zeros((stats.shape[0], n, n))
    edges[:, i, j] = (stats[..., 0] + stats[..., 2]) > 0
    edges[:, j, i] = (stats[..., 1] + stats[..., 2]) > 0
    edges[:, np.arange(n), np.arange(n)] = 1.0
    for _ in range(int(np.ceil(np.log2(max(n - 1, 2))))):
        edges = (edges @ edges > 0).astype(float)
    return edges > 0


def _exists(stats, n, davidson) -> np.ndarray:
    """Whether the maximum-likelihood estimate is finite, per resample.

    Ford's (1957) condition: every split of the systems into two groups has a win (or tie) each way across it,
    i.e. the 'won or tied against' graph is strongly connected. Davidson's nu is also finite only with at least
    one decisive comparison (all ties send nu to infinity); no tie at all puts nu at 0 (handled by the caller)."""
    ok = _reachability(stats, n).all(axis=(1, 2))
    if davidson:
        ok &= (stats[..., 0] + stats[..., 1]).sum(axis=1) > 0
    return ok


def _no_mle_message(stats: np.ndarray, n: int, davidson: bool) -> str:
    """Which systems make the maximum-likelihood strengths infinite, in words."""
    if davidson and (stats[:, 0] + stats[:, 1]).sum() == 0:
        return "every comparison is a tie: Davidson's nu has no finite maximum-likelihood estimate"
    reach = _reachability(stats[None], n)[0]
    component = [frozenset(np.flatnonzero(reach[k] & reach[:, k]).tolist()) for k in range(n)]
    compared = np.zeros(n)
    i, j = _pairs(n)
    np.add.at(compared, i, stats.sum(axis=1))
    np.add.at(compared, j, stats.sum(axis=1))
    problems = []
    for group in sorted(set(component), key=min):
        members = sorted(group)
        outside = [k for k in range(n) if k not in group]
        never_won = not reach[np.ix_(members, outside)].any()
        never_lost = not reach[np.ix_(outside, members)].any()
        who = f"system {members[0]}" if len(members) == 1 else f"systems {members}"
        if len(members) == 1 and compared[members[0]] == 0:
            problems.append(f"{who} has no comparisons")
        elif never_won:
            problems.append(f"{who} never won nor tied against the other systems")
        elif never_lost:
            problems.append(f"{who} never lost nor tied against the other systems")
    return ("no finite maximum-likelihood strengths: " + "; ".join(problems)
            + " (pass ridge > 0 for a penalised estimate)")


# --- the fit ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BradleyTerryFit:
    """A Bradley-Terry fit (Bradley & Terry 1952), ties as half wins or by Davidson (1970).

    Attributes
    ----------
    strength : ndarray, shape (n_systems,)
        Log-strengths ``s`` (P(i beats j) = 1 / (1 + exp(s_j - s_i)) without ties), centred to mean 0. NaN when
        the fit failed (see ``message``).
    covariance : ndarray, shape (n_systems, n_systems)
        Model-based covariance of ``strength``: the inverse information in the centred parametrisation (the
        Moore-Penrose inverse, singular by construction, rows sum to 0; with Davidson's model, nu profiled in).
        With ties as half wins this is the binomial model's covariance; use :func:`robust_covariance` for logs
        with ties or with repeated prompts and annotators.
    tie_parameter : float or None
        Davidson's nu on its natural scale (nu >= 0; two equal systems tie with probability nu / (2 + nu));
        0.0 when a Davidson fit's log has no tie (the boundary); None for ``ties="half"``.
    log_likelihood : float
        At the estimate (without the ridge penalty); for ``ties="half"`` the fractional-outcome log-likelihood.
    converged : bool
    ties : str
        'half' or 'davidson'.
    message : str
        Why the fit failed (which systems never won or never lost), or a note; '' when all is well.
    information : ndarray or None
        The information matrix of (strength, log nu) at the estimate (ridge included), for sandwiches.
    ridge : float
        The ridge penalty the fit used (0 for the maximum-likelihood estimate).
    """

    strength: np.ndarray
    covariance: np.ndarray
    tie_parameter: float | None
    log_likelihood: float
    converged: bool
    ties: str
    message: str = ""
    information: np.ndarray | None = None
    ridge: float = 0.0

    @property
    def _davidson_fitted(self) -> bool:
        return self.information is not None and self.information.shape[0] == self.strength.size + 1

    def scores(self, first, second, outcome, *, weights=None, with_tie: bool = False) -> np.ndarray:
        """Per-comparison score vectors (derivatives of each comparison's log-likelihood), for sandwiches.

        Parameters
        ----------
        first, second, outcome : array_like
            The comparisons the model was fitted to (as :func:`bradley_terry`).
        weights : array_like, optional
            The fit's weights; each score is multiplied by its comparison's weight.
        with_tie : bool
            Also return the derivative in log nu (a last column) for a Davidson fit with ties.

        Returns
        -------
        ndarray, shape (n_comparisons, n_systems) or (n_comparisons, n_systems + 1)
            Each row sums to 0 over the systems (a shift of all strengths changes nothing).

        Examples
        --------
        >>> fit = bradley_terry([0, 1, 0, 1], [1, 0, 1, 0], [1.0, 1.0, 0.0, 0.5], 2)
        >>> fit.scores([0, 1, 0, 1], [1, 0, 1, 0], [1.0, 1.0, 0.0, 0.5]).sum(axis=0).round(12) + 0.0
        array([0., 0.])
        """
        log = _check_log(first, second, outcome, self.strength.size, weights)
        full = _comparison_scores(self, log)
        return full if with_tie else full[:, :self.strength.size]


def _comparison_scores(fit: BradleyTerryFit, log: _Log) -> np.ndarray:
    n = fit.strength.size
    rows = np.arange(log.outcome.size)
    d = fit.strength[log.first] - fit.strength[log.second]
    scores = np.zeros((rows.size, n + fit._davidson_fitted))
    if fit._davidson_fitted:
        tau = np.log(fit.tie_parameter)
        log_denominator = np.logaddexp(np.logaddexp(0.5 * d, -0.5 * d), tau)
        p_first, p_second = np.exp(0.5 * d - log_denominator), np.exp(-0.5 * d - log_denominator)
        decisive = (log.outcome == FIRST).astype(float) - (log.outcome == SECOND)
        g = log.weights * 0.5 * (decisive - (p_first - p_second))
        scores[:, n] = log.weights * ((log.outcome == TIE) - np.exp(tau - log_denominator))
    else:
        # Also a Davidson fit with nu = 0: the model is then the logistic one of the decisive comparisons.
        g = log.weights * (log.outcome - special.expit(d))
    scores[rows, log.first] += g
    scores[rows, log.second] -= g
    return scores


def _failed_fit(n, ties, message) -> BradleyTerryFit:
    nan = np.full(n, np.nan)
    return BradleyTerryFit(nan, np.full((n, n), np.nan), None if ties == "half" else float("nan"), float("nan"),
                           False, ties, message)


def _start(n, davidson, stats) -> np.ndarray:
    start = np.zeros(n + davidson)
    if davidson:
        # nu such that equal systems tie at the observed rate: P(tie) = nu / (2 + nu)
        share = stats[..., 2].sum() / stats.sum()
        start[n] = np.log(2 * share / (1 - share))
    return start


def _projected_inverse(info: np.ndarray, n: int) -> np.ndarray:
    """The covariance of the centred estimates: P (J + v v')^{-1} P, P the projection off the shift v.

    Without a ridge this is the Moore-Penrose inverse of the singular information J."""
    v = _centring(n, info.shape[0])
    projection = np.eye(info.shape[0]) - np.outer(v, v)
    return projection @ np.linalg.inv(info + np.outer(v, v)) @ projection


def _fit_stats(stats, n, ties, max_iterations, tolerance, ridge) -> BradleyTerryFit:
    has_ties = stats[:, 2].sum() > 0
    if ridge == 0 and not _exists(stats[None], n, ties == "davidson" and has_ties)[0]:
        return _failed_fit(n, ties, _no_mle_message(stats, n, ties == "davidson"))
    davidson = ties == "davidson" and has_ties
    if davidson and (stats[:, 0] + stats[:, 1]).sum() == 0:
        return _failed_fit(n, ties, _no_mle_message(stats, n, True))
    theta, converged, info = _newton(stats[None], n, davidson, _start(n, davidson, stats)[None], ridge,
                                     max_iterations, tolerance)
    theta, info = theta[0], info[0]
    message = "" if converged[0] else f"Newton's method did not converge in {max_iterations} iterations"
    if ties == "davidson" and not has_ties:
        message = "no tie in the log: Davidson's nu is 0 (the boundary) and the fit is Bradley-Terry's"
    covariance = _projected_inverse(info, n)[:n, :n]
    nu = None if ties == "half" else (float(np.exp(theta[n])) if davidson else 0.0)
    loglik = float(_loglik(theta[None], stats[None], n, davidson)[0])
    return BradleyTerryFit(theta[:n].copy(), covariance, nu, loglik, bool(converged[0]), ties, message, info,
                           float(ridge))


def _check_options(ties, max_iterations, tolerance, ridge=0.0):
    problems = []
    if ties not in TIES:
        problems.append(f"ties must be 'half' (a tie is half a win to each side) or 'davidson'; got {ties!r}")
    if not is_integer(max_iterations, 1):
        problems.append(f"max_iterations must be an integer of at least 1; got {max_iterations!r}")
    if not is_number(tolerance) or not tolerance > 0:
        problems.append(f"tolerance must be a positive number; got {tolerance!r}")
    if not is_number(ridge) or not 0 <= ridge < np.inf:
        problems.append(f"ridge must be a finite number of at least 0; got {ridge!r}")
    if problems:
        raise ConfigError(problems)


def bradley_terry(first, second, outcome, n_systems, *, ties="half", weights=None, max_iterations=100,
                  tolerance=1e-10, ridge=0.0) -> BradleyTerryFit:
    """Maximum-likelihood Bradley-Terry strengths of a log of pairwise comparisons.

    ``ties="half"``: a tie is half a win to each side (the Chatbot Arena's convention, Chiang et al. 2024), i.e.
    the logistic likelihood sum w [y log p + (1 - y) log(1 - p)] with p = 1 / (1 + exp(s_second - s_first))
    and fractional outcomes y. ``ties="davidson"``: Davidson's (1970) model, P(i beats j) = pi_i / (pi_i + pi_j
    + nu sqrt(pi_i pi_j)), P(tie) = nu sqrt(pi_i pi_j) / (same), pi = exp(s).

    Newton's method with a line search on the per-pair table. When the estimate is infinite (a system, or a
    group of systems, never won or never lost against the rest; Ford 1957) the fit is returned with
    ``converged=False``, NaN strengths and a ``message`` naming the systems; ``ridge > 0`` instead maximises the
    log-likelihood minus ``ridge / 2 * sum(s**2)`` (a normal prior on the log-strengths), which always exists.

    Parameters
    ----------
    first, second : array_like of int
        The two systems of each comparison, in ``0..n_systems-1``, different.
    outcome : array_like of float
        1 (:data:`FIRST` preferred), 0.5 (:data:`TIE`) or 0 (:data:`SECOND` preferred).
    n_systems : int
    ties : {'half', 'davidson'}
    weights : array_like of float, optional
        Non-negative weight of each comparison (default 1).
    max_iterations : int
    tolerance : float
        Converged when the largest Newton step is below this.
    ridge : float
        0 (default) for the maximum-likelihood estimate.

    Returns
    -------
    BradleyTerryFit

    Examples
    --------
    >>> fit = bradley_terry([0, 0, 1, 2, 2, 1], [1, 2, 2, 0, 1, 0], [1, 1, 0.5, 0, 0, 1], 3)
    >>> fit.strength.round(3), fit.converged
    (array([ 0.862,  0.446, -1.308]), True)
    >>> bradley_terry([0, 0], [1, 1], [1, 1], 2).message  # doctest: +ELLIPSIS
    'no finite maximum-likelihood strengths: system 0 never lost nor tied against the other systems; ...'
    """
    _check_options(ties, max_iterations, tolerance, ridge)
    log = _check_log(first, second, outcome, n_systems, weights)
    return _fit_stats(_pair_stats(log), n_systems, ties, max_iterations, tolerance, float(ridge))


# --- cluster-robust covariance ---------------------------------------------------------------------------

def _cluster_meat(scores: np.ndarray, codes: np.ndarray, n_clusters: int) -> np.ndarray:
    """Sum over clusters of the outer product of the cluster's score sum, times G / (G - 1)."""
    sums = np.stack([np.bincount(codes, scores[:, k], minlength=n_clusters) for k in range(scores.shape[1])], 1)
    return n_clusters / (n_clusters - 1) * sums.T @ sums


def _clusterings(clusters) -> list:
    """A single label array as a list of one clustering; a sequence of label arrays as it is."""
    if isinstance(clusters, (np.ndarray, pd.Series)) and np.ndim(clusters) == 1:
        return [clusters]
    clusters = list(clusters)
    if not clusters:
        raise ConfigError("clusters must hold at least one clustering (a label per comparison)")
    return [clusters] if np.ndim(clusters[0]) == 0 else clusters


def robust_covariance(fit: BradleyTerryFit, first, second, outcome, clusters, *, weights=None) -> np.ndarray:
    """Cluster-robust (sandwich) covariance of a fit's centred log-strengths.

    One clustering: B (sum_g u_g u_g') B * G / (G - 1), B the inverse information (centred), u_g the sum of the
    scores of cluster g (the CR1 estimator without statsmodels' further (N - 1) / (N - K) factor). Several
    clusterings (e.g. annotator and prompt): Cameron, Gelbach & Miller (2011), the inclusion-exclusion sum
    over every non-empty subset of clusterings of (-1)^(|subset| + 1) V(clusters of the subset's intersection),
    e.g. V_a + V_d - V_ad, each with its own G / (G - 1); when that is not positive semi-definite its negative
    eigenvalues are set to 0 (as they suggest). With Davidson's model nu is a parameter of the sandwich too.
    (For a ``ridge`` fit the bread is the penalised information's inverse: a sandwich of the penalised fit.)

    Parameters
    ----------
    fit : BradleyTerryFit
        A converged fit of these comparisons (NaN is returned for a failed one).
    first, second, outcome : array_like
        The comparisons of the fit.
    clusters : array_like or sequence of array_like
        One label array (one entry per comparison), or a sequence of them for multi-way clustering.
    weights : array_like, optional
        The fit's weights.

    Returns
    -------
    ndarray, shape (n_systems, n_systems)

    Examples
    --------
    >>> first, second, outcome = [0, 1, 2, 0, 1, 2], [1, 2, 0, 1, 2, 0], [1, 1, 0, 0, 1, 0.5]
    >>> fit = bradley_terry(first, second, outcome, 3)
    >>> robust_covariance(fit, first, second, outcome, [[0, 0, 1, 1, 2, 2]]).sum(axis=1).round(12) + 0.0
    array([0., 0., 0.])
    """
    n = fit.strength.size
    log = _check_log(first, second, outcome, n, weights)
    if not fit.converged or fit.information is None:
        return np.full((n, n), np.nan)
    coded = [_check_labels(f"clusters[{k}]", labels, log.outcome.size)
             for k, labels in enumerate(_clusterings(clusters))]
    for k, (_, count) in enumerate(coded):
        if count < 2:
            raise ConfigError(f"clusters[{k}] has {count} cluster; a cluster-robust covariance needs at least 2")
    scores = _comparison_scores(fit, log)
    bread = _projected_inverse(fit.information, n)
    total = np.zeros_like(bread)
    for size in range(1, len(coded) + 1):
        for subset in itertools.combinations(coded, size):
            codes = np.zeros(log.outcome.size, dtype=np.int64)
            for labels, count in subset:
                codes = codes * count + labels
            codes, count = _check_labels("clusters", codes, codes.size)
            meat = _cluster_meat(scores, codes, count) if count > 1 else np.zeros_like(bread)
            total += (-1) ** (size + 1) * bread @ meat @ bread
    if len(coded) > 1:
        values, vectors = np.linalg.eigh((total + total.T) / 2)
        total = (vectors * np.clip(values, 0, None)) @ vectors.T
    return total[:n, :n]


# --- Elo scale, win rates, sign tests --------------------------------------------------------------------

def elo(strength, *, anchor=None, anchor_value=1000.0, scale=400 / np.log(10)) -> np.ndarray:
    """Log-strengths on the Chatbot Arena's Elo scale (Chiang et al. 2024): ``scale * strength`` shifted.

    400 / ln 10 per unit of log-strength, so that 400 Elo points are odds of 10 to 1; system ``anchor`` (an
    index) at ``anchor_value``, or the mean at ``anchor_value`` when ``anchor`` is None.

    Examples
    --------
    >>> elo([0.5, -0.5]).round(1)
    array([1086.9,  913.1])
    >>> elo([0.5, -0.5], anchor=1, anchor_value=800).round(1)
    array([973.7, 800. ])
    """
    strength = np.asarray(strength, dtype=float)
    if anchor is not None and not (is_integer(anchor, 0) and anchor < strength.size):
        raise ConfigError(f"anchor must be a system index 0..{strength.size - 1} or None; got {anchor!r}")
    rating = scale * strength
    reference = rating.mean() if anchor is None else rating[anchor]
    return rating - reference + anchor_value


def win_rates(first, second, outcome, n_systems) -> tuple[np.ndarray, np.ndarray]:
    """Share of each system's comparisons with each other that it won (ties half), and their counts.

    Returns
    -------
    share : ndarray, shape (n_systems, n_systems)
        ``share[i, j]``: i's wins plus half its ties against j, over their comparisons; NaN where none.
    count : ndarray of int, shape (n_systems, n_systems)
        Comparisons of i with j (symmetric, 0 on the diagonal).

    Examples
    --------
    >>> share, count = win_rates([0, 0, 1], [1, 1, 2], [1, 0.5, 0], 3)
    >>> share
    array([[ nan, 0.75,  nan],
           [0.25,  nan, 0.  ],
           [ nan, 1.  ,  nan]])
    """
    log = _check_log(first, second, outcome, n_systems)
    cells = n_systems * n_systems
    forward, backward = log.first * n_systems + log.second, log.second * n_systems + log.first
    credit = (np.bincount(forward, log.outcome, cells) + np.bincount(backward, 1 - log.outcome, cells))
    count = np.bincount(forward, minlength=cells) + np.bincount(backward, minlength=cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(count > 0, credit / count, np.nan)
    return share.reshape(n_systems, n_systems), count.reshape(n_systems, n_systems)


def pair_sign_tests(first, second, outcome, units, n_systems) -> pd.DataFrame:
    """Per pair of systems, the exact sign test over units (documents or blocks) of who won more.

    On each unit where the pair (i < j) was compared, i's share of the pair's comparisons (ties half); the
    two-sided binomial test of P(share > 0.5) = 1/2 over the units whose share is not 0.5 (scipy's binomtest).

    Returns
    -------
    pandas.DataFrame
        One row per pair i < j in model order: system_i, system_j, estimate (mean over units of share - 0.5,
        oriented i minus j), n_units, n_informative, p_value (NaN when no unit is informative) and status
        ('ok', 'no informative unit' or 'no comparisons').

    Examples
    --------
    >>> pair_sign_tests([0, 0, 0], [1, 1, 1], [1, 1, 0.5], ["a", "b", "c"], 2)
       system_i  system_j  estimate  n_units  n_informative  p_value status
    0         0         1  0.333333        3              2      0.5     ok
    """
    found = pair_sign_arrays(first, second, outcome, units, n_systems)
    status = np.where(found["n_informative"] > 0, "ok",
                      np.where(found["n_units"] > 0, "no informative unit", "no comparisons"))
    system_i, system_j = _pairs(n_systems)
    return pd.DataFrame({"system_i": system_i.astype(int), "system_j": system_j.astype(int),
                         "estimate": found["estimate"], "n_units": found["n_units"],
                         "n_informative": found["n_informative"], "p_value": found["p_value"], "status": status})


def pair_sign_arrays(first, second, outcome, units, n_systems) -> dict:
    """:func:`pair_sign_tests` as arrays over the pairs (i < j, model order), without a table: what a simulation
    calls once per trial (estimate, n_units, n_informative, p_value; NaN where a pair has no informative unit).

    The exact two-sided binomial test at 1/2 is symmetric, so its p-value is min(1, 2 P(X <= min(k, n - k)))
    for k units favouring i of n informative ones: scipy's binomtest gives the same (tests/test_preferences_stats.py).
    """
    log = _check_log(first, second, outcome, n_systems)
    unit_codes, _ = _check_labels("units", units, log.outcome.size)
    pair, credit = _pair_codes(log)
    n_pairs = n_systems * (n_systems - 1) // 2
    cells, cell_of = np.unique(unit_codes * n_pairs + pair, return_inverse=True)
    share = np.bincount(cell_of, credit) / np.bincount(cell_of)
    cell_pair = cells % n_pairs
    n_units = np.bincount(cell_pair, minlength=n_pairs)
    informative = share != 0.5
    n_informative = np.bincount(cell_pair[informative], minlength=n_pairs)
    favouring = np.bincount(cell_pair[informative & (share > 0.5)], minlength=n_pairs)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.where(n_units > 0, np.bincount(cell_pair, share - 0.5, n_pairs) / n_units, np.nan)
    smaller = np.minimum(favouring, n_informative - favouring)
    p_value = np.where(n_informative > 0, np.minimum(1.0, 2.0 * stats.binom.cdf(smaller, n_informative, 0.5)),
                       np.nan)
    return {"estimate": estimate, "n_units": n_units, "n_informative": n_informative, "p_value": p_value}


# --- bootstrap -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BootstrapInterval:
    """Percentile bootstrap intervals of the centred log-strengths.

    Attributes
    ----------
    lower, upper : ndarray, shape (n_systems,)
        NaN when no resample could be fitted.
    draws : ndarray, shape (n_ok, n_systems)
        The centred log-strengths of every resample whose fit succeeded.
    n_failed : int
        Resamples without a finite estimate (a system never won or never lost in them) or not converged; they
        are not in ``draws`` and the intervals are conditional on success: report this count.
    level : float
    n_resamples : int
    """

    lower: np.ndarray
    upper: np.ndarray
    draws: np.ndarray
    n_failed: int
    level: float
    n_resamples: int = 0


def _resample_counts(rng, n_units: int, size: int) -> np.ndarray:
    """(size, n_units): how often each unit is drawn when n_units are drawn with replacement, per resample."""
    picks = rng.integers(0, n_units, size=(size, n_units)) + n_units * np.arange(size)[:, None]
    return np.bincount(picks.ravel(), minlength=size * n_units).reshape(size, n_units).astype(float)


def _fit_batch(stats, n, ties, start, max_iterations, tolerance):
    """Centred strengths (B, n) and success (B,) of a batch of per-pair tables.

    For Davidson, resamples without a tie have nu = 0 and Bradley-Terry's strengths (as :func:`bradley_terry`)."""
    strength = np.full((stats.shape[0], n), np.nan)
    ok = np.zeros(stats.shape[0], dtype=bool)
    has_ties = stats[..., 2].sum(axis=1) > 0
    davidson_rows = has_ties if ties == "davidson" else np.zeros_like(has_ties)
    for davidson in (False, True):
        rows = np.flatnonzero(davidson_rows == davidson)
        if rows.size == 0:
            continue
        exists = _exists(stats[rows], n, davidson)
        rows = rows[exists]
        theta0 = np.broadcast_to(start[:n + davidson], (rows.size, n + davidson))
        theta, converged, _ = _newton(stats[rows], n, davidson, theta0, 0.0, max_iterations, tolerance)
        strength[rows] = theta[:, :n]
        ok[rows] = converged
    return strength, ok


def _warm_start(full: BradleyTerryFit, stats: np.ndarray, n: int) -> np.ndarray:
    """(strengths, log nu) to start every resample's Newton iterations from: the full log's fit where it exists
    (resamples are near it), else 0 and the tie rate's nu."""
    mixed = stats[:, 2].sum() > 0 and stats[:, :2].sum() > 0
    start = _start(n, True, stats) if mixed else np.zeros(n + 1)
    if full.converged:
        start[:n] = full.strength
        if full.tie_parameter:  # a Davidson fit with ties (0.0 when the log has none)
            start[n] = np.log(full.tie_parameter)
    return start


def _cell_table(log: _Log, prompt_codes, judge_codes, n_judges):
    """The log aggregated to (prompt, judge, pair) cells, the cells sorted by pair for np.add.reduceat."""
    pair, columns = _comparison_stats(log)
    n_pairs = log.n_systems * (log.n_systems - 1) // 2
    keys, cell_of = np.unique((prompt_codes * n_judges + judge_codes) * n_pairs + pair, return_inverse=True)
    cell_stats = np.stack([np.bincount(cell_of, columns[:, k]) for k in range(3)], axis=1)
    order = np.argsort(keys % n_pairs, kind="stable")
    keys, cell_stats = keys[order], cell_stats[order]
    cell_pair = keys % n_pairs
    starts = np.flatnonzero(np.r_[True, cell_pair[1:] != cell_pair[:-1]])
    return dict(prompt=keys // n_pairs // n_judges, judge=keys // n_pairs % n_judges, stats=cell_stats,
                starts=starts, pairs=cell_pair[starts], n_pairs=n_pairs)


def _check_bootstrap_options(rng, n_resamples, level, ties):
    problems = []
    if not isinstance(rng, np.random.Generator):
        problems.append(f"rng must be a numpy Generator (numpy.random.default_rng(seed)); got {type(rng).__name__}")
    if not is_integer(n_resamples, 1):
        problems.append(f"n_resamples must be an integer of at least 1; got {n_resamples!r}")
    if not is_number(level) or not 0 < level < 1:
        problems.append(f"level must be a number between 0 and 1 (exclusive); got {level!r}")
    if ties not in TIES:
        problems.append(f"ties must be 'half' (a tie is half a win to each side) or 'davidson'; got {ties!r}")
    if problems:
        raise ConfigError(problems)


def bootstrap_strengths(first, second, outcome, n_systems, *, prompts, judges=None, rng, n_resamples=1000,
                        ties="half", level=0.95, max_iterations=50, tolerance=1e-8) -> BootstrapInterval:
    """Percentile bootstrap intervals of the centred log-strengths, resampling prompts (and judges).

    Each resample draws the prompts with replacement (every comparison of a drawn prompt comes along, as many
    times as the prompt is drawn) and, when ``judges`` is given, the judges independently too (a comparison's
    weight is then its prompt's count times its judge's count: a two-way cluster bootstrap). All resamples are
    fitted at once by Newton's method on their per-pair tables, warm-started from the full log's fit.

    Parameters
    ----------
    first, second, outcome, n_systems : as :func:`bradley_terry`
    prompts : array_like
        The prompt (document) of each comparison: any labels.
    judges : array_like, optional
        The judge (annotator) of each comparison.
    rng : numpy.random.Generator
    n_resamples : int
    ties : {'half', 'davidson'}
    level : float
        Of the two-sided percentile intervals.

    Returns
    -------
    BootstrapInterval
        Failed resamples (no finite estimate) are counted in ``n_failed``, not silently dropped.

    Examples
    --------
    >>> first, second = [0, 1, 2] * 4, [1, 2, 0] * 4
    >>> outcome = [1, 1, 0, 0, 1, 1, 1, 0.5, 0, 1, 0, 0]
    >>> result = bootstrap_strengths(first, second, outcome, 3, prompts=range(12),
    ...                              rng=np.random.default_rng(1), n_resamples=200)
    >>> result.draws.shape[0] + result.n_failed, bool(np.all(result.lower <= result.upper))
    (200, True)
    """
    _check_bootstrap_options(rng, n_resamples, level, ties)
    log = _check_log(first, second, outcome, n_systems)
    prompt_codes, n_prompts = _check_labels("prompts", prompts, log.outcome.size)
    judge_codes, n_judges = (np.zeros_like(prompt_codes), 1) if judges is None else _check_labels(
        "judges", judges, log.outcome.size)
    table = _cell_table(log, prompt_codes, judge_codes, n_judges)
    full_stats = _pair_stats(log)
    full = _fit_stats(full_stats, n_systems, ties, 100, 1e-10, 0.0)
    start = _warm_start(full, full_stats, n_systems)
    chunk = max(1, _BOOTSTRAP_CHUNK_ELEMENTS // max(len(table["prompt"]), n_systems * n_systems))
    draws, n_failed = [], 0
    for done in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - done)
        weight = _resample_counts(rng, n_prompts, size)[:, table["prompt"]]
        if judges is not None:
            weight *= _resample_counts(rng, n_judges, size)[:, table["judge"]]
        stats_batch = np.zeros((size, table["n_pairs"], 3))
        for k in range(3):
            stats_batch[:, table["pairs"], k] = np.add.reduceat(weight * table["stats"][:, k], table["starts"], 1)
        strength, ok = _fit_batch(stats_batch, n_systems, ties, start, max_iterations, tolerance)
        draws.append(strength[ok])
        n_failed += int((~ok).sum())
    draws = np.concatenate(draws)
    if draws.shape[0]:
        lower, upper = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    else:
        lower = upper = np.full(n_systems, np.nan)
    return BootstrapInterval(lower, upper, draws, n_failed, float(level), int(n_resamples))
