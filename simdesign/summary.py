"""Summaries: rates with Monte-Carlo standard errors and Wilson intervals.

The trial is the independent unit (docs/estimands.md): the pairs of one
trial share annotators and documents, so their rejections are correlated and
a binomial SE over all (trial, pair) tests would be too small. Every rate is
a mean of per-trial shares; its MCSE is their standard deviation over
sqrt(trials); the 95% interval is Wilson's with the effective size
n_eff = rate (1 - rate) / MCSE^2, clipped to [trials, n_tests].
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from simdesign.analyses import ANALYSES
from simdesign.analyses.base import FAILURES, SINGULAR
from simdesign.config import SimulationConfig

DESIGN_COLUMNS = ("design", "kind", "blocks", "docs_per_block", "annotators_per_block", "docs", "annotators",
                  "judgements_per_output", "judgements")
SUMMARY_COLUMNS = DESIGN_COLUMNS + ("test", "estimand", "rate", "ci_low", "ci_high", "mcse", "n_tests", "n_failed",
                                    "trials", "effect", "alpha", "mean_fit_seconds", "note")


@dataclass(frozen=True)
class Rate:
    rate: float
    ci_low: float
    ci_high: float
    mcse: float
    n_tests: int


def wilson_from_mcse(rate: float, mcse: float, trials: int, n_tests: int, confidence: float = 0.95):
    """Wilson interval at the effective size implied by the MCSE (docs/estimands.md)."""
    if not np.isfinite(mcse) or mcse <= 0:
        n_eff = float(trials)
    else:
        n_eff = float(np.clip(rate * (1 - rate) / mcse ** 2, trials, max(n_tests, trials)))
    low, high = proportion_confint(rate * n_eff, n_eff, alpha=1 - confidence, method="wilson")
    # statsmodels' formula leaves rounding residue (about 1e-19) at rates 0 and 1
    return max(0.0, float(low)), min(1.0, float(high))


def rate_from_shares(shares: np.ndarray, n_tests: int) -> Rate:
    """Rate = mean of per-trial shares (equal tests per trial), trial-level MCSE.

    Parameters
    ----------
    shares : ndarray, shape (trials,)
        Per-trial share of tests with the event (or 0/1 per trial).
    n_tests : int
        Tests behind the rate (trials x pairs).
    """
    trials = len(shares)
    rate = float(np.mean(shares))
    mcse = float(np.std(shares, ddof=1) / np.sqrt(trials)) if trials > 1 else float("nan")
    low, high = wilson_from_mcse(rate, mcse, trials, n_tests)
    return Rate(rate, low, high, mcse, n_tests)


def ratio_rate(numerators: np.ndarray, denominators: np.ndarray) -> Rate:
    """sum(a) / sum(b) over trials, MCSE by the delta method (a ratio estimator).

    Used for power with failures excluded, where trials differ in how many
    of their tests count.
    """
    trials = len(numerators)
    total = float(np.sum(denominators))
    if total == 0:
        return Rate(float("nan"), float("nan"), float("nan"), float("nan"), 0)
    rate = float(np.sum(numerators)) / total
    if trials > 1:
        residual = numerators - rate * denominators
        mcse = float(np.sqrt(np.sum(residual ** 2) / (trials * (trials - 1))) / np.mean(denominators))
    else:
        mcse = float("nan")
    low, high = wilson_from_mcse(rate, mcse, trials, int(total))
    return Rate(rate, low, high, mcse, int(total))


def _matrix(group: pd.DataFrame, column: str, trials: int, n_pairs: int) -> np.ndarray:
    return group[column].to_numpy().reshape(trials, n_pairs)


def summarise_group(group: pd.DataFrame, alpha: float, is_null: bool, random_effects: bool = False) -> list[dict]:
    """Estimand rows for one (design, test); ``group`` sorted by trial, pair.

    ``random_effects`` (the registry's :attr:`AnalysisInfo.random_effects`) adds the
    ``singular_rate`` row: only a mixed model can have a boundary fit.
    """
    n_pairs = int(group["pair"].max()) + 1
    trials = len(group) // n_pairs
    p_value = _matrix(group, "p_value", trials, n_pairs)
    failed = np.isin(_matrix(group, "status", trials, n_pairs), list(FAILURES))
    estimate = _matrix(group, "estimate", trials, n_pairs)
    true_diff = _matrix(group, "true_diff", trials, n_pairs)[0]
    reject = (p_value < alpha) & ~failed
    n_failed = int(failed.sum())
    rows = []

    def add(estimand, rate: Rate, failures=n_failed, note=""):
        rows.append({"estimand": estimand, "rate": rate.rate, "ci_low": rate.ci_low, "ci_high": rate.ci_high,
                     "mcse": rate.mcse, "n_tests": rate.n_tests, "n_failed": failures, "note": note})

    if is_null:
        add("type1", rate_from_shares(reject.mean(axis=1), trials * n_pairs))
        add("familywise", rate_from_shares(reject.any(axis=1).astype(float), trials),
            note="share of trials with at least one rejection")
    else:
        relevant = true_diff != 0
        if relevant.any():
            direction = np.sign(true_diff[relevant])
            right = reject[:, relevant] & (np.sign(estimate[:, relevant]) == direction)
            wrong = reject[:, relevant] & (np.sign(estimate[:, relevant]) == -direction)
            n_relevant = int(relevant.sum())
            add("power", rate_from_shares(right.mean(axis=1), trials * n_relevant),
                failures=int(failed[:, relevant].sum()))
            usable = (~failed[:, relevant]).sum(axis=1)
            add("power_fitted", ratio_rate(right.sum(axis=1).astype(float), usable.astype(float)),
                failures=int(failed[:, relevant].sum()), note="failed tests excluded")
            add("type_s", rate_from_shares(wrong.mean(axis=1), trials * n_relevant),
                failures=int(failed[:, relevant].sum()), note="rejections in the wrong direction (latent scale)")
    statuses = _matrix(group, "status", trials, n_pairs)[failed]
    kinds, counts = np.unique(statuses.astype(str), return_counts=True)
    add("failure_rate", rate_from_shares(failed.mean(axis=1), trials * n_pairs),
        note="; ".join(f"{kind}: {count}" for kind, count in zip(kinds, counts)))
    if random_effects:
        fit_status = group["fit_status"].to_numpy().reshape(trials, n_pairs)[:, 0]
        singular = np.array([pd.notna(status) and status == SINGULAR for status in fit_status], dtype=float)
        add("singular_rate", rate_from_shares(singular, trials), note="share of fits on the boundary (kept)")
    return rows


def summarise_estimand(group: pd.DataFrame, confidence: float = 0.95) -> dict:
    """Mean of a per-trial estimand (Krippendorff's alpha, SHR) with its MCSE and a normal interval.

    A value, not a rate: the interval is mean +- z * MCSE with MCSE = sd / sqrt(trials) (ddof 1),
    not a Wilson interval. Trials where the estimand is undefined (status 'degenerate') are left
    out and counted in ``n_failed``; when no trial has a value the row is empty (NaN) and the note
    says why (e.g. SHR needs two or more blocks).

    Parameters
    ----------
    group : pandas.DataFrame
        The estimand's per-trial rows of one design (``estimate``, ``status``, ``message``).
    confidence : float

    Returns
    -------
    dict
        rate, ci_low, ci_high, mcse, n_tests, n_failed, note.
    """
    defined = group["status"].to_numpy() == "ok"
    values = group["estimate"].to_numpy(float)[defined]
    n_failed = int((~defined).sum())
    messages = list(dict.fromkeys(group.loc[~defined, "message"]))
    note = "mean of per-trial values; normal interval"
    if n_failed:
        note += f"; undefined in {n_failed} of {len(group)} trials: {'; '.join(messages)}"
    if values.size == 0:
        nan = float("nan")
        return {"rate": nan, "ci_low": nan, "ci_high": nan, "mcse": nan, "n_tests": len(group),
                "n_failed": n_failed, "note": f"undefined: {'; '.join(messages)}"}
    mean = float(values.mean())
    mcse = float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else float("nan")
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    return {"rate": mean, "ci_low": mean - z * mcse, "ci_high": mean + z * mcse, "mcse": mcse,
            "n_tests": len(group), "n_failed": n_failed, "note": note}


def summarise(config: SimulationConfig, table: pd.DataFrame) -> pd.DataFrame:
    """One row per design x test x estimand (docs/estimands.md).

    Parameters
    ----------
    config : SimulationConfig
        Supplies the designs, test labels, alpha and effect.
    table : pandas.DataFrame
        Per-trial rows from :meth:`ResultsStore.read_trials`.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`SUMMARY_COLUMNS`.
    """
    rows = []
    n_systems = config.model.n_systems
    for design in config.designs:
        design_rows = table[table["design"] == design.label]
        for spec in config.analyses:
            group = design_rows[design_rows["test"] == spec.label].sort_values(["trial", "pair"])
            if group.empty:
                continue
            trials = group["trial"].nunique()
            fit_seconds = group.drop_duplicates("trial")["fit_seconds"].mean()
            random_effects = ANALYSES[spec.name].random_effects
            for row in summarise_group(group, config.alpha, config.is_null, random_effects=random_effects):
                rows.append({**design.columns(), "judgements": design.judgements(n_systems), "test": spec.label,
                             **row, "trials": trials, "effect": config.effect_label, "alpha": config.alpha,
                             "mean_fit_seconds": fit_seconds})
        for name in config.estimands:
            group = design_rows[design_rows["test"] == name].sort_values("trial")
            if group.empty:
                continue
            rows.append({**design.columns(), "judgements": design.judgements(n_systems), "test": "",
                         "estimand": name, **summarise_estimand(group), "trials": group["trial"].nunique(),
                         "effect": config.effect_label, "alpha": config.alpha,
                         "mean_fit_seconds": group["fit_seconds"].mean()})
    summary = pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))
    for column in ("blocks", "docs_per_block", "annotators_per_block"):
        summary[column] = summary[column].astype("Int64")
    return summary
