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

suppressPackageStartupMessages({
  library(ordinal)
  library(jsonlite)
})

args <- commandArgs(trailingOnly = TRUE)
fixture_dir <- if (length(args) >= 1) args[[1]] else "tests/fixtures/clmm_r"
name_filter <- if (length(args) >= 2) args[[2]] else ".*"
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

fit_one <- function(dataset, structure) {
  d <- read.csv(file.path(fixture_dir, dataset$csv), colClasses = c(annotator = "character",
                                                                    document = "character",
                                                                    system = "character"))
  systems <- unlist(dataset$systems)
  d$system <- factor(d$system, levels = systems)
  d$annotator <- factor(d$annotator)
  d$document <- factor(d$document)
  d$score <- factor(d$score, ordered = TRUE)
  nested <- is_nested(d)
  form <- model_formula(structure, nested)
  started <- proc.time()[["elapsed"]]
  fit <- clmm(form, data = d, link = "logit", Hess = TRUE)
  seconds <- proc.time()[["elapsed"]] - started
  n_alpha <- length(fit$alpha)
  full_vcov <- vcov(fit)
  beta_names <- paste0("system", systems[-1])
  vc <- VarCorr(fit)
  re_cov <- lapply(vc, function(m) as_rows(unclass(m)[, , drop = FALSE]))
  st <- lapply(fit$ST, function(m) as_rows(m))
  cond_hessian <- with(eigen(fit$Hessian, only.values = TRUE), abs(max(values) / min(values)))
  list(
    dataset = dataset$name,
    structure = structure,
    formula = paste(deparse(form), collapse = " "),
    nested = nested,
    systems = systems,
    n_judgements = nrow(d),
    thresholds = unname(as.numeric(fit$alpha)),
    fixed_effects = as.list(setNames(c(0, as.numeric(fit$beta[beta_names])), systems)),
    fixed_effects_cov = as_rows(full_vcov[beta_names, beta_names, drop = FALSE]),
    random_effects_cov = re_cov,
    random_effects_sd = lapply(vc, function(m) unname(as.numeric(attr(m, "stddev")))),
    cholesky_factors = st,
    loglik = as.numeric(logLik(fit)),
    optimizer_convergence = fit$optRes$convergence,
    optimizer_message = fit$optRes$message,
    max_abs_gradient = max(abs(fit$gradient)),
    hessian_condition = cond_hessian,
    hessian_parameters = length(fit$gradient),
    n_parameters = length(fit$optRes$par),
    seconds = seconds,
    r_version = R.version.string,
    ordinal_version = as.character(packageVersion("ordinal"))
  )
}

datasets <- setNames(manifest$datasets, vapply(manifest$datasets, function(x) x$name, ""))
for (job in manifest$fits) {
  name <- job[[1]]
  structure <- job[[2]]
  if (!grepl(name_filter, name)) next
  out <- file.path(fixture_dir, sprintf("%s__%s.json", name, structure))
  if (file.exists(out)) next
  cat(sprintf("%s fitting %s / %s ...\n", format(Sys.time(), "%H:%M:%S"), name, structure))
  result <- fit_one(datasets[[name]], structure)
  tmp <- paste0(out, ".tmp")
  write(toJSON(result, auto_unbox = TRUE, digits = NA, pretty = TRUE), tmp)
  file.rename(tmp, out)
  cat(sprintf("  done in %.1f s, logLik %.6f, convergence %s\n", result$seconds, result$loglik,
              result$optimizer_convergence))
}
