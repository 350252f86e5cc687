"""``bt_mixed``: the Bradley-Terry model with annotator and document random effects, fitted by R (issue 42, part 3).

The model
---------
Comparison k shows systems i < j (model order) to annotator a on document d; its verdict y_k is 1 (i
preferred), 1/2 (a tie) or 0 (j preferred). Its linear predictor is the pair's strength difference plus the
annotator's and the document's effects on that difference::

    eta_k = (beta_i - beta_j) + (u_{a,i} - u_{a,j}) + (v_{d,i} - v_{d,j}),        beta_1 = 0 (the first system)

``structure: intercepts`` (the default): one effect per (annotator, system) and per (document, system), each
set with one variance, u_{a,s} ~ N(0, sigma_A^2) and v_{d,s} ~ N(0, sigma_D^2), all independent. An
annotator's effect on a pair is then the difference of its effects on the two systems: a random intercept per
(annotator, system) that enters a comparison with +1 on the first system's level and -1 on the second's (a
*multiple-membership* term). Neither lme4's nor ordinal's formula language can write a term with two levels per
observation, or tie the variances of ``(0 + x_1 | annotator) + ... + (0 + x_S | annotator)``, so the fit is
built with a placeholder term ``(1 | annotator_system)`` whose model matrix (``Zt``) is replaced by the +1/-1
matrix before fitting. For ``glmer`` lme4's own modular functions do this (``glFormula``, ``mkGlmerDevfun``,
``optimizeGlmer``, ``updateGlmerDevfun``, ``mkMerMod``, ``checkConv``: the steps ``glmer`` itself runs), the
placeholder with one level per effect (a log with more effects than comparisons, e.g. a sparse battle log, is
padded with rows of prior weight 0, which add nothing to the likelihood). For ``clmm``,
``ordinal::clmm(doFit = FALSE)`` returns the model environment, whose matrix and the sizes that follow from it
are replaced before ``ordinal:::clmm.fit.env`` fits it (unexported functions of ordinal 2022.11.16).
tests/test_bt_mixed.py checks, on a block study and on a battle log with more effects than comparisons, that
the Laplace objective at the fit equals that of lme4's (ordinal's) own formula model
``(0 + x_1 | annotator) + ... + (0 + x_S | annotator) + (the same for document)`` with every variance of a
grouping factor equal, and that maximising that formula model so tied gives the same fixed effects: the
replaced matrix is that model's, with its variances tied.

``structure: independent``: one variance per system and grouping factor, u_{a,s} ~ N(0, sigma_{A,s}^2), the
same for documents: the random slopes of the pair's contrast columns, a plain formula
``(0 + x_1 | annotator) + ... + (0 + x_S | annotator) + (0 + x_1 | document) + ...`` with
x_s = +1 (s = i), -1 (s = j), 0 otherwise (2S variances; identified for S >= 3). Slower (6-10 s per glmer fit
of 3,000 comparisons; a clmm fit took about 100 s, and on a small study its Hessian was not positive definite),
nearly always singular at the Figure-4 designs, and no closer to its level there than ``intercepts``.

Ties (option ``ties``)
----------------------
``half``: ``lme4::glmer``, binomial, logit: each comparison is ``cbind(2y, 2 - 2y)`` with prior weight 1/2, so
that its conditional log-likelihood is y log expit(eta) + (1 - y) log expit(-eta) (plus a constant): a tie
counts as half a win and half a loss, the Arena convention of :func:`simdesign.stats.preferences.bradley_terry`
(``ties="half"``). Written as y = 1/2 with weight 1 it would not: lme4's Laplace objective takes its binomial
term from the family's AIC, computed for integer counts of successes (at zero variance that form's deviance is
not the half-win deviance plus a constant; the cbind form's is, to rounding). Without ties this is the exact
likelihood of a logistic mixed model. With ties it is a **quasi-likelihood**: the half-win is no probability
model of three verdicts, and glmer integrates it as if it were one (Laplace). A tie's verdict varies less than
the binomial variance the fit assumes (Var y = p(1 - p) - P(tie)/4), so its model-based errors lean
conservative as ties grow.

``ordinal``: ``ordinal::clmm``, logit, Laplace, on the ordered verdict second < tie < first with thresholds
-tau, +tau and no intercept (P(first) = expit(eta - tau), P(second) = expit(-eta - tau)): Davidson-like ties
as ordered outcomes, an exact likelihood given the random effects (Laplace-approximated over them). With three
levels this is ordinal's ``threshold = "symmetric2"`` (thresholds symmetric around 0; ordinal's
``"symmetric"`` leaves both free for three levels, i.e. an intercept). It is the pairwise method's own
generator (:mod:`simdesign.methods.pairwise`: tie band tau, logistic noise of scale 1) with the random effects
above. Slower: 9-13 s per fit of 3,000 comparisons (glmer: 1.7-3 s).

Tests and statuses
------------------
Wald z tests of every pair's strength difference beta_i - beta_j from the fixed effects and their covariance
(:func:`simdesign.significance.base.pairwise_from_fit`), optionally Holm- or Tukey-adjusted; estimates are on the
logit scale (``half``: attenuated relative to the latent scale; ``ordinal``: the latent scale). A fit's status
is shared by its pairs, as for ``clmm`` and ``lmer`` (:mod:`simdesign.significance.mixed_r`): glmer's through
:func:`simdesign.significance.mixed_r.lmer_fit_status` ('not_converged' for a non-zero optimiser code, any lme4
convergence message other than its boundary note, or a warning mentioning convergence; else 'singular' when
``isSingular(fit, tol = 1e-4)``; else 'ok'); clmm's by nlminb's code and convergence warnings, 'singular' when a
variance is on the boundary (relative standard deviation below 1e-4); an R error, a rank-deficient fixed part or
a Hessian that is not positive definite is 'error'. Failed fits never give p-values. The optimiser is
``bobyqa`` at both of glmer's stages (glmer's default Nelder-Mead at the second stage left max|grad| warnings
on boundary fits of these designs that bobyqa does not).

Type I error
------------
figures/pairwise_bt_mixed_type1.csv (scripts/pairwise_bt_mixed_type1.py: the coherence preset with every pairwise
value assumed, effect zero, 200 trials; the verdict is the planner's, :func:`simdesign.stats.montecarlo.level_verdict`
against 0.075): 3 annotators crossed with 100 documents 0.157 [0.130, 0.188], fails (three annotators cannot
estimate the annotators' variance, and the z test has no small-sample correction); 20 blocks of 5 documents 0.074
[0.060, 0.092], undecided; 100 blocks of one document 0.056 [0.042, 0.073], holds (every fit singular). One
variance per grouping factor is also misspecified for the preset, whose annotator and document effects on a
pair's difference vary more for some pairs than for others (correlated slopes of unequal variance): the one
variance gives some pairs too small errors and others too large ones, single pairs' rates ranging 0.005-0.17 at
20 blocks. ``ties: ordinal`` (40 trials) and ``structure: independent`` (50 trials) did no better.

Importing this module needs neither R nor rpy2; R starts on the first fit (:mod:`simdesign.significance.rsession`).
"""
from __future__ import annotations

import numpy as np

from simdesign.significance.base import (ADJUSTMENTS, ERROR, NOT_CONVERGED, OK, SINGULAR, AnalysisInfo,
                                         PairwiseResult, pairwise_from_fit, register, relative_cholesky_is_singular)
from simdesign.significance.mixed_r import lmer_fit_status
from simdesign.core.judgements import Judgements

STRUCTURES = ("intercepts", "independent")
TIES = ("half", "ordinal")
MEMBERSHIP_TERMS = {"annotator": "annotator_system", "document": "document_system"}
"""Grouping factor -> the placeholder factor of its (group, system) effects under ``structure: intercepts``."""

# A function of rsession's `quietly` (warnings and messages kept as data, an error returned as the value), which
# the helpers below call: one definition of it for every R-backed test.
_R_CODE = r"""
function(quietly) local({

  # Rows: the (group, system) pairs that occur, ordered by group then system; columns: comparisons; +1 in the
  # row of (group, first), -1 in that of (group, second).
  membership <- function(group, first, second, n_systems) {
    code <- as.integer(factor(group))
    key_first <- (code - 1L) * n_systems + first
    key_second <- (code - 1L) * n_systems + second
    keys <- sort(unique(c(key_first, key_second)))
    n <- length(first)
    Matrix::sparseMatrix(i = c(match(key_first, keys), match(key_second, keys)), j = c(seq_len(n), seq_len(n)),
                         x = c(rep(1, n), rep(-1, n)), dims = c(length(keys), n))
  }

  # A factor with `levels` levels, each used (its values are never read: the term's matrix is replaced).
  placeholder <- function(levels, n) factor(((seq_len(n) - 1L) %% levels) + 1L, levels = seq_len(levels))

  bt_frame <- function(first, second, wins, annotator, document, n_systems) {
    n <- length(first)
    x <- matrix(0, n, n_systems, dimnames = list(NULL, paste0("x", seq_len(n_systems))))
    x[cbind(seq_len(n), first)] <- 1
    x[cbind(seq_len(n), second)] <- -1
    data.frame(x, wins = wins, losses = 2L - wins, half = 0.5,
               verdict = factor(wins, levels = 0:2, labels = c("second", "tie", "first"), ordered = TRUE),
               annotator = factor(annotator), document = factor(document))
  }

  formula_text <- function(ties, structure, n_systems) {
    fixed <- paste0("x", 2:n_systems, collapse = " + ")
    random <- if (structure == "intercepts") "(1 | annotator_system) + (1 | document_system)" else
      paste(c(sprintf("(0 + x%d | annotator)", seq_len(n_systems)), sprintf("(0 + x%d | document)",
            seq_len(n_systems))), collapse = " + ")
    response <- if (ties == "half") "cbind(wins, losses) ~ 0 + " else "verdict ~ "
    paste0(response, fixed, " + ", random)
  }

  glmer_control <- function() lme4::glmerControl(optimizer = "bobyqa", check.nobs.vs.nlev = "ignore",
                                                 check.nobs.vs.nRE = "ignore")

  # glmer's own steps (lme4's modular functions), with each placeholder term's matrix replaced. A placeholder
  # needs a row per level: with more (group, system) effects than comparisons (a sparse battle log) the frame is
  # padded with rows of prior weight 0 (no term in the likelihood, a zero column in every term's matrix).
  glmer_members <- function(formula, frame, members) {
    control <- glmer_control()
    n <- nrow(frame)
    rows <- max(n, vapply(members, nrow, numeric(1)))
    if (rows > n) {
      padding <- frame[rep(1L, rows - n), , drop = FALSE]
      padding[, grepl("^x[0-9]+$", names(padding))] <- 0
      padding$half <- 0
      frame <- rbind(frame, padding)
      members <- lapply(members, function(z) cbind(z, Matrix::Matrix(0, nrow(z), rows - n, sparse = TRUE)))
    }
    for (g in names(members)) frame[[g]] <- placeholder(nrow(members[[g]]), rows)
    parsed <- lme4::glFormula(formula, data = frame, family = stats::binomial, weights = half, control = control)
    labels <- names(parsed$reTrms$Ztlist)
    parsed$reTrms$Ztlist <- stats::setNames(lapply(names(parsed$reTrms$cnms), function(g) members[[g]]), labels)
    parsed$reTrms$Zt <- methods::as(do.call(rbind, parsed$reTrms$Ztlist), "CsparseMatrix")
    # from a frame inside lme4's namespace, as glmer calls it: the deviance function's environment has the
    # caller's frame as parent and looks up lme4's internal helpers (GHrule) there
    inside <- new.env(parent = asNamespace("lme4"))
    inside$arguments <- c(parsed, list(control = control, nAGQ = 0L))
    devfun <- evalq(do.call(mkGlmerDevfun, arguments), inside)
    start <- lme4::optimizeGlmer(devfun, optimizer = "bobyqa", control = control$optCtrl, nAGQ = 0L,
                                 restart_edge = FALSE, boundary.tol = 0, calc.derivs = FALSE)
    devfun <- lme4::updateGlmerDevfun(devfun, parsed$reTrms, nAGQ = 1L)
    opt <- lme4::optimizeGlmer(devfun, optimizer = "bobyqa", control = control$optCtrl, start = list(theta = start$par),
                               nAGQ = 1L, stage = 2, calc.derivs = TRUE, restart_edge = control$restart_edge,
                               boundary.tol = control$boundary.tol)
    check <- lme4::checkConv(attr(opt, "derivs"), opt$par, ctrl = control$checkConv,
                             lbound = environment(devfun)$lower)
    lme4::mkMerMod(environment(devfun), opt, parsed$reTrms, fr = parsed$fr, lme4conv = check)
  }

  glmer_summary <- function(fit, run) {
    theta <- lme4::getME(fit, "theta")
    on_boundary <- lme4::getME(fit, "lower") == 0 & theta < 1e-4
    conv <- fit@optinfo$conv
    variances <- vapply(lme4::VarCorr(fit), function(m) as.numeric(m[1, 1]), numeric(1))
    list(beta = unname(as.numeric(lme4::fixef(fit))), vcov = unname(as.matrix(stats::vcov(fit))),
         variances = unname(variances), variance_names = names(variances),
         singular = lme4::isSingular(fit, tol = 1e-4),
         singular_terms = unique(sub("\\..*$", "", names(theta)[on_boundary])),
         optimizer_code = as.integer(if (is.null(conv$opt)) 0L else conv$opt),
         lme4_messages = as.character(unlist(conv$lme4$messages)),
         optimizer_warnings = as.character(unlist(fit@optinfo$warnings)),
         deviance = as.numeric(-2 * stats::logLik(fit)), warnings = run$warnings, notes = run$notes)
  }

  # clmm's own steps up to the fit (doFit = FALSE) with three-level placeholders, then each placeholder term's
  # matrix and the sizes that follow from it (levels, random effects, their starting values, the sparse Cholesky
  # factor's pattern) replaced, then its fitter.
  clmm_members <- function(formula, frame, members) {
    for (g in names(members)) frame[[g]] <- placeholder(3L, nrow(frame))
    rho <- ordinal::clmm(formula, data = frame, link = "logit", threshold = "symmetric2", doFit = FALSE)
    terms <- names(rho$dims$nlev.re)
    sizes <- stats::setNames(vapply(terms, function(g) as.integer(nrow(members[[g]])), integer(1)), terms)
    rho$Zt <- methods::as(do.call(rbind, lapply(terms, function(g) members[[g]])), "CsparseMatrix")
    rho$dims$nlev.re <- sizes
    rho$dims$nlev.gf <- sizes[names(rho$dims$nlev.gf)]
    rho$dims$q <- sum(sizes)
    rho$u <- rho$uStart <- rep(0, sum(sizes))
    rho$L <- Matrix::Cholesky(Matrix::tcrossprod(rho$Zt), LDL = TRUE, super = FALSE, Imult = 1)
    fit <- ordinal:::clmm.fit.env(rho, control = list(), method = "nlminb", Hess = TRUE)
    fixed <- rho$dims$nalpha + seq_len(rho$dims$nbeta)
    list(alpha = fit$coefficients[seq_len(rho$dims$nalpha)], beta = fit$coefficients[fixed],
         covariance = chol2inv(chol(fit$Hessian))[fixed, fixed, drop = FALSE],
         variances = vapply(fit$ST, function(m) as.numeric(m[1, 1])^2, numeric(1)), optRes = fit$optRes,
         gradient = fit$gradient, logLik = fit$logLik)
  }

  clmm_direct <- function(formula, frame) {
    fit <- ordinal::clmm(formula, data = frame, link = "logit", threshold = "symmetric2", Hess = TRUE)
    list(alpha = fit$alpha, beta = fit$beta, covariance = stats::vcov(fit)[names(fit$beta), names(fit$beta)],
         variances = vapply(ordinal::VarCorr(fit), function(m) as.numeric(m[1, 1]), numeric(1)),
         optRes = fit$optRes, gradient = fit$gradient, logLik = fit$logLik)
  }

  clmm_summary <- function(fit, run) {
    list(beta = unname(as.numeric(fit$beta)), vcov = unname(as.matrix(fit$covariance)),
         tau = unname(as.numeric(fit$alpha)), variances = unname(fit$variances),
         variance_names = names(fit$variances), convergence = as.integer(fit$optRes$convergence),
         optimizer_message = as.character(fit$optRes$message), max_gradient = max(abs(fit$gradient)),
         deviance = -2 * fit$logLik, warnings = run$warnings, notes = run$notes)
  }

  fit_bt_mixed <- function(first, second, wins, annotator, document, n_systems, ties, structure) {
    frame <- bt_frame(first, second, wins, annotator, document, n_systems)
    formula <- stats::as.formula(formula_text(ties, structure, n_systems))
    members <- NULL
    if (structure == "intercepts") {
      members <- list(annotator_system = membership(annotator, first, second, n_systems),
                      document_system = membership(document, first, second, n_systems))
    }
    run <- quietly(if (ties == "half") {
      if (is.null(members)) lme4::glmer(formula, data = frame, family = stats::binomial, weights = half,
                                        control = glmer_control())
      else glmer_members(formula, frame, members)
    } else {
      if (is.null(members)) clmm_direct(formula, frame) else clmm_members(formula, frame, members)
    })
    if (inherits(run$value, "error"))
      return(list(error = paste0(if (ties == "half") "glmer" else "clmm", ": ", conditionMessage(run$value)),
                  warnings = run$warnings, notes = run$notes))
    summary <- quietly(if (ties == "half") glmer_summary(run$value, run) else clmm_summary(run$value, run))
    if (inherits(summary$value, "error"))
      return(list(error = paste0("summary: ", conditionMessage(summary$value)),
                  warnings = c(run$warnings, summary$warnings), notes = run$notes))
    value <- summary$value
    value$warnings <- c(value$warnings, summary$warnings)
    value$formula <- formula_text(ties, structure, n_systems)
    value
  }

  environment()
})
"""

_HELPERS: dict = {}


def _helpers():
    """This process's R helpers of this module (defined once per R session)."""
    from simdesign.significance.rsession import session

    r = session()
    with r.lock:
        if id(r) not in _HELPERS:
            import rpy2.robjects as robjects

            _HELPERS[id(r)] = robjects.r(_R_CODE)(r.quietly)
    return r, _HELPERS[id(r)]


def _n_pairs(n_systems: int) -> int:
    return n_systems * (n_systems - 1) // 2


def r_formula(n_systems: int, ties: str = "half", structure: str = "intercepts") -> str:
    """The R formula ``bt_mixed`` fits (``annotator_system`` and ``document_system``: the multiple-membership terms
    of the module's docstring, whose model matrices replace the placeholders' before fitting).

    Examples
    --------
    >>> r_formula(3)
    'cbind(wins, losses) ~ 0 + x2 + x3 + (1 | annotator_system) + (1 | document_system)'
    >>> r_formula(2, "ordinal", "independent")
    'verdict ~ x2 + (0 + x1 | annotator) + (0 + x2 | annotator) + (0 + x1 | document) + (0 + x2 | document)'
    """
    _check_options(ties, structure, "none")
    fixed = " + ".join(f"x{s}" for s in range(2, n_systems + 1))
    if structure == "intercepts":
        random = " + ".join(f"(1 | {term})" for term in MEMBERSHIP_TERMS.values())
    else:
        random = " + ".join(f"(0 + x{s} | {group})" for group in MEMBERSHIP_TERMS for s in range(1, n_systems + 1))
    response = "cbind(wins, losses) ~ 0 + " if ties == "half" else "verdict ~ "
    return f"{response}{fixed} + {random}"


def _check_options(ties: str, structure: str, adjust: str) -> None:
    if ties not in TIES:
        raise ValueError(f"ties must be one of {TIES}; got {ties!r}")
    if structure not in STRUCTURES:
        raise ValueError(f"structure must be one of {STRUCTURES}; got {structure!r}")
    if adjust not in ADJUSTMENTS:
        raise ValueError(f"adjust must be one of {ADJUSTMENTS}; got {adjust!r}")


def fit_bt_mixed(judgements: Judgements, ties: str = "half", structure: str = "intercepts") -> dict:
    """One fit of the model, as R returns it (a dict: ``beta`` (systems 2..S), ``vcov``, ``variances`` with
    ``variance_names``, ``deviance`` (-2 log-likelihood, Laplace), ``formula``, the diagnostics, or ``error``).

    Raises
    ------
    RuntimeError
        R or one of its packages is missing (the message says how to install them).
    """
    import rpy2.robjects as robjects

    from simdesign.significance.rsession import as_dict

    _check_options(ties, structure, "none")
    found = judgements.comparisons()
    r, helpers = _helpers()
    with r.lock:
        fit = as_dict(helpers["fit_bt_mixed"](
            robjects.IntVector((found["first"] + 1).tolist()), robjects.IntVector((found["second"] + 1).tolist()),
            robjects.IntVector(np.rint(2 * found["outcome"]).astype(np.int64).tolist()),
            robjects.IntVector(np.asarray(found["annotator"], dtype=np.int64).tolist()),
            robjects.IntVector(np.asarray(found["document"], dtype=np.int64).tolist()),
            judgements.n_systems, ties, structure))
    return fit


def _join(*parts) -> str:
    return "; ".join(dict.fromkeys(str(p) for p in parts if p))


def _boundary_note(terms) -> str:
    return f"boundary (singular) fit: {', '.join(terms)}" if terms else ""


def _glmer_status(fit: dict) -> tuple[str, str]:
    singular = bool(fit["singular"][0])
    status, problems = lmer_fit_status(singular, int(fit["optimizer_code"][0]), fit.get("lme4_messages") or [],
                                       fit.get("optimizer_warnings") or [], fit.get("warnings") or [])
    terms = (fit.get("singular_terms") or []) if singular else []
    return status, _join(_boundary_note(terms), *problems, *(fit.get("warnings") or []))


def _clmm_status(fit: dict) -> tuple[str, str]:
    warnings_text = _join(*(fit.get("warnings") or []))
    if int(fit["convergence"][0]) != 0:
        return NOT_CONVERGED, _join(f"nlminb did not converge: {fit['optimizer_message'][0]}", warnings_text)
    if any("converg" in w.lower() for w in fit.get("warnings") or []):
        return NOT_CONVERGED, warnings_text
    variances = np.atleast_1d(fit["variances"])
    terms = [name for name, variance in zip(fit["variance_names"], variances)
             if relative_cholesky_is_singular(np.array([[variance]]))]
    return (SINGULAR if terms else OK), _join(_boundary_note(terms), warnings_text)


def bt_mixed_result(fit: dict, n_systems: int, ties: str = "half", adjust: str = "none") -> PairwiseResult:
    """The pairs' Wald z tests from one fit's dict (:func:`fit_bt_mixed`), with the fit's status (module docstring)."""
    n_pairs = _n_pairs(n_systems)
    warnings_text = _join(*(fit.get("warnings") or []))
    if fit.get("error") is not None:
        return PairwiseResult.failed(n_pairs, ERROR, _join(fit["error"][0], warnings_text))
    beta, covariance = np.atleast_1d(fit["beta"]), np.atleast_2d(fit["vcov"])
    if len(beta) != n_systems - 1:
        return PairwiseResult.failed(n_pairs, ERROR, _join(
            f"the fit estimated {len(beta)} of {n_systems - 1} strength differences (rank-deficient: a system "
            "never compared, or compared only with itself)", warnings_text))
    if not np.all(np.isfinite(covariance)):
        return PairwiseResult.failed(n_pairs, ERROR, _join("the covariance matrix is not finite", warnings_text))
    status, message = _glmer_status(fit) if ties == "half" else _clmm_status(fit)
    if status == NOT_CONVERGED:
        return PairwiseResult.failed(n_pairs, NOT_CONVERGED, message)
    return pairwise_from_fit(np.concatenate([[0.0], beta]), covariance, None, adjust, status, message)


def bt_mixed(judgements: Judgements, rng=None, ties: str = "half", structure: str = "intercepts",
             adjust: str = "none") -> PairwiseResult:
    """Wald z tests of the pairs' strength differences in the Bradley-Terry mixed model (module docstring).

    Parameters
    ----------
    judgements : Judgements
        Pairwise preferences (:meth:`~simdesign.core.judgements.Judgements.comparisons`).
    rng : numpy.random.Generator
        Unused (the fits are deterministic); part of the analysis contract.
    ties : {'half', 'ordinal'}
    structure : {'intercepts', 'independent'}
    adjust : {'none', 'holm', 'tukey'}

    Returns
    -------
    PairwiseResult
        Estimates beta_i - beta_j (logit scale); a failed fit (R error, non-convergence) has no p-values.
    """
    n_pairs = _n_pairs(judgements.n_systems)
    try:
        _check_options(ties, structure, adjust)
        return bt_mixed_result(fit_bt_mixed(judgements, ties, structure), judgements.n_systems, ties, adjust)
    except Exception as exc:  # noqa: BLE001 -- a failed fit is data, never a p-value
        return PairwiseResult.failed(n_pairs, ERROR, f"{type(exc).__name__}: {exc}")


register(AnalysisInfo(
    name="bt_mixed", function=bt_mixed,
    options={"ties": (TIES, "half"), "structure": (STRUCTURES, "intercepts"), "adjust": (ADJUSTMENTS, "none")},
    needs="R", random_effects=True, takes_preferences=True, uses_rng=False, needs_complete=False, chunk_trials=4,
    description="Pairwise preferences: Bradley-Terry with random effects per (annotator, system) and (document, "
                "system) on each comparison's strength difference, R glmer (ties half a win: a quasi-likelihood "
                "when there are ties) or ordinal::clmm (ties: ordinal, symmetric thresholds), Wald z per pair.",
))
