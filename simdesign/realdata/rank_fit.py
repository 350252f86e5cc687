"""Fit the rank-only model (b): the rank-ordered logit (Plackett-Luce) with crossed random slopes.

The model (:class:`simdesign.model.RankOnlyModel`): in the ranking of (annotator a, document d),
output s has latent value ``eta_s + e_s`` with standard Gumbel ``e_s`` and

    eta_s = beta_s + (L_a u_a)_s + (L_d v_d)_s,   u_a, v_d ~ N(0, I),  s = 1..S-1;  eta_0 = 0,

so the slopes of the non-reference systems have covariances ``L_a L_a'`` and ``L_d L_d'`` (random
intercepts cancel in a ranking and are not in the model). Given the random effects, a ranking
(pi_1 best, ..., pi_S worst) has the closed-form probability
``prod_k exp(eta_{pi_k}) / sum_{j >= k} exp(eta_{pi_j})``.

The parameters are fitted by maximum likelihood with the Laplace approximation over the random
effects, parameterised as the native CLMM (:mod:`simdesign.clmm`) is: Cholesky factors with
diagonals bounded below at zero (L-BFGS-B), spherical random effects, a Newton mode search warm
started from the last mode, the Laplace value ``f(w*) + 0.5 log det H(w*)`` with
``f(w) = -sum_i log P(ranking_i | w) + 0.5 |w|^2`` and ``H = I + sum_i M_i' W_i M_i``
(``W_i`` = minus the Hessian of ranking i's log-probability in eta, ``M_i`` its random-effects
design). The clmm package's factorisation is built for one scalar eta per judgement; here each
ranking has a full S x S ``W_i``, so ``H`` is assembled densely (q = (S-1) x (annotators +
documents): 640 on the paper's files, a few milliseconds per factorisation; pilots with thousands
of annotators and documents would need the clmm package's block elimination).

The gradient is analytic (implicit-function theorem through the mode, as in :mod:`simdesign.clmm`).
With ``g_i`` the gradient of ranking i's log-probability in eta, ``K_i = M_i H^-1 M_i'``,
``t_i = d tr(K_i W_i) / d eta_i`` (for Plackett-Luce ``sum_k J_k (diag K_i - 2 K_i p_k)`` with
``p_k`` the choice probabilities at stage k and ``J_k`` their Jacobian), ``r = H^-1 sum_i M_i' t_i``
and ``rho_i = M_i r``, the derivative of the Laplace objective in a parameter ``phi`` is

    sum_i c_i . d eta_i/dphi + sum_i tr(H^-1 M_i' W_i dM_i/dphi) + 0.5 sum_i g_i . (dM_i/dphi) r,
    c_i = -g_i + 0.5 t_i - 0.5 W_i rho_i,

with ``d eta_i / dphi`` at fixed ``w``. Standard errors of beta come from the inverse Hessian of
the objective (forward differences of the analytic gradient), as for the CLMM.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import linalg, optimize, special

from simdesign.core.errors import ConfigError
from simdesign.core.suggest import did_you_mean
from simdesign.model import RankOnlyModel
from simdesign.realdata.check import observed_design

INNER_TOLERANCE = 1e-8
INNER_MAX_ITERATIONS = 60
# Dense assembly of H: beyond this many random effects a factorisation takes seconds and a fit minutes.
MAX_DENSE_EFFECTS = 6000
START_SD = 0.5


class RankFitError(RuntimeError):
    """The rank model could not be fitted (a numerical breakdown, not bad input)."""


@dataclass
class RankProblem:
    """Rankings as index arrays: ``order[i, k]`` is the system placed k-th (0 = best) in ranking i."""

    order: np.ndarray
    annotator: np.ndarray
    document: np.ndarray
    n_annotators: int
    n_documents: int
    systems: tuple

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def q(self) -> int:
        return (self.n_systems - 1) * (self.n_annotators + self.n_documents)

    @classmethod
    def from_scores(cls, scores: np.ndarray, annotator, document, systems) -> "RankProblem":
        """From reversed ranks (S = best), one row per ranking, in the systems' order."""
        order = np.argsort(-np.asarray(scores), axis=1, kind="stable")
        annotator = pd.factorize(np.asarray(annotator), sort=True)[0]
        document = pd.factorize(np.asarray(document), sort=True)[0]
        return cls(order, annotator, document, int(annotator.max()) + 1, int(document.max()) + 1, tuple(systems))


@dataclass
class _Terms:
    loglik: np.ndarray  # (n,)
    g: np.ndarray  # (n, S) gradient of log P in eta
    w: np.ndarray  # (n, S, S) minus the Hessian
    p: np.ndarray  # (n, S-1, S) choice probabilities per stage (0 outside the remaining set)


def plackett_luce_terms(eta: np.ndarray, order: np.ndarray) -> _Terms:
    """Log-probability of each ranking given eta, with its gradient and minus its Hessian in eta."""
    n, s_count = eta.shape
    rows = np.arange(n)[:, None]
    ordered = eta[rows, order]  # eta in ranked order
    stages = s_count - 1
    # remaining[k, j]: position j is still unranked at stage k (j >= k).
    remaining = np.triu(np.ones((stages, s_count), dtype=bool))
    logits = np.where(remaining[None], ordered[:, None, :], -np.inf)
    log_norm = special.logsumexp(logits, axis=2)  # (n, stages)
    loglik = ordered[:, :stages].sum(axis=1) - log_norm.sum(axis=1)
    p_ordered = np.exp(logits - log_norm[:, :, None])
    p = np.zeros((n, stages, s_count))
    p[rows[:, :, None], np.arange(stages)[None, :, None], order[:, None, :]] = p_ordered
    chosen = np.zeros((n, s_count))
    chosen[rows, order[:, :stages]] = 1.0
    g = chosen - p.sum(axis=1)
    w = -np.einsum("nks,nkt->nst", p, p)
    w[:, np.arange(s_count), np.arange(s_count)] += p.sum(axis=1)
    return _Terms(loglik, g, w, p)


def trace_gradient(p: np.ndarray, k_matrix: np.ndarray) -> np.ndarray:
    """d tr(K W(eta)) / d eta per ranking, K held fixed: sum_k J_k (diag K - 2 K p_k)."""
    diag = np.diagonal(k_matrix, axis1=1, axis2=2)  # (n, S)
    a = diag[:, None, :] - 2.0 * np.einsum("nst,nkt->nks", k_matrix, p)  # (n, stages, S)
    # J_k a = p_k * a - p_k (p_k . a)
    return (p * a - p * np.einsum("nks,nks->nk", p, a)[:, :, None]).sum(axis=1)


@dataclass
class _Point:
    value: float
    mode: np.ndarray
    gradient: np.ndarray | None = None
    inner_iterations: int = 0


def _unpack(theta: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """theta = (beta_1..beta_{S-1}, vech L_a, vech L_d) -> full beta (reference 0), L_a, L_d."""
    tri = np.tril_indices(size)
    n_tri = len(tri[0])
    beta = np.concatenate([[0.0], theta[:size]])
    factors = []
    for start in (size, size + n_tri):
        lower = np.zeros((size, size))
        lower[tri] = theta[start:start + n_tri]
        factors.append(lower)
    return beta, factors[0], factors[1]


def _loadings(problem: RankProblem, chol_a: np.ndarray, chol_d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P L: the S x (S-1) maps from spherical effects to eta (the reference row is 0)."""
    size = problem.n_systems - 1
    embed = np.vstack([np.zeros((1, size)), np.eye(size)])
    return embed @ chol_a, embed @ chol_d


def _columns(problem: RankProblem) -> tuple[np.ndarray, np.ndarray]:
    """Column indices in w of each ranking's annotator and document effects, shape (n, S-1) each."""
    size = problem.n_systems - 1
    offset = problem.n_annotators * size
    base = np.arange(size)[None, :]
    return problem.annotator[:, None] * size + base, offset + problem.document[:, None] * size + base


def _eta(problem, beta, load_a, load_d, w):
    size = problem.n_systems - 1
    u = w[:problem.n_annotators * size].reshape(-1, size)
    v = w[problem.n_annotators * size:].reshape(-1, size)
    return beta[None, :] + u[problem.annotator] @ load_a.T + v[problem.document] @ load_d.T


@dataclass
class _Factorisation:
    """H = [[A, C], [C', D]] in (kept factor, eliminated factor) order; D is block diagonal.

    The factor with more levels (usually documents) is eliminated block by block and only the Schur
    complement ``A - C D^-1 C'`` of the other is factorised densely, as in :mod:`simdesign.clmm`.
    """

    kept: str  # 'a' or 'd'
    d_inverse: np.ndarray  # (n_elim, size, size)
    x_full: np.ndarray  # C D^-1, (n_keep*size, n_elim*size)
    schur: tuple  # cho_factor of the Schur complement
    log_det: float
    kept_slice: slice
    elim_slice: slice

    def solve(self, b: np.ndarray) -> np.ndarray:
        """H^-1 b in the w layout (annotators, then documents)."""
        b_keep, b_elim = b[self.kept_slice], b[self.elim_slice]
        x_keep = linalg.cho_solve(self.schur, b_keep - self.x_full @ b_elim)
        size = self.d_inverse.shape[1]
        c_t_x = (self.x_full.T @ x_keep)  # D^-1 C' x_keep, as x_full' = D^-1 C' (D symmetric)
        x_elim = np.einsum("eij,ej->ei", self.d_inverse, b_elim.reshape(-1, size)).ravel() - c_t_x
        out = np.empty_like(b)
        out[self.kept_slice], out[self.elim_slice] = x_keep, x_elim
        return out


def _codes(problem: RankProblem) -> dict:
    return {"a": problem.annotator, "d": problem.document}


def _factorise(problem: RankProblem, terms: _Terms, load_a: np.ndarray, load_d: np.ndarray) -> _Factorisation:
    """The structured factorisation of H = I + sum_i M_i' W_i M_i (class docstring)."""
    size = problem.n_systems - 1
    kept, elim = ("a", "d") if problem.n_documents >= problem.n_annotators else ("d", "a")
    loads, codes = {"a": load_a, "d": load_d}, _codes(problem)
    levels = {"a": problem.n_annotators, "d": problem.n_documents}
    slices = {"a": slice(0, problem.n_annotators * size), "d": slice(problem.n_annotators * size, problem.q)}
    blocks = {key: np.matmul(loads[key[0]].T, terms.w) @ loads[key[1]] for key in (kept + kept, elim + elim, kept + elim)}
    diag = {}
    for factor in (kept, elim):
        summed = np.zeros((levels[factor], size, size))
        np.add.at(summed, codes[factor], blocks[factor + factor])
        diag[factor] = summed + np.eye(size)
    d_inverse = np.linalg.inv(diag[elim])
    log_det_d = np.linalg.slogdet(diag[elim])[1].sum()
    n_keep, n_elim = levels[kept] * size, levels[elim] * size
    coupling = np.zeros((levels[kept], size, levels[elim], size))
    coupling[codes[kept], :, codes[elim], :] = blocks[kept + elim]  # one ranking per (annotator, document)
    x_full = (np.einsum("kiej,ejl->kiel", coupling, d_inverse)).reshape(n_keep, n_elim)
    schur = -(x_full @ coupling.reshape(n_keep, n_elim).T)
    levels_kept = np.arange(levels[kept])
    schur.reshape(levels[kept], size, levels[kept], size)[levels_kept, :, levels_kept, :] += diag[kept]
    factor = linalg.cho_factor((schur + schur.T) / 2)
    log_det = log_det_d + 2.0 * np.log(np.diag(factor[0])).sum()
    return _Factorisation(kept, d_inverse, x_full, factor, float(log_det), slices[kept], slices[elim])


def _inverse_blocks(problem: RankProblem, fact: _Factorisation) -> dict:
    """Blocks of H^-1 at each ranking: {('a','a'), ('a','d'), ('d','a'), ('d','d')} -> (n, size, size)."""
    size = problem.n_systems - 1
    kept = fact.kept
    elim = "d" if kept == "a" else "a"
    codes = _codes(problem)
    n_keep = fact.x_full.shape[0] // size
    schur_inverse = linalg.cho_solve(fact.schur, np.eye(n_keep * size))
    y = schur_inverse @ fact.x_full  # S^-1 C D^-1
    kk = schur_inverse.reshape(n_keep, size, n_keep, size)[codes[kept], :, codes[kept], :]
    ke = -y.reshape(n_keep, size, -1, size)[codes[kept], :, codes[elim], :]
    n_elim = fact.d_inverse.shape[0]
    correction = np.einsum("aei,aej->eij", fact.x_full.reshape(n_keep * size, n_elim, size),
                           y.reshape(n_keep * size, n_elim, size))
    ee = (fact.d_inverse + correction)[codes[elim]]
    return {(kept, kept): kk, (kept, elim): ke, (elim, kept): ke.transpose(0, 2, 1), (elim, elim): ee}


def _mode(problem, beta, load_a, load_d, start) -> tuple[np.ndarray, _Terms, _Factorisation, int]:
    """Newton search (with step halving) for the mode of the random effects; f is convex in w."""
    cols_a, cols_d = _columns(problem)
    w = start.copy()

    def objective(w):
        terms = plackett_luce_terms(_eta(problem, beta, load_a, load_d, w), problem.order)
        return -terms.loglik.sum() + 0.5 * w @ w, terms

    value, terms = objective(w)
    for iteration in range(INNER_MAX_ITERATIONS):
        grad = w.copy()
        np.add.at(grad, cols_a, -(terms.g @ load_a))
        np.add.at(grad, cols_d, -(terms.g @ load_d))
        fact = _factorise(problem, terms, load_a, load_d)
        if np.max(np.abs(grad)) < INNER_TOLERANCE:
            return w, terms, fact, iteration
        step = fact.solve(grad)
        for _ in range(30):
            candidate = w - step
            new_value, new_terms = objective(candidate)
            if new_value <= value + 1e-12:
                break
            step = step / 2
        else:
            raise RankFitError("the random-effects mode search made no progress")
        w, value, terms = candidate, new_value, new_terms
    raise RankFitError(f"the random-effects mode search did not converge in {INNER_MAX_ITERATIONS} steps")


def _laplace(problem: RankProblem, theta: np.ndarray, start: np.ndarray, gradient: bool = True) -> _Point:
    """The Laplace negative log-likelihood at theta, and its analytic gradient (module docstring)."""
    size = problem.n_systems - 1
    beta, chol_a, chol_d = _unpack(theta, size)
    load_a, load_d = _loadings(problem, chol_a, chol_d)
    w, terms, fact, iterations = _mode(problem, beta, load_a, load_d, start)
    value = -terms.loglik.sum() + 0.5 * w @ w + 0.5 * fact.log_det
    if not gradient:
        return _Point(float(value), w, None, iterations)
    cols_a, cols_d = _columns(problem)
    block = _inverse_blocks(problem, fact)
    # M_i H^-1 restricted to ranking i's annotator (d = document) columns, S x (S-1).
    mh_a = np.einsum("si,nij->nsj", load_a, block["a", "a"]) + np.einsum("si,nij->nsj", load_d, block["d", "a"])
    mh_d = np.einsum("si,nij->nsj", load_a, block["a", "d"]) + np.einsum("si,nij->nsj", load_d, block["d", "d"])
    k_matrix = np.einsum("nsj,tj->nst", mh_a, load_a) + np.einsum("nsj,tj->nst", mh_d, load_d)
    t = trace_gradient(terms.p, k_matrix)
    tau = np.zeros(problem.q)
    np.add.at(tau, cols_a, t @ load_a)
    np.add.at(tau, cols_d, t @ load_d)
    r = fact.solve(tau)
    rho = r[cols_a] @ load_a.T + r[cols_d] @ load_d.T
    c = -terms.g + 0.5 * t - 0.5 * np.einsum("nst,nt->ns", terms.w, rho)
    u = w[:problem.n_annotators * size].reshape(-1, size)[problem.annotator]
    v = w[problem.n_annotators * size:].reshape(-1, size)[problem.document]
    tri = np.tril_indices(size)
    parts = [c[:, 1:].sum(axis=0)]
    for effects, mh, cols in ((u, mh_a, cols_a), (v, mh_d, cols_d)):
        by_chol = (c[:, 1:].T @ effects + np.einsum("nst,ntj->nsj", terms.w, mh)[:, 1:, :].sum(axis=0)
                   + 0.5 * terms.g[:, 1:].T @ r[cols])
        parts.append(by_chol[tri])
    return _Point(float(value), w, np.concatenate(parts), iterations)


@dataclass
class RankFitResult:
    """A fitted rank-only model and how the fit went.

    Attributes
    ----------
    model : RankOnlyModel
    loglik : float
        Laplace log-likelihood.
    status : str
        'ok', 'singular' (a Cholesky diagonal on its bound 0) or 'not_converged'.
    beta_se : ndarray
        Standard errors of beta (reference 0 has SE 0); NaN if the Hessian is not positive definite.
    seconds : float
    message : str
    theta : ndarray
        The optimiser's parameters (beta, vech L_a, vech L_d).
    """

    model: RankOnlyModel
    loglik: float
    status: str
    beta_se: np.ndarray
    seconds: float
    message: str = ""
    theta: np.ndarray = field(default=None, repr=False)


def _start(problem: RankProblem) -> np.ndarray:
    size = problem.n_systems - 1
    tri = np.tril_indices(size)
    start_chol = (START_SD * np.eye(size))[tri]
    return np.concatenate([np.zeros(size), start_chol, start_chol])


def _bounds(size: int) -> list:
    tri = np.tril_indices(size)
    diagonal = [(0.0, None) if i == j else (None, None) for i, j in zip(*tri)]
    return [(None, None)] * size + diagonal + diagonal


def _beta_standard_errors(problem: RankProblem, theta: np.ndarray, mode: np.ndarray, step: float = 1e-4) -> np.ndarray:
    """SEs of beta from the inverse Hessian of the Laplace objective (forward differences of the gradient).

    Cholesky diagonals on their bound (< 1e-3) are left out, as ordinal::clmm leaves them out.
    """
    size = problem.n_systems - 1
    free = [k for k, (i, j) in enumerate(zip(*np.tril_indices(size))) if i != j or abs(theta[size + k]) >= 1e-3]
    n_tri = size * (size + 1) // 2
    free_d = [k for k, (i, j) in enumerate(zip(*np.tril_indices(size)))
              if i != j or abs(theta[size + n_tri + k]) >= 1e-3]
    keep = list(range(size)) + [size + k for k in free] + [size + n_tri + k for k in free_d]
    base = _laplace(problem, theta, mode).gradient
    hessian = np.empty((len(keep), len(keep)))
    for row, index in enumerate(keep):
        moved = theta.copy()
        moved[index] += step
        hessian[row] = (_laplace(problem, moved, mode).gradient - base)[keep] / step
    hessian = (hessian + hessian.T) / 2
    try:
        covariance = np.linalg.inv(hessian)
    except np.linalg.LinAlgError:
        return np.full(size + 1, np.nan)
    variances = np.diag(covariance)[:size]
    se = np.where(variances > 0, np.sqrt(np.abs(variances)), np.nan)
    return np.concatenate([[0.0], se])


def fit_rank_problem(problem: RankProblem, name: str = "fitted", provenance: str = "",
                     standard_errors: bool = True) -> RankFitResult:
    """Maximum Laplace likelihood of the rank-ordered logit with crossed random slopes.

    Parameters
    ----------
    problem : RankProblem
    name, provenance : str
        Recorded in the model.
    standard_errors : bool
        Compute beta's standard errors (S + S(S-1) more gradient evaluations).

    Returns
    -------
    RankFitResult

    Raises
    ------
    RankFitError
        The mode search or the optimiser broke down.
    """
    if problem.q > MAX_DENSE_EFFECTS:
        raise ConfigError(f"The rank fit assembles its random-effects Hessian densely and takes at most "
                          f"{MAX_DENSE_EFFECTS} random effects; this table has {problem.q} "
                          f"((systems - 1) x (annotators + documents))")
    started = time.process_time()
    size = problem.n_systems - 1
    state = {"mode": np.zeros(problem.q)}

    def objective(theta):
        point = _laplace(problem, theta, state["mode"])
        state["mode"] = point.mode
        return point.value, point.gradient

    found = optimize.minimize(objective, _start(problem), jac=True, method="L-BFGS-B", bounds=_bounds(size),
                              options={"maxiter": 2000, "maxcor": 50, "ftol": 1e-12, "gtol": 1e-6})
    theta = found.x
    beta, chol_a, chol_d = _unpack(theta, size)
    on_bound = np.concatenate([np.diag(chol_a), np.diag(chol_d)]) < 1e-3
    status = "ok" if found.success else "not_converged"
    if status == "ok" and on_bound.any():
        status = "singular"
    se = _beta_standard_errors(problem, theta, state["mode"]) if standard_errors else np.full(size + 1, np.nan)
    model = RankOnlyModel(name=name, systems=problem.systems, effects=beta, annotator_slope_cov=chol_a @ chol_a.T,
                          document_slope_cov=chol_d @ chol_d.T, provenance=provenance)
    return RankFitResult(model, -float(found.fun), status, se, time.process_time() - started,
                         "" if found.success else str(found.message), theta)


def rank_problem_from_frame(frame: pd.DataFrame, reference=None) -> RankProblem:
    """A checked Rank table (``score`` = reversed rank, S = best) as a :class:`RankProblem`.

    The reference system (default: the first in sorted order, as the Likert fit) comes first.
    """
    systems = sorted(frame["system"].astype(str).unique())
    if reference is not None:
        if str(reference) not in systems:
            raise ConfigError(f"--reference {reference!r} is not a system of the table; its systems are {systems}"
                              f"{did_you_mean(str(reference), systems)}")
        systems.remove(str(reference))
        systems.insert(0, str(reference))
    design, scores = observed_design(frame, systems)
    assignment = design.assignment
    return RankProblem.from_scores(scores, assignment.annotator, assignment.document, systems)


def fit_rank_only(frame: pd.DataFrame, reference=None, name: str = "fitted", source: dict | None = None,
                  standard_errors: bool = True) -> RankFitResult:
    """Fit the rank-only model (b) to a checked Rank table; the result's model is a ``kind: rank_only`` model.

    Examples
    --------
    >>> from simdesign.core.designs import BlockDesign
    >>> truth = RankOnlyModel("toy", ("a", "b", "c"), [0.0, 0.5, 1.0], np.eye(2) * 0.2, np.eye(2) * 0.1)
    >>> frame = truth.sample(BlockDesign(4, 5, 3), np.random.default_rng(0)).to_frame()
    >>> fit_rank_only(frame, standard_errors=False).status in ("ok", "singular")
    True
    """
    problem = rank_problem_from_frame(frame, reference)
    described = "" if not source else "; ".join(f"{k} {v}" for k, v in source.items())
    provenance = ("Rank-ordered logit (Plackett-Luce) with random slopes (system|annotator) + (system|document), "
                  "standard Gumbel noise, maximum Laplace likelihood (simdesign.realdata.rank_fit)"
                  + (f"; data: {described}" if described else ""))
    result = fit_rank_problem(problem, name=name, provenance=provenance, standard_errors=standard_errors)
    result.model = RankOnlyModel(name=name, systems=result.model.systems, effects=result.model.effects,
                                 annotator_slope_cov=result.model.annotator_slope_cov,
                                 document_slope_cov=result.model.document_slope_cov,
                                 provenance=provenance + f"; status {result.status}, log-likelihood {result.loglik:.2f}")
    return result
