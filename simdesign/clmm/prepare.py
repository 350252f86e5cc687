"""Data preparation: the checked judgements table as index arrays, indicators and the structures of
the random-effects Hessian.

Part of :mod:`simdesign.clmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse import csgraph

from simdesign.core.errors import ConfigError
from simdesign.core.suggest import did_you_mean
from simdesign.core.judgements import Judgements


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
    n_levels: int
    # (1 | term) beside another term's slopes: its Cholesky factor is held at zero except L[0, 0], so
    # z_s . L u = L[0, 0] u_0 for every system (the shared z keeps the inner solver unchanged).
    intercept_only: bool = False

    @cached_property
    def indicator(self) -> sparse.csr_matrix:
        """n_levels x n_obs, sums observations by level (numpy code only: built on first use)."""
        return _indicator(self.codes, self.n_levels)


@dataclass
class _Problem:
    """Everything about the data that stays fixed during a fit."""

    systems: list
    categories: np.ndarray  # observed score values, sorted
    category: np.ndarray  # 0..K-1 per observation
    system_code: np.ndarray  # 0..S-1 per observation
    z: np.ndarray  # n x q random-effects design of each observation
    factors: list  # the _Factor terms in output order
    eliminated: _Factor  # the factor whose blocks are inverted one by one
    kept: _Factor | None  # the factor whose Schur complement is factorised densely (None: one term)
    pair_code: np.ndarray | None = None  # (kept, eliminated) pair of each observation
    pair_kept: np.ndarray | None = None
    pair_eliminated: np.ndarray | None = None
    couple_first: np.ndarray | None = None  # pairs p1, p2 that share an eliminated level
    couple_second: np.ndarray | None = None
    n_couples: int = 0
    compiled: object = None  # _CompiledArrays, built on first use by the compiled kernels
    design_key: tuple | None = None  # the design's index arrays, as the key of _DESIGN_CACHE
    n_levels: dict | None = None  # term name -> levels in the data, fitted or not (reported with the fit)

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

    # The sums below serve the numpy code (and the component search); a fit through the compiled kernels
    # never builds most of them, so they are made on first use rather than for every fit.

    @cached_property
    def zz(self) -> np.ndarray:
        """n x q*q outer products z z'."""
        return np.einsum("ni,nj->nij", self.z, self.z).reshape(self.n_obs, -1)

    @cached_property
    def system_indicator(self) -> sparse.csr_matrix:
        """S x n."""
        return _indicator(self.system_code, self.n_systems)

    @cached_property
    def threshold_upper(self) -> sparse.csr_matrix:
        """(K-1) x n: which threshold is each observation's upper one."""
        upper = self.category < self.n_thresholds
        return sparse.csr_matrix((np.ones(upper.sum()), (self.category[upper], np.flatnonzero(upper))),
                                 shape=(self.n_thresholds, self.n_obs))

    @cached_property
    def threshold_lower(self) -> sparse.csr_matrix:
        """(K-1) x n: which threshold is each observation's lower one."""
        lower = self.category > 0
        return sparse.csr_matrix((np.ones(lower.sum()), (self.category[lower] - 1, np.flatnonzero(lower))),
                                 shape=(self.n_thresholds, self.n_obs))

    @cached_property
    def pairs_by_kept(self) -> sparse.csr_matrix:
        """n_kept x P."""
        return _indicator(self.pair_kept, self.kept.n_levels)

    @cached_property
    def pairs_by_eliminated(self) -> sparse.csr_matrix:
        """n_eliminated x P."""
        return _indicator(self.pair_eliminated, self.eliminated.n_levels)

    @cached_property
    def pair_indicator(self) -> sparse.csr_matrix:
        """P x n."""
        return _indicator(self.pair_code, len(self.pair_kept))

    @cached_property
    def couple_by_first(self) -> sparse.csr_matrix:
        """P x n_couples."""
        return _indicator(self.couple_first, len(self.pair_kept))

    @cached_property
    def couple_by_eliminated(self) -> sparse.csr_matrix:
        """n_eliminated x n_couples."""
        return _indicator(self.pair_eliminated[self.couple_first], self.eliminated.n_levels)

    @cached_property
    def schur_groups(self) -> list:
        """_ComponentGroup: the Schur complement's diagonal blocks (empty with one term)."""
        return [] if self.kept is None else _component_groups(self)


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
        values = judgements[column]
        # numpy integer and boolean columns cannot hold a missing value: skip the (per-fit) scan
        if values.dtype.kind not in "iub" and values.isna().any():
            raise ConfigError(f"The '{column}' column has missing values")
    score = judgements["score"]
    if not pd.api.types.is_numeric_dtype(score):
        raise ConfigError(f"The 'score' column must be numeric (ordered score values); got dtype {score.dtype}")
    _check_scores(score.to_numpy(float))
    _check_system_count(judgements["system"].nunique())
    return judgements


def _check_scores(values: np.ndarray) -> None:
    if not np.all(np.isfinite(values)):
        raise ConfigError("The 'score' column has non-finite values")
    if not np.any(values != values[:1]):
        raise ConfigError("The 'score' column needs at least two distinct values to fit thresholds")


def _check_system_count(count: int) -> None:
    if count < 2:
        raise ConfigError("The 'system' column needs at least two systems to compare")


def is_nested(judgements: pd.DataFrame | Judgements) -> bool:
    """True when every document is judged by exactly one annotator.

    That is the design in which the paper (and ``structure='paper'``) drops the
    document term: document and annotator effects are then confounded. A table
    has no missing values (as :func:`simdesign.clmm.fit` requires); a
    :class:`~simdesign.core.judgements.Judgements` is read through its ids.
    """
    if isinstance(judgements, Judgements):
        return _nested_codes(judgements.document, judgements.annotator)
    return _nested_codes(pd.factorize(judgements["document"])[0], pd.factorize(judgements["annotator"])[0])


def _nested_codes(documents: np.ndarray, annotators: np.ndarray) -> bool:
    """:func:`is_nested` on 0-based codes of each row's document and annotator."""
    # each document's annotator as written last: every row agrees with it exactly when there is only one
    annotator_of = np.empty(documents.max(initial=-1) + 1, np.int64)
    annotator_of[documents] = annotators
    return bool(np.all(annotator_of[documents] == annotators))


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
    return _forms(structure, lambda: is_nested(judgements))


def _forms(structure, nested) -> dict:
    """:func:`term_forms`, with ``nested()`` telling whether the data are nested (asked only for 'paper')."""
    if isinstance(structure, str):
        if structure not in STRUCTURES:
            raise ConfigError(f"structure must be one of {STRUCTURES} or a mapping term -> form; got {structure!r}")
        if structure == "intercepts":
            return {"annotator": "intercept", "document": "intercept"}
        if structure == "paper" and nested():
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


@dataclass
class _Columns:
    """The judgements as index arrays, one entry per observation (judgement).

    Both inputs of :func:`simdesign.clmm.fit` become these, so that a table and the
    :class:`~simdesign.core.judgements.Judgements` it was made from give the same problem.
    """

    codes: dict  # term name -> level of each observation, 0-based in the levels' sorted order
    n_levels: dict  # term name -> number of levels
    system_label: np.ndarray  # each observation's system, as a code into ``appearing``
    appearing: list  # the system names
    score: np.ndarray  # float


def _frame_columns(frame: pd.DataFrame) -> _Columns:
    codes, n_levels = {}, {}
    for name in TERM_NAMES:
        codes[name], levels = pd.factorize(frame[name], sort=True)
        n_levels[name] = len(levels)
    system_label, appearing = pd.factorize(frame["system"])
    return _Columns(codes, n_levels, system_label, list(appearing), frame["score"].to_numpy(float))


def _judgements_columns(judgements: Judgements) -> _Columns:
    """The columns of ``judgements.to_frame()`` (a row per pair and system, systems in order), without pandas."""
    n_pairs, n_systems = judgements.scores.shape
    # under partial coverage a missing output has no judgement: only the existing ones are observations
    kept = slice(None) if judgements.complete else judgements.observed.ravel()
    codes, n_levels = {}, {}
    for name in TERM_NAMES:
        if judgements.complete:
            levels, level_codes = np.unique(getattr(judgements, name), return_inverse=True)
            codes[name], n_levels[name] = np.repeat(level_codes, n_systems), len(levels)
        else:  # levels with no judgement left (a document no system covers) are not levels of the fit
            levels, codes[name] = np.unique(np.repeat(getattr(judgements, name), n_systems)[kept], return_inverse=True)
            n_levels[name] = len(levels)
    appearing = list(dict.fromkeys(judgements.systems))  # in order of appearance, as pandas.factorize
    system_label = np.tile([appearing.index(name) for name in judgements.systems], n_pairs)[kept]
    score = judgements.scores.ravel().astype(float)[kept]
    _check_scores(score)
    _check_system_count(len(appearing))
    return _Columns(codes, n_levels, system_label, appearing, score)


def _columns(judgements) -> _Columns:
    """The index arrays of a judgements table (checked) or of a Judgements object."""
    if isinstance(judgements, Judgements):
        return _judgements_columns(judgements)
    return _frame_columns(_check_frame(judgements))


def _prepare(judgements, structure, reference) -> _Problem:
    """The fit's problem from a judgements table or a :class:`~simdesign.core.judgements.Judgements`."""
    columns = _columns(judgements)
    forms = _forms(structure, lambda: _nested_codes(columns.codes["document"], columns.codes["annotator"]))
    with_slopes = "slopes" in forms.values()
    names = sorted(columns.appearing)
    if reference is None:
        reference = names[0]
    elif reference not in names:
        raise ConfigError(f"The reference system {reference!r} is not in the 'system' column "
                          f"(systems: {names}){did_you_mean(reference, names)}")
    systems = [reference] + [s for s in names if s != reference]
    position = {name: k for k, name in enumerate(systems)}
    system_code = np.array([position[name] for name in columns.appearing], np.int64)[columns.system_label]
    categories, category = np.unique(columns.score, return_inverse=True)
    n = len(columns.score)
    n_systems = len(systems)
    if not with_slopes:
        z = np.ones((n, 1))
    else:
        z = np.zeros((n, n_systems))
        z[:, 0] = 1.0
        z[np.arange(n), system_code] = 1.0  # reference rows set column 0 twice: still the intercept only
    factors = [_Factor(name, columns.codes[name].astype(np.int64), columns.n_levels[name],
                       intercept_only=with_slopes and form == "intercept")
               for name, form in forms.items()]
    # Eliminate the factor with more levels block by block, so the dense Schur complement is the smaller one.
    by_size = sorted(factors, key=lambda f: f.n_levels, reverse=True)
    eliminated, kept = by_size[0], (by_size[1] if len(by_size) > 1 else None)
    problem = _Problem(systems=systems, categories=categories, category=category.astype(np.int64),
                       system_code=system_code, z=z, factors=factors, eliminated=eliminated, kept=kept,
                       n_levels=dict(columns.n_levels))
    if kept is not None:
        _prepare_pairs(problem)
    return problem


# The structures found from a design's index arrays alone (its level pairs and couples; the compiled kernels'
# arrays, simdesign.clmm.compiled), by those arrays: the trials of a simulated design share them, so each is found
# once (issue 41). The last few designs are kept.
_DESIGN_CACHE: dict = {}
_DESIGN_CACHE_SIZE = 8


def _design_structure(problem: _Problem) -> dict:
    """The cache entry of the problem's design: its random-effects dimension and index arrays (not the scores)."""
    if problem.design_key is None:
        codes = tuple(f.codes.tobytes() for f in (problem.eliminated, problem.kept) if f is not None)
        problem.design_key = (problem.q, problem.z.shape, problem.system_code.tobytes(),
                              tuple(f.n_levels for f in (problem.eliminated, problem.kept) if f is not None), codes)
    entry = _DESIGN_CACHE.get(problem.design_key)
    if entry is None:
        if len(_DESIGN_CACHE) >= _DESIGN_CACHE_SIZE:
            _DESIGN_CACHE.pop(next(iter(_DESIGN_CACHE)))
        entry = _DESIGN_CACHE[problem.design_key] = {}
    return entry


def _prepare_pairs(problem: _Problem) -> None:
    """Index the (kept, eliminated) level pairs that couple the two factors in the Hessian."""
    entry = _design_structure(problem)
    if "pairs" not in entry:
        entry["pairs"] = _find_pairs(problem)
    (problem.pair_code, problem.pair_kept, problem.pair_eliminated, problem.couple_first,
     problem.couple_second) = entry["pairs"]
    problem.n_couples = len(problem.couple_first)


def _find_pairs(problem: _Problem) -> tuple:
    """(pair of each observation, kept and eliminated level of each pair, couples' first and second pair)."""
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
    return pair_code, pair_kept, pair_elim, first, second


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
