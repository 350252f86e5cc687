"""One embedded R session per process, for the R-backed analyses.

The R-backed analyses (:mod:`simdesign.significance.mixed_r`) run R in process
through rpy2. Starting R and loading lme4, lmerTest and ordinal costs about
a second, so a process starts R once, on first use, and every later fit in
that process reuses it (the engine's joblib workers are processes, so each
worker has its own R). Nothing here imports rpy2 at module import time:
``import simdesign`` works on machines without R.

R is single-threaded and rpy2 is not thread-safe, so every call into R goes
through one lock.

Examples
--------
>>> from simdesign.significance.rsession import r_available
>>> ok, message = r_available()
>>> isinstance(ok, bool) and isinstance(message, str)
True
"""
from __future__ import annotations

import functools
import os
import threading

import numpy as np

R_PACKAGES = ("ordinal", "lme4", "lmerTest")
"""R packages the R-backed analyses load (Debian: r-cran-ordinal, r-cran-lme4, r-cran-lmertest)."""

SETUP_ADVICE = ("run `bash scripts/setup.sh` (it installs R and the R packages ordinal, lme4 and lmerTest "
                "with apt, and the pinned Python bridge from requirements-r.txt, rpy2 and pymer4, into the venv)")

# R helpers, defined once per session in their own environment so that they
# neither clutter nor depend on the global environment (pymer4, when loaded
# in the same process, works there).
_R_HELPERS = r"""
local({
  # Evaluate `expr`, keeping warnings and messages as data instead of printing
  # them; an error becomes the returned value (a condition object).
  quietly <- function(expr) {
    warnings <- character(0)
    notes <- character(0)
    value <- tryCatch(
      withCallingHandlers(expr,
        warning = function(w) {
          warnings <<- c(warnings, conditionMessage(w))
          invokeRestart("muffleWarning")
        },
        message = function(m) {
          notes <<- c(notes, trimws(conditionMessage(m)))
          invokeRestart("muffleMessage")
        }),
      error = function(e) e)
    list(value = value, warnings = warnings, notes = notes)
  }

  failure <- function(stage, run, warnings = character(0)) {
    list(error = paste0(stage, ": ", conditionMessage(run$value)),
         warnings = c(warnings, run$warnings), notes = run$notes)
  }

  make_frame <- function(score, system, annotator, document, system_levels, ordinal) {
    data.frame(
      score = if (ordinal) factor(score, levels = sort(unique(score)), ordered = TRUE) else as.numeric(score),
      system = factor(system_levels[system], levels = system_levels),
      annotator = factor(annotator),
      document = factor(document))
  }

  printed <- function(object) paste(utils::capture.output(print(object)), collapse = "\n")

  fit_clmm <- function(data, formula_text, verbose) {
    run <- quietly(ordinal::clmm(stats::as.formula(formula_text), data = data, link = "logit",
                                 nAGQ = 1L, Hess = TRUE, contrasts = list(system = "contr.treatment")))
    if (inherits(run$value, "error")) return(failure("clmm", run))
    fit <- run$value
    beta <- fit$beta
    covariance <- quietly(stats::vcov(fit)[names(beta), names(beta), drop = FALSE])
    if (inherits(covariance$value, "error")) return(failure("vcov", covariance, run$warnings))
    random <- ordinal::VarCorr(fit)
    list(
      beta = unname(as.numeric(beta)),
      vcov = unname(as.matrix(covariance$value)),
      random_covariances = lapply(unname(random), function(m) matrix(as.numeric(m), nrow(m))),
      random_terms = names(random),
      convergence = as.integer(fit$optRes$convergence),
      optimizer_message = as.character(fit$optRes$message),
      max_gradient = max(abs(fit$gradient)),
      warnings = c(run$warnings, covariance$warnings),
      notes = run$notes,
      summary = if (verbose) printed(summary(fit)) else "")
  }

  # Kenward-Roger's bias-adjusted covariance of the fixed effects, pbkrtest::vcovAdj's formulas computed
  # through the random effects' design. pbkrtest forms every derivative G_r of the marginal covariance as an
  # n x n sparse matrix and multiplies them with the dense inverse (60-75 s per maximal fit of 1,500
  # judgements, mostly in Matrix's sparse-times-dense products). Every G_r is Z_t' E_r Z_t for one
  # random-effect term t, so each trace and product it needs reduces to q_t x q_u ones (q_t = columns of
  # Z_t): tr(S G_r S G_s) = tr(E_r M_tu E_s M_ut) with M_tu = Z_t S Z_u' (S the inverse covariance), and
  # X'S G_r S X = F_t' E_r F_t with F_t = Z_t S X. Same numbers to 1e-10 (tests/test_small_sample_refits.py
  # compares it with pbkrtest::vcovAdj), 3-4 s instead of 60-75 s. pbkrtest's own helpers enumerate the
  # parameters, so the order of P and W is the one its Lb_ddf expects.
  kenward_roger_vcov <- function(fit) {
    Phi <- as.matrix(stats::vcov(fit))
    X <- as.matrix(lme4::getME(fit, "X"))
    n <- nrow(X)
    shape <- pbkrtest:::.shgetME(fit)
    Zt <- lme4::getME(fit, "Zt")
    varcor <- lme4::VarCorr(fit)
    terms <- list(); params <- list(); gamma <- numeric(0)
    for (t in seq_len(shape$n.RT)) {
      terms[[t]] <- pbkrtest:::.shget_Zt_group(t, Zt, shape$Gp)  # q_t x n
      k <- shape$n.comp.by.RT[t]
      lower <- varcor[[t]]
      gamma <- c(gamma, lower[lower.tri(lower, diag = TRUE)])
      for (r in seq_len(shape$n.parm.by.RT[t])) {
        entry <- unique(pbkrtest:::.index2UpperTriEntry(r, k))
        one <- if (length(entry) == 1) Matrix::sparseMatrix(entry, entry, x = 1, dims = c(k, k))
               else Matrix::sparseMatrix(entry, entry[2:1], x = c(1, 1), dims = c(k, k))
        params[[length(params) + 1]] <- list(term = t, E = Matrix::kronecker(
          Matrix::Diagonal(shape$n.lev.by.RT2[t]), one))
      }
    }
    n_random <- length(params)
    n_gamma <- n_random + 1  # the residual variance last, with G = I
    Sigma <- Matrix::Diagonal(n, stats::sigma(fit)^2)  # sum of gamma_r G_r, one term at a time
    for (t in seq_along(terms)) Sigma <- Sigma + Matrix::crossprod(terms[[t]], Matrix::kronecker(
      Matrix::Diagonal(shape$n.lev.by.RT2[t]), as.matrix(varcor[[t]])) %*% terms[[t]])
    inverse <- chol2inv(chol(as.matrix(Sigma)))
    B <- inverse %*% X
    Y <- lapply(terms, function(Z) as.matrix(inverse %*% Matrix::t(Z)))
    Fm <- lapply(terms, function(Z) as.matrix(Z %*% B))
    K <- lapply(Y, function(Yt) crossprod(Yt, B))
    M <- lapply(terms, function(Z) lapply(Y, function(Yu) as.matrix(Z %*% Yu)))
    N <- lapply(Y, crossprod)
    E <- lapply(params, function(p) as.matrix(p$E))
    EM <- lapply(seq_len(n_random), function(r)
      lapply(seq_along(terms), function(u) E[[r]] %*% M[[params[[r]]$term]][[u]]))
    EMt <- lapply(EM, function(row) lapply(row, t))
    term_of <- vapply(params, function(p) p$term, integer(1))
    P <- vector("list", n_gamma)
    for (r in seq_len(n_random)) P[[r]] <- -crossprod(Fm[[term_of[r]]], E[[r]] %*% Fm[[term_of[r]]])
    P[[n_gamma]] <- -crossprod(B)
    Q <- function(r, s) {  # X'S G_r S G_s S X
      if (s <= n_random && r <= n_random)
        return(crossprod(Fm[[term_of[r]]], EM[[r]][[term_of[s]]] %*% (E[[s]] %*% Fm[[term_of[s]]])))
      if (r <= n_random) return(crossprod(Fm[[term_of[r]]], E[[r]] %*% K[[term_of[r]]]))
      if (s <= n_random) return(crossprod(K[[term_of[s]]], E[[s]] %*% Fm[[term_of[s]]]))
      crossprod(B, inverse %*% B)
    }
    trace_rs <- function(r, s) {  # tr(S G_r S G_s)
      if (s <= n_random && r <= n_random) return(sum(EM[[r]][[term_of[s]]] * EMt[[s]][[term_of[r]]]))
      if (r <= n_random) return(sum(E[[r]] * N[[term_of[r]]]))
      if (s <= n_random) return(sum(E[[s]] * N[[term_of[s]]]))
      sum(inverse * inverse)
    }
    information <- matrix(NA_real_, n_gamma, n_gamma)
    QQ <- list()
    for (r in seq_len(n_gamma)) {
      PhiP <- Phi %*% P[[r]]
      for (s in r:n_gamma) {
        QQ[[paste(r, s)]] <- Q(r, s)
        information[r, s] <- information[s, r] <-
          trace_rs(r, s) - 2 * sum(Phi * QQ[[paste(r, s)]]) + sum(PhiP * (P[[s]] %*% Phi))
      }
    }
    condition <- min(abs(eigen(information, only.values = TRUE)$values))
    W <- if (condition > 1e-10) 2 * solve(information) else 2 * MASS::ginv(information)
    U <- matrix(0, ncol(X), ncol(X))
    for (r in seq_len(n_gamma - 1)) for (s in (r + 1):n_gamma)
      U <- U + W[r, s] * (QQ[[paste(r, s)]] - P[[r]] %*% Phi %*% P[[s]])
    U <- U + t(U)
    for (r in seq_len(n_gamma)) U <- U + W[r, r] * (QQ[[paste(r, r)]] - P[[r]] %*% Phi %*% P[[r]])
    adjusted <- Phi + 2 * Phi %*% U %*% Phi
    attr(adjusted, "P") <- P
    attr(adjusted, "W") <- W
    adjusted
  }

  # Kenward-Roger df for every contrast from the one adjusted covariance (lmerTest's contest would
  # recompute it for every contrast row); Lb_ddf reads the P and W attached to it.
  kenward_roger <- function(fit, contrasts) {
    adjusted <- kenward_roger_vcov(fit)
    beta <- lme4::fixef(fit)
    unadjusted <- stats::vcov(fit)
    rows <- lapply(seq_len(nrow(contrasts)), function(k) contrasts[k, , drop = FALSE])
    list(vcov = matrix(as.numeric(adjusted), nrow(adjusted)),  # without the attached P and W
         df = vapply(rows, function(L) as.numeric(pbkrtest::Lb_ddf(L, unadjusted, adjusted)), numeric(1)),
         estimate = vapply(rows, function(L) sum(L * beta), numeric(1)))
  }

  fit_lmer <- function(data, formula_text, contrasts, verbose, ddf = "Satterthwaite") {
    # Kenward-Roger needs only lme4's REML fit; lmerTest's fit is the same one plus the derivatives
    # Satterthwaite's df need (half the time of a maximal fit), so it is asked for only for those.
    fitter <- if (ddf == "Kenward-Roger") lme4::lmer else lmerTest::lmer
    run <- quietly(fitter(stats::as.formula(formula_text), data = data, REML = TRUE,
                          contrasts = list(system = "contr.treatment")))
    if (inherits(run$value, "error")) return(failure("lmer", run))
    fit <- run$value
    # lmerTest falls back to a plain lme4 fit (with a warning) when it cannot
    # compute the derivatives Satterthwaite's df need.
    if (ddf != "Kenward-Roger" && !inherits(fit, "lmerModLmerTest"))
      return(list(error = "lmerTest could not compute Satterthwaite degrees of freedom",
                  warnings = run$warnings, notes = run$notes))
    if (ddf == "Kenward-Roger") {
      kr <- quietly(kenward_roger(fit, contrasts))
      if (inherits(kr$value, "error")) return(failure("pbkrtest", kr, run$warnings))
      tests <- list(value = list(Estimate = kr$value$estimate, df = kr$value$df, "Pr(>|t|)" = NA),
                    warnings = kr$warnings)
      covariance <- kr$value$vcov
    } else {
      tests <- quietly(lmerTest::contest(fit, contrasts, joint = FALSE))
      if (inherits(tests$value, "error")) return(failure("contest", tests, run$warnings))
      covariance <- as.matrix(stats::vcov(fit))
    }
    theta <- lme4::getME(fit, "theta")
    on_boundary <- lme4::getME(fit, "lower") == 0 & theta < 1e-4
    conv <- fit@optinfo$conv
    list(
      beta = unname(as.numeric(lme4::fixef(fit))),
      vcov = unname(covariance),
      contrast_estimate = as.numeric(tests$value[["Estimate"]]),
      contrast_df = as.numeric(tests$value[["df"]]),
      contrast_p = as.numeric(tests$value[["Pr(>|t|)"]]),
      singular = lme4::isSingular(fit, tol = 1e-4),
      singular_terms = unique(sub("\\..*$", "", names(theta)[on_boundary])),
      optimizer_code = as.integer(if (is.null(conv$opt)) 0L else conv$opt),
      lme4_messages = as.character(unlist(conv$lme4$messages)),
      optimizer_warnings = as.character(unlist(fit@optinfo$warnings)),
      warnings = c(run$warnings, tests$warnings),
      notes = run$notes,
      summary = if (verbose) printed(summary(fit)) else "")
  }

  environment()
})
"""


def _install_quiet_console() -> None:
    """Route R's console output to nowhere: fits report warnings as data, and
    printing from thousands of trials would bury the progress bar."""
    from rpy2.rinterface_lib import callbacks

    callbacks.consolewrite_print = lambda text: None
    callbacks.consolewrite_warnerror = lambda text: None


@functools.cache
def kenward_roger_available() -> tuple[bool, str]:
    """Whether R has pbkrtest (Kenward-Roger df for ``lmer``, option ``df: kr``); asked only when it is used.

    Returns
    -------
    ok : bool
    message : str
        What is missing and how to install it ('' when all is well).
    """
    ok, message = r_available()
    if not ok:
        return ok, message
    import rpy2.robjects as robjects

    found = robjects.r("function(p) vapply(p, requireNamespace, logical(1), quietly = TRUE)")(
        robjects.StrVector(["pbkrtest"]))
    if not found[0]:
        return False, ("lmer with df: kr needs the R package pbkrtest (Debian: apt-get install r-cran-pbkrtest; "
                       "elsewhere install.packages('pbkrtest') in R)")
    return True, ""


@functools.cache
def r_available() -> tuple[bool, str]:
    """Whether R, rpy2 and the R packages the analyses need are usable here.

    Starts R in this process when it can (that is the only reliable check),
    so later fits pay nothing extra.

    Returns
    -------
    ok : bool
    message : str
        What is missing and how to install it ('' when all is well).
    """
    try:
        import rpy2  # noqa: F401 -- only whether it imports
    except ImportError:
        return False, f"The Python package rpy2 is not installed; {SETUP_ADVICE}"
    # Starting R puts R's library path (with the system's lib directory) into LD_LIBRARY_PATH. This
    # process's loader read that variable at start-up and ignores the change, but child processes
    # (loky and Dask workers, a `simdesign` subprocess) would load the system's libpython instead
    # of this interpreter's and fail to import extension modules. Keep the variable as it was.
    library_path = os.environ.get("LD_LIBRARY_PATH")
    try:
        import rpy2.robjects as robjects
    except Exception as exc:  # noqa: BLE001 -- rpy2 raises several kinds when R is absent or too old
        return False, f"rpy2 cannot start R ({type(exc).__name__}: {exc}); {SETUP_ADVICE}"
    finally:
        if library_path is None:
            os.environ.pop("LD_LIBRARY_PATH", None)
        else:
            os.environ["LD_LIBRARY_PATH"] = library_path
    try:
        found = robjects.r("function(p) vapply(p, requireNamespace, logical(1), quietly = TRUE)")(
            robjects.StrVector(R_PACKAGES))
    except Exception as exc:  # noqa: BLE001
        return False, f"R does not run under rpy2 ({type(exc).__name__}: {exc}); {SETUP_ADVICE}"
    missing = [name for name, present in zip(R_PACKAGES, found) if not present]
    if missing:
        return False, f"R lacks the package(s) {', '.join(missing)}; {SETUP_ADVICE}"
    return True, ""


class RSession:
    """Handles to the R helper functions of this process's embedded R.

    Use :func:`session` to get the process's instance; do not construct it
    directly.
    """

    def __init__(self):
        ok, message = r_available()
        if not ok:
            raise RuntimeError(message)
        import rpy2.robjects as robjects

        _install_quiet_console()
        self._robjects = robjects
        helpers = robjects.r(_R_HELPERS)
        self.quietly = helpers["quietly"]  # for the R helpers of other modules (simdesign.significance.preferences_r)
        self._make_frame = helpers["make_frame"]
        self.fit_clmm = helpers["fit_clmm"]
        self.fit_lmer = helpers["fit_lmer"]
        self.kenward_roger_vcov = helpers["kenward_roger_vcov"]
        self.lock = threading.RLock()

    def data_frame(self, judgements, ordinal: bool):
        """The tidy table of ``judgements`` as an R data.frame.

        Built from the wide arrays directly (no pandas conversion), with
        ``system`` a factor in the Judgements' system order (the first is the
        reference level) and ``score`` an ordered factor over the observed
        score values when ``ordinal`` (a category nobody used has no
        estimable threshold).
        """
        robjects = self._robjects
        n_pairs, n_systems = judgements.scores.shape
        system_codes = np.tile(np.arange(1, n_systems + 1), n_pairs)
        return self._make_frame(
            robjects.IntVector(np.asarray(judgements.scores, dtype=np.int64).ravel().tolist()),
            robjects.IntVector(system_codes.tolist()),
            robjects.IntVector(np.repeat(judgements.annotator, n_systems).tolist()),
            robjects.IntVector(np.repeat(judgements.document, n_systems).tolist()),
            robjects.StrVector([str(name) for name in judgements.systems]),
            robjects.BoolVector([ordinal]),
        )

    def matrix(self, rows: np.ndarray):
        """A numeric R matrix with the given rows."""
        rows = np.atleast_2d(np.asarray(rows, dtype=float))
        return self._robjects.r["matrix"](self._robjects.FloatVector(rows.ravel().tolist()),
                                          nrow=rows.shape[0], byrow=True)


_SESSION: RSession | None = None
_SESSION_LOCK = threading.Lock()


def session() -> RSession:
    """This process's R session, started on first use.

    Raises
    ------
    RuntimeError
        If R, rpy2 or an R package is missing (the message says how to
        install them).
    """
    global _SESSION
    if _SESSION is None:
        with _SESSION_LOCK:
            if _SESSION is None:
                _SESSION = RSession()
    return _SESSION


def as_dict(r_list) -> dict:
    """An R named list as a dict of numpy arrays / str lists (R NULL -> None).

    Numeric matrices keep their shape; character vectors become lists of str;
    length-one numeric and logical vectors stay arrays (callers index them).
    """
    from rpy2.rinterface_lib.sexp import NULLType
    from rpy2.robjects.vectors import ListVector, StrVector

    out = {}
    for name, value in zip(r_list.names, r_list):
        if isinstance(value, NULLType):
            out[name] = None
        elif isinstance(value, StrVector):
            out[name] = [str(v) for v in value]
        elif isinstance(value, ListVector) or type(value).__name__ in ("ListVector", "ListSexpVector"):
            out[name] = [_as_array(v) for v in value]
        else:
            out[name] = _as_array(value)
    return out


def _as_array(value) -> np.ndarray:
    dim = getattr(value, "dim", None)  # R NULL (length 0) for plain vectors
    flat = np.array(list(value), dtype=float)
    if dim is not None and len(dim) == 2:
        return flat.reshape(tuple(int(d) for d in dim), order="F")
    return flat
