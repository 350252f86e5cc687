"""The judgements as the linear mixed model's arrays and the cross-products every deviance evaluation reuses.

Part of :mod:`simdesign.lmm`; the model and the algorithm are described in that package's docstring.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from simdesign.clmm.prepare import _columns, _forms, _nested_codes


@dataclass
class Term:
    """One random-effects term ``(z | factor)``: its levels and its columns of the random-effects design.

    ``z`` holds the term's design row of every observation (n x q): the intercept alone (q = 1), or the
    intercept and the system dummies of treatment coding (q = S), as lme4 builds ``(1 + system | factor)``.
    """

    name: str
    form: str  # 'intercept' or 'slopes'
    codes: np.ndarray  # level of every observation, 0..n_levels-1
    n_levels: int
    z: np.ndarray

    @property
    def q(self) -> int:
        return self.z.shape[1]

    @property
    def n_theta(self) -> int:
        """Elements of the lower-triangular relative covariance factor (lme4's theta of this term)."""
        return self.q * (self.q + 1) // 2

    @property
    def lower_bounds(self) -> np.ndarray:
        """lme4's bounds: 0 on a diagonal element of the factor, none below it (column-major lower triangle)."""
        rows, cols = lower_triangle(self.q)
        return np.where(rows == cols, 0.0, -np.inf)


def lower_triangle(q: int) -> tuple:
    """Row and column of every lower-triangle element in column-major order (lme4's order of theta)."""
    cols, rows = np.triu_indices(q)  # row-major upper triangle read transposed: column-major lower triangle
    return rows, cols


@dataclass
class Problem:
    """Everything about the data that stays fixed while theta changes.

    With two terms the one with more levels is ``eliminated`` (its q x q diagonal blocks of
    ``Lambda' Z' Z Lambda + I`` are factorised one by one) and the other is ``kept`` (its Schur complement
    is factorised densely). The sums are over the judgements of each (kept level, eliminated level) pair.
    """

    systems: tuple
    y: np.ndarray
    x: np.ndarray  # n x p fixed-effects design: intercept, then a dummy per non-reference system
    terms: list  # Term, in the order the structure names them (annotator, document)
    eliminated: Term
    kept: Term | None
    xy_cross: np.ndarray  # [X y]'[X y]
    e_gram: np.ndarray  # per eliminated level: sum z_E z_E'
    e_rhs: np.ndarray  # per eliminated level: sum z_E [x y]'
    k_gram: np.ndarray | None = None  # per kept level: sum z_K z_K'
    k_rhs: np.ndarray | None = None
    pair_cross: np.ndarray | None = None  # per pair: sum z_K z_E'
    pair_kept: np.ndarray | None = None
    pair_eliminated: np.ndarray | None = None
    couple_first: np.ndarray | None = None  # ordered pairs of pairs that share an eliminated level
    couple_second: np.ndarray | None = None
    couple_sum: sparse.csr_matrix | None = None  # n_K^2 x couples: adds each couple into its Schur block
    pair_sum: sparse.csr_matrix | None = None  # n_K x pairs
    pair_by_eliminated: sparse.csr_matrix | None = None  # n_E x pairs
    couple_by_first: sparse.csr_matrix | None = None  # pairs x couples
    # The Schur complement is block diagonal by connected component of the kept levels (those linked
    # through a shared eliminated level: the annotators of one block of a block design): each entry holds
    # the kept levels of components of one size, (components, size), factorised as one batch.
    components: list = field(default_factory=list)
    n_levels: dict = field(default_factory=dict)

    @property
    def n_obs(self) -> int:
        return len(self.y)

    @property
    def n_fixed(self) -> int:
        return self.x.shape[1]

    @property
    def n_theta(self) -> int:
        return sum(term.n_theta for term in self.terms)

    def z_matrix(self) -> sparse.csr_matrix:
        """The full random-effects design Z (n x sum of levels * q), terms in order, levels then components."""
        blocks = []
        rows = np.arange(self.n_obs)
        for term in self.terms:
            columns = term.codes[:, None] * term.q + np.arange(term.q)[None, :]
            blocks.append(sparse.csr_matrix((term.z.ravel(), (np.repeat(rows, term.q), columns.ravel())),
                                            shape=(self.n_obs, term.n_levels * term.q)))
        return sparse.hstack(blocks, format="csr")


def _level_sums(codes: np.ndarray, n_levels: int, values: np.ndarray) -> np.ndarray:
    """Sum of ``values`` (n x ...) over the observations of each level."""
    flat = values.reshape(len(codes), -1)
    out = np.zeros((n_levels, flat.shape[1]))
    np.add.at(out, codes, flat)
    return out.reshape((n_levels,) + values.shape[1:])


def _term(name: str, form: str, codes: np.ndarray, n_levels: int, dummies: np.ndarray) -> Term:
    n = len(codes)
    z = np.ones((n, 1)) if form == "intercept" else np.column_stack([np.ones(n), dummies])
    return Term(name, form, codes.astype(np.int64), int(n_levels), z)


def prepare(judgements, structure) -> Problem:
    """The problem of ``judgements`` (a Judgements or a long table) under ``structure``.

    ``structure`` is one of 'maximal', 'intercepts', 'paper' or a mapping term -> form, as for
    :func:`simdesign.clmm.fit` (:func:`simdesign.clmm.term_forms`). The systems keep the judgements' order
    (a table: order of appearance), the first being the reference, as ``lmer`` in
    :mod:`simdesign.significance.mixed_r` codes them.
    """
    columns = _columns(judgements)
    forms = _forms(structure, lambda: _nested_codes(columns.codes["document"], columns.codes["annotator"]))
    systems = tuple(columns.appearing)
    system = columns.system_label.astype(np.int64)
    n = len(columns.score)
    dummies = (system[:, None] == np.arange(1, len(systems))[None, :]).astype(float)
    x = np.column_stack([np.ones(n), dummies])
    terms = [_term(name, form, columns.codes[name], columns.n_levels[name], dummies) for name, form in forms.items()]
    y = columns.score
    xy = np.column_stack([x, y])
    by_size = sorted(terms, key=lambda term: term.n_levels, reverse=True)
    eliminated, kept = by_size[0], (by_size[1] if len(by_size) > 1 else None)
    problem = Problem(systems=systems, y=y, x=x, terms=terms, eliminated=eliminated, kept=kept,
                      xy_cross=xy.T @ xy,
                      e_gram=_level_sums(eliminated.codes, eliminated.n_levels,
                                         eliminated.z[:, :, None] * eliminated.z[:, None, :]),
                      e_rhs=_level_sums(eliminated.codes, eliminated.n_levels, eliminated.z[:, :, None] * xy[:, None, :]),
                      n_levels=dict(columns.n_levels))
    if kept is not None:
        _prepare_pairs(problem, xy)
    return problem


def _prepare_pairs(problem: Problem, xy: np.ndarray) -> None:
    """The (kept level, eliminated level) pairs, their cross-products and the couples of the Schur complement."""
    kept, eliminated = problem.kept, problem.eliminated
    problem.k_gram = _level_sums(kept.codes, kept.n_levels, kept.z[:, :, None] * kept.z[:, None, :])
    problem.k_rhs = _level_sums(kept.codes, kept.n_levels, kept.z[:, :, None] * xy[:, None, :])
    pair_key, pair_code = np.unique(kept.codes * eliminated.n_levels + eliminated.codes, return_inverse=True)
    problem.pair_kept, problem.pair_eliminated = pair_key // eliminated.n_levels, pair_key % eliminated.n_levels
    problem.pair_cross = _level_sums(pair_code, len(pair_key), kept.z[:, :, None] * eliminated.z[:, None, :])
    # every ordered couple of pairs within one eliminated level adds B_p1 D^-1 B_p2' to the Schur complement
    order = np.argsort(problem.pair_eliminated, kind="stable")
    starts = np.searchsorted(problem.pair_eliminated[order], np.arange(eliminated.n_levels + 1))
    first, second = [], []
    for level in range(eliminated.n_levels):
        members = order[starts[level]:starts[level + 1]]
        first.append(np.repeat(members, len(members)))
        second.append(np.tile(members, len(members)))
    problem.couple_first, problem.couple_second = np.concatenate(first), np.concatenate(second)
    n_kept = kept.n_levels
    target = problem.pair_kept[problem.couple_first] * n_kept + problem.pair_kept[problem.couple_second]
    n_couples = len(target)
    problem.couple_sum = sparse.csr_matrix((np.ones(n_couples), (target, np.arange(n_couples))),
                                           shape=(n_kept * n_kept, n_couples))
    n_pairs = len(pair_key)
    problem.components = _components(problem.pair_kept, problem.pair_eliminated, n_kept, eliminated.n_levels)
    problem.pair_sum = sparse.csr_matrix((np.ones(n_pairs), (problem.pair_kept, np.arange(n_pairs))),
                                         shape=(n_kept, n_pairs))
    problem.pair_by_eliminated = sparse.csr_matrix(
        (np.ones(n_pairs), (problem.pair_eliminated, np.arange(n_pairs))), shape=(eliminated.n_levels, n_pairs))
    problem.couple_by_first = sparse.csr_matrix((np.ones(n_couples), (problem.couple_first, np.arange(n_couples))),
                                                shape=(n_pairs, n_couples))


def _components(pair_kept: np.ndarray, pair_eliminated: np.ndarray, n_kept: int, n_eliminated: int) -> list:
    """The kept levels grouped by connected component, components of equal size batched together."""
    incidence = sparse.csr_matrix((np.ones(len(pair_kept)), (pair_kept, pair_eliminated)),
                                  shape=(n_kept, n_eliminated))
    _, label = csgraph.connected_components(incidence @ incidence.T, directed=False)
    order = np.argsort(label, kind="stable")
    sizes = np.bincount(label)
    groups = {}
    for component, members in zip(range(len(sizes)), np.split(order, np.cumsum(sizes)[:-1])):
        groups.setdefault(len(members), []).append(members)
    return [np.array(members) for _, members in sorted(groups.items())]
