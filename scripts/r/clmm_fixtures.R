#!/usr/bin/env Rscript
# Reference fits of ordinal::clmm for the tests of simdesign.clmm.
#
# Reads tests/fixtures/clmm_r/manifest.json (written by
# scripts/clmm_fixture_data.py) and, for every (data set, structure) fit it
# lists, fits ordinal::clmm (logit link, Laplace) and writes
# tests/fixtures/clmm_r/<data set>__<structure>.json. Existing JSON files are
# skipped, so an interrupted run resumes. The factor levels of `system` are
# set explicitly from the manifest (reference first, then Python's sorted
# order), because R's default factor order is locale dependent and differs
# from Python's.
#
# Usage (from the repository root; the paper's maximal fits take 3-7 minutes each):
#   nice -n 10 Rscript scripts/r/clmm_fixtures.R [fixture directory] [name filter regex]
#
# A second mode checks the likelihood itself, independently of either
# optimiser: it evaluates ordinal's Laplace objective (its internal getNLA) at
# the parameters simdesign.clmm found, read from native_parameters.json
# (written by `scripts/compare_clmm.py --write-native-parameters`), and writes
# r_loglik_at_native_parameters.json:
#   nice -n 10 Rscript scripts/r/clmm_fixtures.R tests/fixtures/clmm_r --evaluate-native

suppressPackageStartupMessages({
  library(ordinal)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
fixture_dir <- if (length(args) >= 1) args[[1]] else "tests/fixtures/clmm_r"
name_filter <- if (length(args) >= 2) args[[2]] else ".*"
evaluate_native <- identical(name_filter, "--evaluate-native")
manifest <- fromJSON(file.path(fixture_dir, "manifest.json"), simplifyVector = FALSE)

is_nested <- function(d) {
  # Every document judged by exactly one annotator: the paper then drops the document term.
  all(tapply(d$annotator, d$document, function(a) length(unique(a))) == 1)
}

model_formula <- function(structure, nested) {
  if (structure == "intercepts") {
    return(score ~ system + (1 | annotator) + (1 | document))
  }
  if (structure == "paper" && nested) {
    return(score ~ system + (1 + system | annotator))
  }
  score ~ system + (1 + system | annotator) + (1 + system | document)
}

as_rows <- function(m) lapply(seq_len(nrow(m)), function(i) unname(as.numeric(m[i, ])))

read_dataset <- function(dataset) {
  d <- read.csv(file.path(fixture_dir, dataset$csv), colClasses = c(annotator = "character",
                                                                    document = "character",
                                                                    system = "character"))
  d$system <- factor(d$system, levels = unlist(dataset$systems))
  d$annotator <- factor(d$annotator)
  d$document <- factor(d$document)
  d$score <- factor(d$score, ordered = TRUE)
  d
}

fit_one <- function(dataset, structure) {
  d <- read_dataset(dataset)
  systems <- unlist(dataset$systems)
  nested <- is_nested(d)
  form <- model_formula(structure, nested)
  started <- proc.time()[["elapsed"]]
  fit <- clmm(form, data = d, link = "logit", Hess = TRUE)
  seconds <- proc.time()[["elapsed"]] - started
  beta_names <- paste0("system", systems[-1])
  # vcov fails when R's own Hessian is not positive definite: keep the fit, record why.
  vcov_error <- NULL
  full_vcov <- tryCatch(vcov(fit), error = function(e) {
    vcov_error <<- conditionMessage(e)
    NULL
  })
  vc <- VarCorr(fit)
  re_cov <- lapply(vc, function(m) as_rows(unclass(m)[, , drop = FALSE]))
  st <- lapply(fit$ST, function(m) as_rows(m))
  cond_hessian <- with(eigen(fit$Hessian, only.values = TRUE), abs(max(values) / min(values)))
  min_hessian_eigenvalue <- min(eigen(fit$Hessian, only.values = TRUE)$values)
  list(
    dataset = dataset$name,
    structure = structure,
    formula = paste(deparse(form), collapse = " "),
    nested = nested,
    systems = systems,
    n_judgements = nrow(d),
    thresholds = unname(as.numeric(fit$alpha)),
    fixed_effects = as.list(setNames(c(0, as.numeric(fit$beta[beta_names])), systems)),
    fixed_effects_cov = if (is.null(full_vcov)) NULL else as_rows(full_vcov[beta_names, beta_names, drop = FALSE]),
    vcov_error = vcov_error,
    random_effects_cov = re_cov,
    random_effects_sd = lapply(vc, function(m) unname(as.numeric(attr(m, "stddev")))),
    cholesky_factors = st,
    loglik = as.numeric(logLik(fit)),
    optimizer_convergence = fit$optRes$convergence,
    optimizer_message = fit$optRes$message,
    max_abs_gradient = max(abs(fit$gradient)),
    hessian_condition = cond_hessian,
    min_hessian_eigenvalue = min_hessian_eigenvalue,
    hessian_parameters = length(fit$gradient),
    n_parameters = length(fit$optRes$par),
    seconds = seconds,
    r_version = R.version.string,
    ordinal_version = as.character(packageVersion("ordinal"))
  )
}

datasets <- setNames(manifest$datasets, vapply(manifest$datasets, function(x) x$name, ""))

loglik_at <- function(entry) {
  # ordinal orders the random-effects terms as lme4 does (by number of levels), so the
  # parameter vector is assembled by term name: thresholds, effects, then per term the
  # Cholesky diagonal and its lower elements (column-major).
  d <- read_dataset(datasets[[entry$dataset]])
  form <- model_formula(entry$structure, is_nested(d))
  rho <- clmm(form, data = d, link = "logit", doFit = FALSE)
  par <- c(unlist(entry$thresholds), unlist(entry$effects))
  for (term in names(rho$dims$nlev.re)) {
    par <- c(par, unlist(entry$cholesky[[term]]$diagonal), unlist(entry$cholesky[[term]]$lower))
  }
  -ordinal:::getNLA(rho, par)
}

if (evaluate_native) {
  entries <- fromJSON(file.path(fixture_dir, "native_parameters.json"), simplifyVector = FALSE)
  out <- lapply(entries, function(entry) {
    list(fit = entry$fit, native_loglik = entry$loglik, r_loglik = loglik_at(entry))
  })
  write(toJSON(out, auto_unbox = TRUE, digits = NA, pretty = TRUE),
        file.path(fixture_dir, "r_loglik_at_native_parameters.json"))
  for (o in out) cat(sprintf("%-40s native %.6f  R at native parameters %.6f\n", o$fit, o$native_loglik, o$r_loglik))
  quit(save = "no")
}

for (job in manifest$fits) {
  name <- job[[1]]
  structure <- job[[2]]
  if (!grepl(name_filter, name)) next
  out <- file.path(fixture_dir, sprintf("%s__%s.json", name, structure))
  if (file.exists(out)) next
  cat(sprintf("%s fitting %s / %s ...\n", format(Sys.time(), "%H:%M:%S"), name, structure))
  result <- fit_one(datasets[[name]], structure)
  tmp <- paste0(out, ".tmp")
  write(toJSON(result, auto_unbox = TRUE, digits = NA, pretty = TRUE, null = "null"), tmp)
  file.rename(tmp, out)
  cat(sprintf("  done in %.1f s, logLik %.6f, convergence %s\n", result$seconds, result$loglik,
              result$optimizer_convergence))
}
