"""A native cumulative link mixed model (``clmm_native``), fitted like ``ordinal::clmm``.

The model (docs/model.md) for judgement i of system s by annotator a
on document d, on a K-point scale::

    P(Y_i <= c) = logistic(theta_c - eta_i),   c = 1..K-1
    eta_i = beta_s + z_s . u_a + z_s . v_d,     z_s = (1, e_s)  (treatment coding)
    u_a ~ N(0, Sigma_annotator),  v_d ~ N(0, Sigma_document)

is fitted by maximum likelihood with the Laplace approximation, with the
same parameterisation as ``ordinal::clmm``: thresholds and fixed effects as
they are, each random-effects covariance as ``Sigma = L L'`` with ``L``
lower triangular, its diagonal bounded below at zero (so singular fits land
on the boundary, as R's do), and spherical random effects ``b = L u``,
``u ~ N(0, I)``. The Laplace log-likelihood is the same quantity ordinal
computes, so log-likelihoods can be compared directly.

Why it is fast (docs/performance.md has the measured times; ``ordinal::clmm``
takes minutes for the maximal model on the paper's 1500 judgements):

- The inner mode search (Newton steps in the random effects) uses the
  model's structure: the random-effects Hessian ``H`` is block diagonal within
  each grouping factor, so the factor with more levels is eliminated block by
  block (small q x q inverses) and only the Schur complement of the other
  factor is factorised, itself block diagonal by connected component (the
  annotators of one block of a block design).
- Each mode search starts from the last mode and takes chord steps with the
  last factorisation before any new one.
- The outer gradient is analytic (implicit-function theorem through the
  mode, below) and reuses the factorisation at the mode.
- L-BFGS-B with a long history (``maxcor=50``) handles the bounds on the
  Cholesky diagonals.
- With numba installed (the ``fast`` extra), the mode search, factorisation
  and gradient run as compiled loops (``simdesign/_clmm_numba.py``): the same
  algorithm and results (to rounding), about four to five times faster per
  fit, because numpy's per-call overhead on thousands of tiny blocks is gone.
  The random-effects design row depends on the system only, so the kernels
  use per-system loadings ``Z_s L`` and sum weights by (level, system) before
  forming the q x q blocks; per observation they form scalars only (the
  q-vectors of the gradient are formed per (level, system) and (pair, system)
  cell). One evaluation of the objective (the parameter vector's unpacking,
  the mode search, the gradient) is one kernel call, whose passes over the
  observations vectorise (branch-free, with exp and log written out), and the
  optimiser is scipy's L-BFGS-B driven directly (``lbfgsb``: the same
  iterates as ``scipy.optimize.minimize``, without its wrappers); the pairs,
  couples and components of a design are found once for all its trials
  (issue 41). ``SIMDESIGN_CLMM_NUMBA=0`` (or
  :func:`set_accelerator`) switches back to the numpy code. The kernels are
  compiled for each random-effects dimension q (loops of known length): the
  first fit with a new q compiles them (a minute, once, with a one-line note;
  cached on disk; :func:`warm_up` does it ahead for q = 1 and 5).

With several boundary optima (a maximal model and few annotators), the one
reached from ordinal's start depends on the reference system. The refit rule
``starts='codings'`` (the default of :func:`fit`) refits a singular or
unconverged fit from the other reference codings' optima, mapped exactly into
its coding (``codings``), and keeps the highest log-likelihood (docs/model.md,
"Starts").

The fixed-effect covariance comes from the inverse Hessian of the Laplace
negative log-likelihood in (thresholds, fixed effects, Cholesky elements),
as ``ordinal::clmm`` computes it (there by finite differences of the
function, here by forward differences of the analytic gradient), leaving out
Cholesky diagonals below 1e-3 as ordinal does.

The package has one module per concern, each importing only the ones listed
before it: ``prepare`` (the judgements as index arrays, the structure of the
random-effects Hessian), ``terms`` (per-observation likelihood pieces),
``factorise`` (the structured factorisation), ``compiled`` (glue to the numba
kernels), ``laplace`` (mode search, Laplace value and analytic gradient),
``layout`` (parameter packing and the objective), ``codings`` (moving a
parameter vector to another reference system, exactly), ``results``
(:class:`ClmmResult` and its :meth:`~ClmmResult.summary`), ``lbfgsb`` (scipy's
L-BFGS-B without ``minimize``'s wrappers) and ``optimise``
(:func:`fit`: restarts, boundary escapes, the refit rule, Hessian). Import from
``simdesign.clmm``: it re-exports the public names (and, for tests and
scripts, the private ones).

Notes
-----
With ``l_i = -log P(y_i | eta_i)``, ``g_i, w_i, w'_i`` its first three
derivatives in ``eta_i``, ``m_i = d eta_i / du`` and ``H = I + M' W M``, the
Laplace objective is ``f(u*) + 0.5 log det H(u*)`` with
``f(u) = sum_i l_i + 0.5 |u|^2`` and ``u*`` the mode. Its total derivative in
a parameter ``phi`` is, with ``h_i = m_i' H^-1 m_i`` (only the blocks of
``H^-1`` at observed (annotator, document) pairs are needed),
``r = H^-1 M' (0.5 w' h)`` and ``rho = M r``::

    sum_i [dl_i/dphi + 0.5 h_i dw_i/dphi - rho_i dg_i/dphi]
      + sum_i w_i (dm_i/dphi)' H^-1 m_i - sum_i g_i (dm_i/dphi)' r

where the partial derivatives hold ``u`` fixed; the ``rho`` terms carry the
movement of the mode (``du*/dphi = -H^-1 d2f/du dphi``).

Examples
--------
>>> import numpy as np
>>> from simdesign import BlockDesign, load_model
>>> from simdesign import clmm
>>> frame = load_model("coherence").sample(
...     BlockDesign(blocks=4, docs_per_block=5, annotators_per_block=3),
...     np.random.default_rng(1)).to_frame()
>>> fit = clmm.fit(frame, structure="intercepts", reference="__REFERENCE__")
>>> fit.status in ("ok", "singular")
True
>>> list(fit.contrasts().columns)
['system_a', 'system_b', 'estimate', 'se', 'z', 'p']
"""
from __future__ import annotations

from simdesign.clmm.prepare import (  # noqa: F401 - re-exported
    STRUCTURES,
    TERM_FORMS,
    TERM_NAMES,
    _ComponentGroup,
    _Factor,
    _Problem,
    _check_frame,
    _component_groups,
    _indicator,
    _prepare,
    _prepare_pairs,
    _structure_label,
    is_nested,
    term_forms,
)
from simdesign.clmm.terms import (  # noqa: F401 - re-exported
    CHORD_MIN_REDUCTION,
    CHORD_STEPS,
    INNER_GRADIENT_TOLERANCE,
    INNER_MAX_ITERATIONS,
    ModeSearchError,
    _ObservationTerms,
    _observation_terms,
)
from simdesign.clmm.factorise import (  # noqa: F401 - re-exported
    _Factorisation,
    _factorise,
    _group_blocks,
    _inverse_times_loadings,
    _schur_solve,
    _solve,
)
from simdesign.clmm.compiled import (  # noqa: F401 - re-exported
    _CompiledArrays,
    _CompiledFactorisation,
    _accelerator,
    _compiled_arrays,
    _compiled_loadings,
    _gradient_compiled,
    _mode_compiled,
)
from simdesign.clmm.laplace import (  # noqa: F401 - re-exported
    _Laplace,
    _fixed_part,
    _laplace,
    _mode,
)
from simdesign.clmm.layout import (  # noqa: F401 - re-exported
    _Layout,
    _Objective,
)
from simdesign.clmm.codings import (  # noqa: F401 - re-exported
    map_coding,
)
from simdesign.clmm.results import (  # noqa: F401 - re-exported
    ClmmResult,
    ClmmSummary,
    _summary,
    _term_formula,
)
from simdesign.clmm.optimise import (  # noqa: F401 - re-exported
    CONVERGENCE_GRADIENT_TOLERANCE,
    ESCAPE_MIN_GAIN,
    ESCAPE_PROBE,
    HESSIAN_BOUNDARY,
    NULL_EIGENVALUE_TOLERANCE,
    NULL_FIXED_LOADING,
    REFIT_STATUSES,
    RESTARTS,
    RESTART_GRADIENT,
    SINGULAR_TOLERANCE,
    START_RULES,
    STARTS_MIN_GAIN,
    _boundary_escape,
    _check_kernels,
    _error_result,
    _fit_problem,
    _invert_hessian,
    _numerical_hessian,
    _projected_gradient,
    _relative_cholesky_singular,
    _starting_values,
    fit,
    set_accelerator,
    warm_up,
)

__all__ = [
    "CHORD_MIN_REDUCTION", "CHORD_STEPS", "CONVERGENCE_GRADIENT_TOLERANCE", "ClmmResult", "ClmmSummary",
    "ESCAPE_MIN_GAIN", "ESCAPE_PROBE", "HESSIAN_BOUNDARY", "INNER_GRADIENT_TOLERANCE",
    "INNER_MAX_ITERATIONS", "ModeSearchError", "NULL_EIGENVALUE_TOLERANCE", "NULL_FIXED_LOADING",
    "REFIT_STATUSES", "RESTARTS", "RESTART_GRADIENT", "SINGULAR_TOLERANCE", "STARTS_MIN_GAIN", "START_RULES",
    "STRUCTURES", "TERM_FORMS", "TERM_NAMES",
    "fit", "is_nested", "set_accelerator", "term_forms", "warm_up",
]
