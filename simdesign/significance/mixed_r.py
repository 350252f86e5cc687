"""Model-based analyses: R's clmm and lmer (through rpy2), and a plain clm.

Three registry entries (structures: docs/model.md; statuses: docs/estimands.md):

``clmm``
    R ``ordinal::clmm``, logit link, Laplace approximation, the score an
    ordered factor: the model the paper fitted and the simulator samples from.
``lmer``
    R ``lme4::lmer`` (REML) on the raw scores, with Satterthwaite degrees of
    freedom from lmerTest for every pairwise contrast. pymer4 is the usual
    Python face of this model, but its wrapper costs more than the fit
    (0.6 s against 0.03 s for a random-intercepts fit of the paper's design),
    so the trial loop calls lme4 and lmerTest directly; ``tests/test_mixed_r.py``
    checks that pymer4 gives the same estimates.
``clm``
    statsmodels' ``OrderedModel`` (cumulative logit) on system dummies alone,
    ignoring annotators and documents: the ordinal twin of the naive t-test.
    Needs no R.

Random-effects structures (option ``structure``):

``maximal``
    ``score ~ system + (1 + system | annotator) + (1 + system | document)``
``intercepts``
    ``score ~ system + (1 | annotator) + (1 | document)``
``paper``
    ``maximal``, except that the document term is dropped when every
    document is judged by exactly one annotator (a nested design), as the
    paper did.

Every analysis reports pairwise Wald contrasts beta_i - beta_j from the fixed
effects and their covariance (z tests for clmm and clm, t tests with
per-contrast Satterthwaite df for lmer), optionally Holm- or
Tukey-adjusted. A fit's status is shared by all its pairs: ``ok``,
``singular`` (a boundary fit without any convergence warning; p-values
kept), ``not_converged`` (any convergence warning, at a boundary fit too) or
``error`` (failures, no p-values). A pair without a positive finite standard
error gets status ``error`` on its own (:func:`simdesign.significance.base.pairwise_from_fit`).

The R session is started once per process on first use
(:mod:`simdesign.significance.rsession`); importing this module needs neither R nor rpy2.

Reproducibility: clmm fits are deterministic. lme4's are not bit-for-bit
reproducible across processes: the same data give results that depend on the
process's earlier allocations (p-values of random-intercept fits differ
around the tenth digit). Its maximal fits, which are nearly always singular,
differ more: variance parameters around the fifth digit (measured: 758 or
828 optimiser evaluations for one data set, deviances equal to 1e-8). Fixed
effects agree; standard errors and
Satterthwaite df differ in the third to fifth digit, and a fit whose
max|grad| lies near lme4's 0.002 tolerance can change status between
'singular' and 'not_converged'. A replay of such a trial in a fresh process
can therefore differ slightly from the original run.

Examples
--------
>>> import numpy as np
>>> from simdesign import BlockDesign, load_model
>>> from simdesign.significance.mixed_r import clm_analysis
>>> judgements = load_model("coherence").sample(BlockDesign(4, 5, 3), np.random.default_rng(1))
>>> result = clm_analysis(judgements, rng=None)
>>> result.fit_status, result.p_value.shape
('ok', (10,))
"""
from __future__ import annotations

import warnings

import numpy as np

from simdesign.significance.base import (ADJUSTMENTS, BACKEND_CHECKS, ERROR, NOT_CONVERGED, OK, SINGULAR,
                                         AnalysisInfo, PairwiseResult, pairwise_from_fit, register,
                                         relative_cholesky_is_singular, system_pairs)
from simdesign.core.judgements import Judgements
from simdesign.significance.rsession import r_available

STRUCTURES = ("maximal", "intercepts", "paper")

# lme4 reports a boundary fit among its convergence messages; it is a
# singular fit, not a convergence failure.
_LME4_BOUNDARY_MESSAGE = "boundary (singular) fit"

__all__ = ["STRUCTURES", "clmm_analysis", "lmer_analysis", "clm_analysis", "fit_verbose", "formula_for",
           "is_nested", "lmer_fit_status", "r_available"]


def is_nested(judgements: Judgements) -> bool:
    """Whether every document is judged by exactly one annotator: the native fit's rule, so that the R
    backends and ``clmm_native`` drop the document term of ``structure='paper'`` on the same data."""
    from simdesign import clmm  # imported on use, as by clmm_native: workers that never fit a mixed model skip it

    return clmm.is_nested(judgements)


def formula_for(judgements: Judgements, structure: str) -> str:
    """The R model formula for a random-effects structure on these data.

    Parameters
    ----------
    judgements : Judgements
    structure : {'maximal', 'intercepts', 'paper'}

    Returns
    -------
    str

    Examples
    --------
    >>> import numpy as np
    >>> from simdesign import BlockDesign, load_model
    >>> nested = load_model("coherence").sample(BlockDesign(6, 2, 1), np.random.default_rng(0))
    >>> formula_for(nested, "paper")
    'score ~ system + (1 + system | annotator)'
    """
    if structure not in STRUCTURES:
        raise ValueError(f"structure must be one of {STRUCTURES}; got {structure!r}")
    if structure == "intercepts":
        terms = ["(1 | annotator)", "(1 | document)"]
    else:
        terms = ["(1 + system | annotator)", "(1 + system | document)"]
        if structure == "paper" and is_nested(judgements):
            # As in the paper: with one annotator per document, each document's
            # five effects rest on one person's five judgements, too little to
            # tell them from that person's reading of that document.
            terms = terms[:1]
    return "score ~ system + " + " + ".join(terms)


def _n_pairs(judgements: Judgements) -> int:
    return judgements.n_systems * (judgements.n_systems - 1) // 2


def _check_options(structure: str | None, adjust: str) -> None:
    if structure is not None and structure not in STRUCTURES:
        raise ValueError(f"structure must be one of {STRUCTURES}; got {structure!r}")
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {ADJUSTMENTS}; got {adjust!r}")


def _join(*parts) -> str:
    """Non-empty parts, each once (R often repeats a warning as a message)."""
    return "; ".join(dict.fromkeys(str(p) for p in parts if p))


def _mentions_convergence(text: str) -> bool:
    return "converg" in text.lower()


def lmer_fit_status(singular: bool, optimizer_code: int, lme4_messages=(), optimizer_warnings=(),
                    warnings=()) -> tuple[str, list[str]]:
    """Status of an lme4 fit from its diagnostics (docs/estimands.md: a convergence failure is a failure).

    The fit is 'not_converged' when the optimiser returned a non-zero code,
    when lme4's convergence check left any message other than its boundary
    note (``boundary (singular) fit: see help('isSingular')``), or when an
    optimiser or R warning mentions convergence, e.g. lme4's "Model failed to
    converge with max|grad| = ..." or lmerTest's "Model failed to converge
    with 1 negative eigenvalue" (its Hessian check of the variance
    parameters). This holds at a boundary fit too: being singular never
    excuses a failed convergence check. Otherwise the fit is 'singular' when
    lme4's ``isSingular`` says so, else 'ok'.

    Parameters
    ----------
    singular : bool
        ``lme4::isSingular(fit, tol = 1e-4)``.
    optimizer_code : int
        ``fit@optinfo$conv$opt`` (0 when the optimiser reported success).
    lme4_messages : sequence of str
        ``fit@optinfo$conv$lme4$messages``.
    optimizer_warnings : sequence of str
        ``fit@optinfo$warnings``.
    warnings : sequence of str
        R warnings raised while fitting and testing.

    Returns
    -------
    status : {'ok', 'singular', 'not_converged'}
    problems : list of str
        The texts that made the fit 'not_converged' (empty otherwise).

    Examples
    --------
    >>> lmer_fit_status(True, 0, ["boundary (singular) fit: see help('isSingular')"])
    ('singular', [])
    >>> lmer_fit_status(True, 0, [], [], ["Model failed to converge with 1 negative eigenvalue: -1.8e+00"])
    ('not_converged', ['Model failed to converge with 1 negative eigenvalue: -1.8e+00'])
    """
    problems = [m for m in lme4_messages if _LME4_BOUNDARY_MESSAGE not in m]
    problems += [m for m in (*optimizer_warnings, *warnings) if _mentions_convergence(m)]
    if optimizer_code != 0:
        problems.append(f"optimizer code {optimizer_code}")
    if problems:
        return NOT_CONVERGED, list(dict.fromkeys(problems))
    return (SINGULAR if singular else OK), []


# --------------------------------------------------------------------- clmm
def _fit_clmm(judgements: Judgements, structure: str, verbose: bool = False) -> dict:
    from simdesign.significance.rsession import as_dict, session

    r = session()
    formula = formula_for(judgements, structure)
    with r.lock:
        data = r.data_frame(judgements, ordinal=True)
        fit = as_dict(r.fit_clmm(data, formula, verbose))
    fit["formula"] = formula
    return fit


def _clmm_result(fit: dict, n_systems: int, adjust: str) -> PairwiseResult:
    n_pairs = n_systems * (n_systems - 1) // 2
    warnings_text = _join(*fit.get("warnings") or [])
    if fit.get("error") is not None:
        return PairwiseResult.failed(n_pairs, ERROR, _join(fit["error"][0], warnings_text))
    beta, covariance = fit["beta"], fit["vcov"]
    if len(beta) != n_systems - 1:
        return PairwiseResult.failed(n_pairs, ERROR, _join(
            f"clmm estimated {len(beta)} of {n_systems - 1} system effects (rank-deficient design)", warnings_text))
    if not np.all(np.isfinite(covariance)):
        return PairwiseResult.failed(n_pairs, ERROR, _join("clmm's covariance matrix is not finite", warnings_text))
    if int(fit["convergence"][0]) != 0:
        return PairwiseResult.failed(n_pairs, NOT_CONVERGED, _join(
            f"nlminb did not converge: {fit['optimizer_message'][0]}", warnings_text))
    convergence_warnings = [w for w in fit.get("warnings") or [] if _mentions_convergence(w)]
    if convergence_warnings:
        return PairwiseResult.failed(n_pairs, NOT_CONVERGED, warnings_text)
    singular_terms = [term for term, cov in zip(fit["random_terms"], fit["random_covariances"])
                      if relative_cholesky_is_singular(cov)]
    status = SINGULAR if singular_terms else OK
    message = _join(f"boundary (singular) fit: {', '.join(singular_terms)}" if singular_terms else "", warnings_text)
    effects = np.concatenate([[0.0], beta])
    return pairwise_from_fit(effects, covariance, None, adjust, status, message)


def clmm_analysis(judgements: Judgements, rng=None, structure: str = "paper", adjust: str = "none") -> PairwiseResult:
    """Pairwise Wald z tests from R's ``ordinal::clmm`` (logit link, Laplace).

    Parameters
    ----------
    judgements : Judgements
    rng : numpy.random.Generator
        Unused (the fit is deterministic); part of the analysis contract.
    structure : {'paper', 'maximal', 'intercepts'}
        Random-effects structure (module docstring).
    adjust : {'none', 'holm', 'tukey'}
        Multiplicity adjustment over the pairs.

    Returns
    -------
    PairwiseResult
        Estimates beta_i - beta_j on the latent scale. An R error, a
        non-finite covariance or a non-converged optimiser gives a failed
        result (status 'error' or 'not_converged', NaN p-values) with R's
        message.
    """
    n_pairs = _n_pairs(judgements)
    try:
        _check_options(structure, adjust)
        return _clmm_result(_fit_clmm(judgements, structure), judgements.n_systems, adjust)
    except Exception as exc:  # noqa: BLE001 -- a failed fit is data, never a p-value
        return PairwiseResult.failed(n_pairs, ERROR, f"{type(exc).__name__}: {exc}")


# --------------------------------------------------------------------- lmer
def _pair_contrast_rows(n_systems: int) -> np.ndarray:
    """Contrast rows over lme4's fixed effects (intercept, then one dummy per non-reference system)."""
    pairs = system_pairs(n_systems)
    rows = np.zeros((len(pairs), n_systems))
    for k, (i, j) in enumerate(pairs):
        # Column 0 is the intercept, i.e. the reference system's level; the
        # reference's own effect is 0, so it contributes no column.
        if i > 0:
            rows[k, i] += 1.0
        rows[k, j] -= 1.0
    return rows


# Degrees of freedom of lmer's contrasts (option df): lmerTest's Satterthwaite, or Kenward-Roger from pbkrtest
# (also the bias-adjusted covariance of the fixed effects), R's names for them.
LMER_DF = {"satterthwaite": "Satterthwaite", "kr": "Kenward-Roger"}


def _fit_lmer(judgements: Judgements, structure: str, verbose: bool = False, df: str = "satterthwaite") -> dict:
    from simdesign.significance.rsession import as_dict, kenward_roger_available, session

    if df == "kr":
        ok, message = kenward_roger_available()
        if not ok:
            raise RuntimeError(message)
    r = session()
    formula = formula_for(judgements, structure)
    with r.lock:
        data = r.data_frame(judgements, ordinal=False)
        contrasts = r.matrix(_pair_contrast_rows(judgements.n_systems))
        fit = as_dict(r.fit_lmer(data, formula, contrasts, verbose, LMER_DF[df]))
    fit["formula"] = formula
    return fit


def _lmer_result(fit: dict, n_systems: int, adjust: str) -> PairwiseResult:
    n_pairs = n_systems * (n_systems - 1) // 2
    warnings_text = _join(*fit.get("warnings") or [])
    if fit.get("error") is not None:
        return PairwiseResult.failed(n_pairs, ERROR, _join(fit["error"][0], warnings_text))
    beta, covariance = fit["beta"], fit["vcov"]
    if len(beta) != n_systems:
        return PairwiseResult.failed(n_pairs, ERROR, _join(
            f"lmer estimated {len(beta) - 1} of {n_systems - 1} system effects (rank-deficient design)",
            warnings_text))
    if not np.all(np.isfinite(covariance)):
        return PairwiseResult.failed(n_pairs, ERROR, _join("lmer's covariance matrix is not finite", warnings_text))
    singular = bool(fit["singular"][0])
    status, problems = lmer_fit_status(singular, int(fit["optimizer_code"][0]), fit.get("lme4_messages") or [],
                                       fit.get("optimizer_warnings") or [], fit.get("warnings") or [])
    if status == NOT_CONVERGED:
        return PairwiseResult.failed(n_pairs, NOT_CONVERGED, _join(
            f"boundary (singular) fit: {', '.join(fit.get('singular_terms') or [])}" if singular else "",
            *problems, warnings_text))
    message = _join(f"boundary (singular) fit: {', '.join(fit.get('singular_terms') or [])}" if singular else "",
                    warnings_text)
    effects = np.concatenate([[0.0], beta[1:]])
    return pairwise_from_fit(effects, covariance[1:, 1:], fit["contrast_df"], adjust, status, message)


def lmer_analysis(judgements: Judgements, rng=None, structure: str = "paper", adjust: str = "none",
                  df: str = "satterthwaite") -> PairwiseResult:
    """Pairwise t tests from R's ``lme4::lmer`` on raw scores, Satterthwaite (lmerTest) or Kenward-Roger df.

    Parameters
    ----------
    judgements : Judgements
    rng : numpy.random.Generator
        Unused; part of the analysis contract.
    structure : {'paper', 'maximal', 'intercepts'}
    adjust : {'none', 'holm', 'tukey'}
        Tukey uses the smallest of the pairs' df.
    df : {'satterthwaite', 'kr'}
        'kr': Kenward-Roger (R's pbkrtest, asked for only here: a missing package gives a failed result
        that names it); the t statistic then uses its bias-adjusted covariance, as pbkrtest and lmerTest do.

    Returns
    -------
    PairwiseResult
        Estimates are differences of system means on the score scale
        (adjusted for the random effects). Failures as for :func:`clmm_analysis`;
        lme4's convergence messages (other than its boundary note) and
        convergence warnings make a fit 'not_converged', at a boundary fit
        too (:func:`lmer_fit_status`).
    """
    n_pairs = _n_pairs(judgements)
    try:
        _check_options(structure, adjust)
        if df not in LMER_DF:
            raise ValueError(f"df must be one of {list(LMER_DF)}; got {df!r}")
        return _lmer_result(_fit_lmer(judgements, structure, df=df), judgements.n_systems, adjust)
    except Exception as exc:  # noqa: BLE001
        return PairwiseResult.failed(n_pairs, ERROR, f"{type(exc).__name__}: {exc}")


# ---------------------------------------------------------------------- clm
def _fit_clm(judgements: Judgements):
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    n_pairs, n_systems = judgements.scores.shape
    levels, category = np.unique(np.asarray(judgements.scores).ravel(), return_inverse=True)
    if len(levels) < 2:
        raise ValueError(f"every score is {levels[0]}: an ordinal model needs two or more distinct scores")
    system = np.tile(np.arange(n_systems), n_pairs)
    dummies = (system[:, None] == np.arange(1, n_systems)[None, :]).astype(float)
    model = OrderedModel(category, dummies, distr="logit")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # BFGS is the fastest of statsmodels' optimisers here (0.14 s against
        # 0.2 s for Newton on the paper's 1500 judgements) and agrees with
        # Newton to 1e-4; the covariance comes from the numerical Hessian.
        fitted = model.fit(method="bfgs", disp=False, maxiter=1000)
    return fitted, [str(w.message) for w in caught]


def clm_analysis(judgements: Judgements, rng=None, adjust: str = "none") -> PairwiseResult:
    """Pairwise Wald z tests from a cumulative-logit model without random effects.

    statsmodels' ``OrderedModel`` with P(Y <= c) = logistic(theta_c - beta_s),
    the same sign convention as ``clmm``; annotators and documents are
    ignored, so the judgements are treated as independent.

    Parameters
    ----------
    judgements : Judgements
    rng : numpy.random.Generator
        Unused; part of the analysis contract.
    adjust : {'none', 'holm', 'tukey'}

    Returns
    -------
    PairwiseResult
    """
    n_pairs = _n_pairs(judgements)
    try:
        _check_options(None, adjust)
        fitted, caught = _fit_clm(judgements)
        n_effects = judgements.n_systems - 1
        if not fitted.mle_retvals.get("converged", False):
            return PairwiseResult.failed(n_pairs, NOT_CONVERGED, _join("OrderedModel did not converge", *caught))
        beta = np.asarray(fitted.params)[:n_effects]
        covariance = np.asarray(fitted.cov_params())[:n_effects, :n_effects]
        if not np.all(np.isfinite(covariance)):
            return PairwiseResult.failed(n_pairs, ERROR, _join("OrderedModel's covariance is not finite", *caught))
        return pairwise_from_fit(np.concatenate([[0.0], beta]), covariance, None, adjust, OK, _join(*caught))
    except Exception as exc:  # noqa: BLE001
        return PairwiseResult.failed(n_pairs, ERROR, f"{type(exc).__name__}: {exc}")


# ------------------------------------------------------------------- replay
def fit_verbose(judgements: Judgements, test: str, structure: str = "paper") -> str:
    """The full printed summary of one fit, for ``simdesign replay``.

    Parameters
    ----------
    judgements : Judgements
    test : {'clmm', 'lmer', 'clm'}
    structure : {'paper', 'maximal', 'intercepts'}
        Ignored for 'clm'.

    Returns
    -------
    str
        R's ``summary()`` print-out (statsmodels' for 'clm'), then the fit
        status, R's warnings and messages, and the unadjusted pairwise
        contrasts the analysis reports.

    Raises
    ------
    ValueError
        For an unknown test.
    RuntimeError
        If R is needed and missing (the message says how to install it).
    """
    systems = judgements.systems
    if test == "clm":
        fitted, caught = _fit_clm(judgements)
        summary = fitted.summary(xname=[f"system{name}" for name in systems[1:]] + [
            f"threshold{k}" for k in range(len(fitted.params) - len(systems) + 1)]).as_text()
        result = clm_analysis(judgements)
        notes, extra = caught, []
        header = "statsmodels OrderedModel (logit): score ~ system, no random effects"
    elif test in ("clmm", "lmer"):
        ok, message = r_available()
        if not ok:
            raise RuntimeError(message)
        fit = (_fit_clmm if test == "clmm" else _fit_lmer)(judgements, structure, verbose=True)
        make_result = _clmm_result if test == "clmm" else _lmer_result
        result = make_result(fit, judgements.n_systems, "none")
        summary = fit["summary"][0] if fit.get("summary") else ""
        notes = fit.get("warnings") or []
        extra = fit.get("notes") or []
        header = f"R {'ordinal::clmm (logit, Laplace)' if test == 'clmm' else 'lmerTest::lmer (REML)'}: {fit['formula']}"
    else:
        raise ValueError(f"fit_verbose knows 'clmm', 'lmer' and 'clm'; got {test!r}")
    lines = [header, "", summary or "(no fit)", "",
             f"status: {result.fit_status}" + (f" ({result.message})" if result.message else "")]
    for label, items in (("warnings", notes), ("messages", extra)):
        if items:
            lines += ["", f"{label}:"] + [f"  {item}" for item in items]
    lines += ["", "pairwise contrasts (unadjusted):", f"  {'pair':<36} {'estimate':>9} {'p':>10}  status"]
    for (i, j), estimate, p_value, status in zip(system_pairs(len(systems)), result.estimate, result.p_value,
                                                  result.status):
        lines.append(f"  {systems[i] + ' - ' + systems[j]:<36} {estimate:>9.4f} {p_value:>10.4g}  {status}")
    return "\n".join(lines)


# The engine asks this before any work when a config names clmm or lmer.
BACKEND_CHECKS.setdefault("R", r_available)

_STRUCTURE_OPTION = (STRUCTURES, "paper")
_ADJUST_OPTION = (ADJUSTMENTS, "none")

register(AnalysisInfo(
    name="clmm", function=clmm_analysis,
    options={"structure": _STRUCTURE_OPTION, "adjust": _ADJUST_OPTION}, needs="R", chunk_trials=4,
    random_effects=True,
    verbose=lambda judgements, structure="paper", adjust="none": fit_verbose(judgements, "clmm", structure),
    description="R ordinal::clmm (logit, Laplace), pairwise Wald z contrasts"))
register(AnalysisInfo(
    name="lmer", function=lmer_analysis,
    options={"structure": _STRUCTURE_OPTION, "adjust": _ADJUST_OPTION,
             "df": (tuple(LMER_DF), "satterthwaite")}, needs="R", chunk_trials=4,
    random_effects=True,
    verbose=lambda judgements, structure="paper", adjust="none", df="satterthwaite": fit_verbose(
        judgements, "lmer", structure),
    description="R lme4::lmer on raw scores, pairwise t contrasts with Satterthwaite df (lmerTest) or "
                "Kenward-Roger df (option df: kr, R's pbkrtest)"))
register(AnalysisInfo(
    name="clm", function=clm_analysis, options={"adjust": _ADJUST_OPTION},
    verbose=lambda judgements, adjust="none": fit_verbose(judgements, "clm"),
    description="cumulative-logit model without random effects (statsmodels), pairwise Wald z contrasts"))
