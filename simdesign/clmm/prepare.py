"""Data preparation: the checked judgements table as index arrays, indicators and the structures of
the random-effects Hessian.

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse import csgraph

from simdesign.core.errors import ConfigError


STRUCTURES = ("maximal", "intercepts", "paper")


# A structure can also be given per term: {'annotator': 'slopes', 'document': 'intercept'} (a term left out
# is not fitted). 'slopes' is (1 + system | term), 'intercept' is (1 | term).
TERM_NAMES = ("annotator", "document")
TERM_FORMS = ("slopes", "intercept")


@dataclass
class _Factor:
    """One random-effects term: a grouping factor and its levels."""

    name: str
    codes: np.ndarray  # level of every observation, 0..n_levels-1
    levels: np.ndarray  # original labels
    indicator: sparse.csr_matrix  # n_levels x n_obs, sums observations by level
    # (1 | term) beside another term's slopes: its Cholesky factor is held at zero except L[0, 0], so
    # z_s . L u = L[0, 0] u_0 for every system (the shared z keeps the inner solver unchanged).
    intercept_only: bool = False

    @property
    def n_levels(self) -> int:
        return len(self.levels)


@dataclass
class _Problem:
    """Everything about the data that stays fixed during a fit."""

    systems: list
    categories: np.ndarray  # observed score values, sorted
    category: np.ndarray  # 0..K-1 per observation
    system_code: np.ndarray  # 0..S-1 per observation
    z: np.ndarray  # n x q random-effects design of each observation
    zz: np.ndarray  # n x q*q outer products z z'
    system_indicator: sparse.csr_matrix  # S x n
    threshold_upper: sparse.csr_matrix  # (K-1) x n: which threshold is each observation's upper one
    threshold_lower: sparse.csr_matrix  # (K-1) x n
    factors: list  # the _Factor terms in output order
    eliminated: _Factor  # the factor whose blocks are inverted one by one
    kept: _Factor | None  # the factor whose Schur complement is factorised densely (None: one term)
    pair_code: np.ndarray | None = None  # (kept, eliminated) pair of each observation
    pair_kept: np.ndarray | None = None
    pair_eliminated: np.ndarray | None = None
    pair_indicator: sparse.csr_matrix | None = None  # P x n
    pairs_by_kept: sparse.csr_matrix | None = None  # n_kept x P
    pairs_by_eliminated: sparse.csr_matrix | None = None  # n_eliminated x P
    couple_first: np.ndarray | None = None  # pairs p1, p2 that share an eliminated level
    couple_second: np.ndarray | None = None
    couple_by_first: sparse.csr_matrix | None = None  # P x n_couples
    couple_by_eliminated: sparse.csr_matrix | None = None  # n_eliminated x n_couples
    schur_groups: list = field(default_factory=list)  # _ComponentGroup: the Schur complement's diagonal blocks
    n_couples: int = 0
    compiled: object = None  # _CompiledArrays, built on first use by the compiled kernels

    @property
    def n_obs(self) -> int:
        return len(self.category)

    @property
    def n_thresholds(self) -> int:
        return len(self.categories) - 1

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def q(self) -> int:
        return self.z.shape[1]


def _indicator(codes: np.ndarray, n_levels: int) -> sparse.csr_matrix:
    n = len(codes)
    return sparse.csr_matrix((np.ones(n), (codes, np.arange(n))), shape=(n_levels, n))


def _check_frame(judgements: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(judgements, pd.DataFrame):
        raise ConfigError(f"judgements must be a pandas DataFrame; got {type(judgements).__name__}")
    missing = [c for c in ("annotator", "document", "system", "score") if c not in judgements.columns]
    if missing:
        raise ConfigError(f"The judgements table lacks the column(s) {missing}; "
                          "it needs annotator, document, system, score")
    for column in ("annotator", "document", "system", "score"):
        if judgements[column].isna().any():
            raise ConfigError(f"The '{column}' column has missing values")
    score = judgements["score"]
    if not pd.api.types.is_numeric_dtype(score):
        raise ConfigError(f"The 'score' column must be numeric (ordered score values); got dtype {score.dtype}")
    if not np.all(np.isfinite(score.to_numpy(float))):
        raise ConfigError("The 'score' column has non-finite values")
    if score.nunique() < 2:
        raise ConfigError("The 'score' column needs at least two distinct values to fit thresholds")
    if judgements["system"].nunique() < 2:
        raise ConfigError("The 'system' column needs at least two systems to compare")
    return judgements


def is_nested(judgements: pd.DataFrame) -> bool:
    """True when every document is judged by exactly one annotator.

    That is the design in which the paper (and ``structure='paper'``) drops the
    document term: document and annotator effects are then confounded.
    """
    return bool((judgements.groupby("document")["annotator"].nunique() == 1).all())


def term_forms(judgements: pd.DataFrame, structure) -> dict:
    """The random-effects terms a structure fits: {term: 'slopes' | 'intercept'} in fitting order.

    Parameters
    ----------
    judgements : pandas.DataFrame
    structure : str or mapping
        One of :data:`STRUCTURES`, or a mapping from term names
        (:data:`TERM_NAMES`) to forms (:data:`TERM_FORMS`).

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        An unknown structure, term or form, or no term at all.
    """
    if isinstance(structure, str):
        if structure not in STRUCTURES:
            raise ConfigError(f"structure must be one of {STRUCTURES} or a mapping term -> form; got {structure!r}")
        if structure == "intercepts":
            return {"annotator": "intercept", "document": "intercept"}
        if structure == "paper" and is_nested(judgements):
            return {"annotator": "slopes"}
        return {"annotator": "slopes", "document": "slopes"}
    forms = dict(structure)
    unknown = {k: v for k, v in forms.items() if k not in TERM_NAMES or v not in TERM_FORMS}
    if unknown or not forms:
        raise ConfigError(f"a structure mapping takes terms {list(TERM_NAMES)} with forms {list(TERM_FORMS)}; "
                          f"got {forms!r}")
    return {name: forms[name] for name in TERM_NAMES if name in forms}


def _structure_label(structure) -> str:
    if isinstance(structure, str):
        return structure
    return "+".join(f"{name}:{form}" for name, form in structure.items())


def _prepare(judgements: pd.DataFrame, structure, reference) -> _Problem:
    frame = _check_frame(judgements)
    forms = term_forms(frame, structure)
    with_slopes = "slopes" in forms.values()
    names = sorted(pd.unique(frame["system"]))
    if reference is None:
        reference = names[0]
    elif reference not in names:
        raise ConfigError(f"The reference system {reference!r} is not in the 'system' column "
                          f"(systems: {names})")
    systems = [reference] + [s for s in names if s != reference]
    system_code = pd.Categorical(frame["system"], categories=systems).codes.astype(np.int64)
    categories, category = np.unique(frame["score"].to_numpy(float), return_inverse=True)
    n = len(frame)
    n_systems = len(systems)
    if not with_slopes:
        z = np.ones((n, 1))
    else:
        z = np.zeros((n, n_systems))
        z[:, 0] = 1.0
        z[np.arange(n), system_code] = 1.0  # reference rows set column 0 twice: still the intercept only
    zz = np.einsum("ni,nj->nij", z, z).reshape(n, -1)
    n_thr = len(categories) - 1
    upper = category < n_thr
    lower = category > 0
    threshold_upper = sparse.csr_matrix((np.ones(upper.sum()), (category[upper], np.flatnonzero(upper))),
                                        shape=(n_thr, n))
    threshold_lower = sparse.csr_matrix((np.ones(lower.sum()), (category[lower] - 1, np.flatnonzero(lower))),
                                        shape=(n_thr, n))
    factors = []
    for name, form in forms.items():
        codes, levels = pd.factorize(frame[name], sort=True)
        factors.append(_Factor(name, codes.astype(np.int64), np.asarray(levels),
                               _indicator(codes, len(levels)), intercept_only=with_slopes and form == "intercept"))
    # Eliminate the factor with more levels block by block, so the dense Schur complement is the smaller one.
    by_size = sorted(factors, key=lambda f: f.n_levels, reverse=True)
    eliminated, kept = by_size[0], (by_size[1] if len(by_size) > 1 else None)
    problem = _Problem(systems=systems, categories=categories, category=category.astype(np.int64),
                       system_code=system_code, z=z, zz=zz,
                       system_indicator=_indicator(system_code, n_systems),
                       threshold_upper=threshold_upper, threshold_lower=threshold_lower,
                       factors=factors, eliminated=eliminated, kept=kept)
    if kept is not None:
        _prepare_pairs(problem)
    return problem


def _prepare_pairs(problem: _Problem) -> None:
    """Index the (kept, eliminated) level pairs that couple the two factors in the Hessian."""
    kept, elim = problem.kept, problem.eliminated
    pair_key = kept.codes * elim.n_levels + elim.codes
    unique_keys, pair_code = np.unique(pair_key, return_inverse=True)
    pair_kept, pair_elim = unique_keys // elim.n_levels, unique_keys % elim.n_levels
    # Couples: every ordered pair (p1, p2) of pairs that share an eliminated level, level by level.
    order = np.argsort(pair_elim, kind="stable")
    per_level = np.bincount(pair_elim, minlength=elim.n_levels)
    level_start = np.concatenate([[0], np.cumsum(per_level)[:-1]])
    repeats = per_level[pair_elim[order]]
    first = np.repeat(order, repeats)
    within = np.arange(len(first)) - np.repeat(np.cumsum(repeats) - repeats, repeats)
    second = order[np.repeat(level_start[pair_elim[order]], repeats) + within]
    problem.pair_code = pair_code
    problem.pair_kept, problem.pair_eliminated = pair_kept, pair_elim
    problem.pairs_by_kept = _indicator(pair_kept, kept.n_levels)
    problem.pairs_by_eliminated = _indicator(pair_elim, elim.n_levels)
    problem.couple_first, problem.couple_second = first, second
    problem.n_couples = len(first)


def _prepare_numpy_structures(problem: _Problem) -> None:
    """The sparse sums and component batches of the numpy code (the compiled kernels do without them)."""
    if problem.kept is None or problem.pair_indicator is not None:
        return
    n_pairs, elim = len(problem.pair_kept), problem.eliminated
    problem.pair_indicator = _indicator(problem.pair_code, n_pairs)
    problem.couple_by_first = _indicator(problem.couple_first, n_pairs)
    problem.couple_by_eliminated = _indicator(problem.pair_eliminated[problem.couple_first], elim.n_levels)
    problem.schur_groups = _component_groups(problem)


@dataclass
class _ComponentGroup:
    """Connected components of the kept factor with the same number of levels.

    Kept levels that never share an eliminated level (annotators of different
    blocks) do not interact in the Schur complement, so it is block diagonal
    by connected component; components of equal size are factorised together
    as one batch of small dense matrices (20 blocks of 15 x 15 for the
    paper's design instead of one 300 x 300 matrix).
    """

    levels: np.ndarray  # n_components x size: the kept levels of each component
    couples: np.ndarray  # indices of the couples inside these components
    diagonal_index: np.ndarray  # flat positions of the A blocks in the batch
    couple_index: np.ndarray  # flat positions of the coupling products in the batch
    first_local: np.ndarray  # (component, local block) of each couple's first and second kept level
    second_local: np.ndarray
    couple_component: np.ndarray

    @property
    def shape(self) -> tuple:
        return self.levels.shape


def _component_groups(problem: _Problem) -> list:
    kept, q = problem.kept, problem.q
    kept_by_elim = problem.pairs_by_kept @ problem.pairs_by_eliminated.T
    n_components, component = csgraph.connected_components(kept_by_elim @ kept_by_elim.T, directed=False)
    local = np.empty(kept.n_levels, np.int64)
    members = [np.flatnonzero(component == c) for c in range(n_components)]
    for levels in members:
        local[levels] = np.arange(len(levels))
    couple_component = component[problem.pair_kept[problem.couple_first]]
    groups = []
    rows, cols = np.arange(q)[:, None], np.arange(q)[None, :]
    for size in sorted({len(m) for m in members}):
        chosen = [c for c in range(n_components) if len(members[c]) == size]
        batch_of = np.full(n_components, -1)
        batch_of[chosen] = np.arange(len(chosen))
        levels = np.array([members[c] for c in chosen])
        width = size * q

        def positions(batch, local_row, local_col):
            return (batch[:, None, None] * width * width + (local_row[:, None, None] * q + rows) * width
                    + local_col[:, None, None] * q + cols)

        flat_levels = levels.ravel()
        diagonal_index = positions(batch_of[component[flat_levels]], local[flat_levels], local[flat_levels])
        couples = np.flatnonzero(batch_of[couple_component] >= 0)
        first = problem.pair_kept[problem.couple_first[couples]]
        second = problem.pair_kept[problem.couple_second[couples]]
        batch = batch_of[couple_component[couples]]
        groups.append(_ComponentGroup(levels=levels, couples=couples,
                                      diagonal_index=diagonal_index.ravel(),
                                      couple_index=positions(batch, local[first], local[second]).ravel(),
                                      first_local=local[first], second_local=local[second],
                                      couple_component=batch))
    return groups
