"""Summaries: rates with Monte-Carlo standard errors and Wilson intervals.

The trial is the independent unit (docs/estimands.md): the pairs of one
trial share annotators and documents, so their rejections are correlated and
a binomial SE over all (trial, pair) tests would be too small. Every rate is
a mean of per-trial shares; its MCSE is their standard deviation over
sqrt(trials); the 95% interval is Wilson's with the effective size
n_eff = rate (1 - rate) / MCSE^2, clipped to [trials, n_tests].
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simdesign.significance import resolve_analysis
from simdesign.significance.base import DEGENERATE, FAILURES, SINGULAR
from simdesign.studies.rates.criteria import spec_criterion
# ESTIMANDS re-exported: the summary's registry before it became every study kind's
from simdesign.core.estimands import ESTIMANDS, Estimand, estimands_of, register_estimand  # noqa: F401
from simdesign.studies.rates.method_specs import DEFAULT_METHODS, spec_method
from simdesign.methods import get_method
from simdesign.studies.replication.replication import replication_summary_rows
from simdesign.stats.reliability import krippendorff_alpha, shr
from simdesign.stats.montecarlo import mean_interval, wilson_interval  # noqa: F401  (wilson_interval: re-exported)

if TYPE_CHECKING:  # the config checks estimand names against this module's registry
    from simdesign.studies.rates.config import SimulationConfig

DESIGN_COLUMNS = ("design", "kind", "blocks", "docs_per_block", "annotators_per_block", "docs", "annotators",
                  "judgements_per_output", "judgements")
SUMMARY_COLUMNS = DESIGN_COLUMNS + ("test", "estimand", "rate", "ci_low", "ci_high", "mcse", "n_tests", "n_failed",
                                    "trials", "effect", "alpha", "mean_fit_seconds", "note")


# With a method other than Likert (simdesign.studies.rates.method_specs) the summary says which method each row is on.
SUMMARY_COLUMNS_WITH_METHOD = SUMMARY_COLUMNS[:SUMMARY_COLUMNS.index("test") + 1] + ("method",) \
    + SUMMARY_COLUMNS[SUMMARY_COLUMNS.index("test") + 1:]


def work_items(config, methods: tuple, estimands: bool) -> list:
    """The config's (test, method) or (estimand, method) work items, by result label (simulation/method_specs.py)."""
    specs = getattr(config, "work_specs", None)
    if specs is None:  # a config object from before methods existed
        specs = tuple(config.analyses) + tuple(config.estimand_specs)
    names = set(config.estimands)
    return [spec for spec in specs if (spec.name in names) == estimands]


@dataclass(frozen=True)
class Rate:
    rate: float
    ci_low: float
    ci_high: float
    mcse: float
    n_tests: int


def wilson_from_mcse(rate: float, mcse: float, trials: int, n_tests: int, confidence: float = 0.95):
    """The same as :func:`wilson_interval` (kept as the name the summary has always used)."""
    return wilson_interval(rate, mcse, trials, n_tests, confidence)


def share_rate(shares: np.ndarray):
    """Mean of per-trial shares and its trial-level MCSE (sd with ddof 1 over sqrt(trials)).

    Parameters
    ----------
    shares : ndarray, shape (trials,) or (trials, k)
        Per-trial shares; with two dimensions each column is a separate rate
        (e.g. one system pair's 0/1 rejections).

    Returns
    -------
    rate, mcse : float, or ndarray of shape (k,)
        The MCSE is NaN for a single trial.

    Notes
    -----
    From two sums rather than ``np.std``, whose per-call overhead dominated the planner's
    guarantee test (the values are shares in [0, 1], so the one-pass variance loses nothing
    that matters).
    """
    trials = len(shares)
    if np.ndim(shares) == 2:
        totals = shares.sum(axis=0).astype(float)
        rates = totals / trials
        if trials < 2:
            return rates, np.full(rates.shape, np.nan)
        squares = (shares.astype(float) ** 2).sum(axis=0)
        return rates, np.sqrt(np.maximum(squares - totals * rates, 0.0) / (trials - 1) / trials)
    total = float(np.sum(shares))
    rate = total / trials
    if trials < 2:
        return rate, float("nan")
    variance = max(float(np.dot(shares, shares)) - total * rate, 0.0) / (trials - 1)
    return rate, math.sqrt(variance / trials)


def rate_from_shares(shares: np.ndarray, n_tests: int, confidence: float = 0.95) -> Rate:
    """Rate = mean of per-trial shares (equal tests per trial), trial-level MCSE.

    Parameters
    ----------
    shares : ndarray, shape (trials,)
        Per-trial share of tests with the event (or 0/1 per trial).
    n_tests : int
        Tests behind the rate (trials x pairs).
    confidence : float, default 0.95
        Of the Wilson interval.
    """
    rate, mcse = share_rate(np.asarray(shares, dtype=float))
    low, high = wilson_interval(rate, mcse, len(shares), n_tests, confidence)
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
    low, high = wilson_interval(rate, mcse, trials, int(total))
    return Rate(rate, low, high, mcse, int(total))


@dataclass(frozen=True)
class Rejections:
    """Per-trial, per-pair rejections of one (design, test): what every rate is counted from.

    A failed test is never a rejection (docs/estimands.md); the direction of a
    rejection is judged on the latent scale.

    Attributes
    ----------
    reject, failed : ndarray of bool, shape (trials, pairs)
    estimate : ndarray, shape (trials, pairs)
    true_diff : ndarray, shape (pairs,)
    status : ndarray of str, shape (trials, pairs)
    """

    reject: np.ndarray
    failed: np.ndarray
    estimate: np.ndarray
    true_diff: np.ndarray
    status: np.ndarray

    @property
    def relevant(self) -> np.ndarray:
        """Indices of the pairs with a true difference."""
        return np.flatnonzero(self.true_diff != 0)

    def right(self) -> np.ndarray:
        """Rejections in the true direction, shape (trials, pairs with a true difference): ``power``."""
        relevant = self.relevant
        return self.reject[:, relevant] & (np.sign(self.estimate[:, relevant]) == np.sign(self.true_diff[relevant]))

    def wrong(self) -> np.ndarray:
        """Rejections against the true direction, same shape: ``type_s``."""
        relevant = self.relevant
        return self.reject[:, relevant] & (np.sign(self.estimate[:, relevant]) == -np.sign(self.true_diff[relevant]))


def rejections(group: pd.DataFrame, alpha: float) -> Rejections:
    """Rejection matrices of one (design, test) from its stored rows, sorted by trial and pair."""
    n_pairs = int(group["pair"].max()) + 1
    shape = (len(group) // n_pairs, n_pairs)
    status = group["status"].to_numpy().reshape(shape)
    failed = np.isin(status, list(FAILURES))
    reject = (group["p_value"].to_numpy().reshape(shape) < alpha) & ~failed
    return Rejections(reject=reject, failed=failed, estimate=group["estimate"].to_numpy().reshape(shape),
                      true_diff=group["true_diff"].to_numpy().reshape(shape)[0], status=status)


RATE_STUDY = "rates"  # the study kind of the per-test rates below and of the requestable per-trial values


def rates_of_a_test() -> tuple[Estimand, ...]:
    """The registered rates of a (design, test) the rate study computes from rejections, in registration order."""
    return tuple(info for info in estimands_of(RATE_STUDY) if not info.requestable)


def estimand_names(is_null: bool, random_effects: bool = True) -> tuple[str, ...]:
    """Names of the estimands the summary has under the null (``effect: zero``) or an effect."""
    return tuple(info.name for info in rates_of_a_test() if info.applies(is_null, random_effects))


def _type1(table: Rejections, group):
    trials, n_pairs = table.reject.shape
    return rate_from_shares(table.reject.mean(axis=1), trials * n_pairs), int(table.failed.sum()), ""


def _familywise(table: Rejections, group):
    trials = table.reject.shape[0]
    return (rate_from_shares(table.reject.any(axis=1).astype(float), trials), int(table.failed.sum()),
            "share of trials with at least one rejection")


def _relevant_failures(table: Rejections) -> int:
    return int(table.failed[:, table.relevant].sum())


def _power(table: Rejections, group):
    if not table.relevant.size:
        return None
    right = table.right()
    return rate_from_shares(right.mean(axis=1), right.size), _relevant_failures(table), ""


def _power_fitted(table: Rejections, group):
    if not table.relevant.size:
        return None
    usable = (~table.failed[:, table.relevant]).sum(axis=1)
    return (ratio_rate(table.right().sum(axis=1).astype(float), usable.astype(float)), _relevant_failures(table),
            "failed tests excluded")


def _type_s(table: Rejections, group):
    if not table.relevant.size:
        return None
    wrong = table.wrong()
    return (rate_from_shares(wrong.mean(axis=1), wrong.size), _relevant_failures(table),
            "rejections in the wrong direction (latent scale)")


def _failure_rate(table: Rejections, group):
    trials, n_pairs = table.failed.shape
    kinds, counts = np.unique(table.status[table.failed].astype(str), return_counts=True)
    return (rate_from_shares(table.failed.mean(axis=1), trials * n_pairs), int(table.failed.sum()),
            "; ".join(f"{kind}: {count}" for kind, count in zip(kinds, counts)))


def _singular_rate(table: Rejections, group):
    trials, n_pairs = table.failed.shape
    fit_status = group["fit_status"].to_numpy().reshape(trials, n_pairs)[:, 0]
    singular = np.array([pd.notna(status) and status == SINGULAR for status in fit_status], dtype=float)
    return rate_from_shares(singular, trials), int(table.failed.sum()), "share of fits on the boundary (kept)"


# The study kinds whose summaries hold the rates of a test (a replication and a sweep run the rate engine; a
# panel study reports type I error, power and type S of its tests on aggregated panels, panel_tests.py).
TEST_RATE_KINDS = (RATE_STUDY, "replication", "sweep")
PANEL_RATES = TEST_RATE_KINDS + ("panels",)
# Registered in the order of the summary's rows; modules that produce one name it through its entry here.
TYPE1, FAMILYWISE, POWER, POWER_FITTED, TYPE_S, FAILURE_RATE, SINGULAR_RATE = (register_estimand(_info) for _info in (
    Estimand("type1", PANEL_RATES, "rate", "type I error rate", _type1,
             "share of pairs rejected when no system differs", under="null", nominal_level=True,
             roles=("null_rate",)),
    Estimand("familywise", TEST_RATE_KINDS, "rate", "family-wise error", _familywise,
             "share of trials with at least one false rejection", under="null", nominal_level=True),
    Estimand("power", PANEL_RATES, "rate", "power (right direction)", _power,
             "share of truly different pairs rejected in the right direction; failures count as non-rejections",
             under="effect", roles=("effect_rate",)),
    Estimand("power_fitted", TEST_RATE_KINDS, "rate", "power (failed fits excluded)", _power_fitted,
             "power among the tests that did not fail", under="effect"),
    Estimand("type_s", PANEL_RATES, "rate", "type S rate", _type_s,
             "share of truly different pairs rejected in the wrong direction", under="effect"),
    Estimand("failure_rate", TEST_RATE_KINDS, "rate", "failure rate", _failure_rate,
             "share of tests that failed (no p-value)", roles=("failure_share",)),
    Estimand("singular_rate", TEST_RATE_KINDS, "rate", "singular fit rate", _singular_rate,
             "share of mixed-model fits on the boundary", random_effects_only=True),
))


def summarise_group(group: pd.DataFrame, alpha: float, is_null: bool, random_effects: bool = False) -> list[dict]:
    """Estimand rows for one (design, test); ``group`` sorted by trial, pair.

    Every registered rate of a test (:func:`rates_of_a_test`) that applies under the
    hypothesis; ``random_effects`` (the registry's
    :attr:`AnalysisInfo.random_effects`) adds ``singular_rate``: only a mixed
    model can have a boundary fit.
    """
    table = rejections(group, alpha)
    rows = []
    for info in rates_of_a_test():
        if not info.applies(is_null, random_effects):
            continue
        computed = info.compute(table, group)
        if computed is None:
            continue
        rate, failures, note = computed
        if info.name not in (FAILURE_RATE.name, SINGULAR_RATE.name):  # those two say what failed in their own words
            note = "; ".join(part for part in (failure_note(table, info.under == "effect"), note) if part)
        rows.append({"estimand": info.name, "rate": rate.rate, "ci_low": rate.ci_low, "ci_high": rate.ci_high,
                     "mcse": rate.mcse, "n_tests": rate.n_tests, "n_failed": failures, "note": note})
    return rows


# How a rate row's note begins when no test behind it has a p-value: the rate is then 0 by construction (a
# failed test is never a rejection), not an estimate, and the tables and figures say so (failure_state).
EVERY_DEGENERATE = "every test degenerate"
EVERY_FAILED = "every test failed"


def failure_note(table: Rejections, relevant_only: bool) -> str:
    """What failed among the tests a rate counts ('' if none): the failure kinds, and whether every test failed.

    ``relevant_only``: the rate counts the pairs with a true difference only (power, type S).
    """
    failed, status = table.failed, table.status
    if relevant_only:
        failed, status = failed[:, table.relevant], status[:, table.relevant]
    if not failed.any():
        return ""
    kinds, counts = np.unique(status[failed].astype(str), return_counts=True)
    why = ", ".join(f"{kind}: {count}" for kind, count in zip(kinds, counts))
    if failed.all() and list(kinds) == [DEGENERATE]:
        return (f"{EVERY_DEGENERATE} ({failed.size} tests): the test is undefined for this design (e.g. a block-level test with "
                "one block), so the rate is not an estimate")
    if failed.all():
        return f"{EVERY_FAILED} ({why}): no p-value, so the rate is not an estimate"
    return f"{int(failed.sum())} of {failed.size} tests failed ({why}; no p-value)"


def failure_state(rows: pd.DataFrame) -> pd.Series:
    """Per summary row: 'degenerate' or 'failed' (every test behind its rate), 'partial' (some), or ''.

    Rows without a test (a per-trial reliability estimand: its n_failed counts undefined trials) and the
    failure and singular-fit rates are ''.
    """
    def column(name, default):
        return rows[name] if name in rows else pd.Series(default, index=rows.index)

    notes = column("note", "").fillna("").astype(str)
    has_test = column("test", "").fillna("").astype(str) != ""
    # the failure and singular-fit rates count failures themselves: nothing to mark there
    counted = has_test & ~column("estimand", "").isin([FAILURE_RATE.name, SINGULAR_RATE.name])
    failed = counted & (pd.to_numeric(column("n_failed", 0), errors="coerce").fillna(0) > 0)
    state = pd.Series(np.where(failed, "partial", ""), index=rows.index)
    state[notes.str.startswith(EVERY_FAILED)] = "failed"
    state[notes.str.startswith(EVERY_DEGENERATE)] = "degenerate"
    return state


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
    mean, mcse, low, high = mean_interval(values, confidence)
    return {"rate": mean, "ci_low": low, "ci_high": high, "mcse": mcse,
            "n_tests": len(group), "n_failed": n_failed, "note": note}


# Per-trial values a config requests in its 'estimands' list (docs/reliability.md): each trial's value from its
# judgements (and its own random stream: SHR draws random splits), summarised as a mean with its MCSE.
for _info in (
    Estimand("krippendorff_alpha", (RATE_STUDY, "sweep"), "value", "Krippendorff's alpha (ordinal)",
             summarise_estimand, "Krippendorff's alpha (ordinal) of each trial's judgements",
             per_trial=lambda judgements, rng: krippendorff_alpha(judgements)),  # no random numbers
    Estimand("shr", (RATE_STUDY, "sweep"), "value", "split-half reliability", summarise_estimand,
             "split-half reliability of the system means over blocks", per_trial=shr),
):
    register_estimand(_info)


def _items(spec, judgements, n_systems: int, design, model) -> float:
    """What annotators see in one study under the spec's method (outputs, rankings, comparisons)."""
    return get_method(spec_method(spec)).items(judgements, n_systems, design, model)


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

    Examples
    --------
    >>> result = simdesign.simulate("configs/quick.yaml", trials=20)        # doctest: +SKIP
    >>> summarise(result.config, result.trials)                              # doctest: +SKIP
    """
    rows = []
    n_systems = config.model.n_systems
    methods = tuple(getattr(config, "methods", DEFAULT_METHODS))
    for design in config.designs:
        design_rows = table[table["design"] == design.label]
        # the expected count under partial coverage (every design kind takes the model's systems)
        judgements = design.judgements(n_systems, config.model.systems)
        for spec in work_items(config, methods, estimands=False):
            group = design_rows[design_rows["test"] == spec.label].sort_values(["trial", "pair"])
            if group.empty:
                continue
            trials = group["trial"].nunique()
            fit_seconds = group.drop_duplicates("trial")["fit_seconds"].mean()
            random_effects = resolve_analysis(spec.name).random_effects
            for row in summarise_group(group, config.alpha, config.is_null, random_effects=random_effects):
                rows.append({**design.columns(), "judgements": judgements,
                             "items": _items(spec, judgements, n_systems, design, config.model),
                             "test": getattr(spec, "test_label", spec.label), "method": spec_method(spec),
                             "criterion": spec_criterion(spec),
                             **row, "trials": trials, "effect": config.effect_label, "alpha": config.alpha,
                             "mean_fit_seconds": fit_seconds})
        for spec in work_items(config, methods, estimands=True):
            group = design_rows[design_rows["test"] == spec.label].sort_values("trial")
            if group.empty:
                continue
            rows.append({**design.columns(), "judgements": judgements,
                         "items": _items(spec, judgements, n_systems, design, config.model), "test": "",
                         "method": spec_method(spec), "criterion": spec_criterion(spec),
                         "estimand": spec.name, **ESTIMANDS[spec.name].summarise(group), "trials": group["trial"].nunique(),
                         "effect": config.effect_label, "alpha": config.alpha,
                         "mean_fit_seconds": group["fit_seconds"].mean()})
        rows += [{**design.columns(), "judgements": judgements, **row, "effect": config.effect_label,
                  "alpha": config.alpha} for row in replication_summary_rows(config, design_rows)]
    # The method column only where a config names a method other than Likert: Likert summaries keep their form.
    columns = list(SUMMARY_COLUMNS) if methods == DEFAULT_METHODS else list(SUMMARY_COLUMNS_WITH_METHOD)
    if getattr(config, "criteria", ()):  # the criterion column only where a config lists criteria
        columns.insert(columns.index("test") + 1, "criterion")
    if any(get_method(m).covers == "pair" for m in methods):
        # 'items' counts what an annotator sees (an output, a ranking, a comparison: AnnotationMethod.items), which
        # the cost counts; 'judgements' keeps counting outputs. Only beside a method whose judgement covers a pair,
        # so that Likert and Rank summaries keep their form.
        columns.insert(columns.index("judgements") + 1, "items")
    summary = pd.DataFrame(rows, columns=columns)
    for column in ("blocks", "docs_per_block", "annotators_per_block"):
        summary[column] = summary[column].astype("Int64")
    return summary


SIZE_ADJUSTED_RESAMPLES = 1000
SIZE_ADJUSTED_NOTE = ("power at the critical p-value of the test's own null run: p < {critical:.4g}, the null run's "
                      "{alpha:g}-quantile (null rate there {achieved:.4f}); 95% percentile bootstrap over trials")


def _p_matrix(group: pd.DataFrame) -> tuple[np.ndarray, Rejections]:
    """(trials, pairs) p-values with failed tests at +inf (never a rejection), and the group's rejections."""
    table = rejections(group, 0.0)
    p_value = group["p_value"].to_numpy(float).reshape(table.reject.shape)
    return np.where(table.failed | ~np.isfinite(p_value), np.inf, p_value), table


def size_adjusted_power(null_group: pd.DataFrame, effect_group: pd.DataFrame, alpha: float,
                        rng: np.random.Generator, resamples: int = SIZE_ADJUSTED_RESAMPLES,
                        confidence: float = 0.95) -> dict | None:
    """Power of a test at the critical value that gives it level ``alpha`` in its own null run.

    A liberal test's raw power is inflated and a conservative test's deflated by its wrong size; the
    size-adjusted power compares tests at the same true level. The critical p-value is c = the
    (floor(alpha N) + 1)-th smallest of the null run's N p-values (all trials and pairs; failed tests count
    as p = +inf), and a test rejects when p < c, so its null rate is at most alpha (below it where p-values
    tie at c: the note gives the rate reached). Power counts right-direction rejections among the truly
    different pairs, failures as non-rejections, as ``power`` does.

    Parameters
    ----------
    null_group, effect_group : pandas.DataFrame
        The stored rows of one (design, test) in the null run and in the effect run, sorted by trial, pair.
    alpha : float
    rng : numpy.random.Generator
        For the interval: trials are resampled (the trial is the unit), jointly in both runs when they
        hold the same trials (common random numbers), and c is recomputed in every resample.
    resamples : int
    confidence : float

    Returns
    -------
    dict or None
        rate, ci_low, ci_high, mcse (the bootstrap sd), n_tests, n_failed, note, critical_p; None
        without truly different pairs.
    """
    null_p, _ = _p_matrix(null_group)
    effect_p, table = _p_matrix(effect_group)
    relevant = table.relevant
    if not relevant.size:
        return None
    right_direction = np.sign(table.estimate[:, relevant]) == np.sign(table.true_diff[relevant])
    effect_p = np.where(right_direction, effect_p[:, relevant], np.inf)
    rank = int(np.floor(alpha * null_p.size))

    def estimate(null_rows: np.ndarray, effect_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pooled = null_p[null_rows].reshape(len(null_rows), -1)
        critical = np.partition(pooled, rank, axis=1)[:, rank]
        return critical, (effect_p[effect_rows] < critical[:, None, None]).mean(axis=(1, 2))

    critical, rate = estimate(np.arange(len(null_p))[None], np.arange(len(effect_p))[None])
    same_trials = np.array_equal(null_group["trial"].unique(), effect_group["trial"].unique())
    rates = []
    for start in range(0, resamples, 100):  # batches keep the resampled p-values at a few tens of MB
        size = min(100, resamples - start)
        null_rows = rng.integers(0, len(null_p), size=(size, len(null_p)))
        effect_rows = null_rows if same_trials else rng.integers(0, len(effect_p), size=(size, len(effect_p)))
        rates.append(estimate(null_rows, effect_rows)[1])
    rates = np.concatenate(rates)
    tail = (1 - confidence) / 2
    achieved = float((null_p < critical[0]).mean())
    return {"rate": float(rate[0]), "ci_low": float(np.quantile(rates, tail)),
            "ci_high": float(np.quantile(rates, 1 - tail)), "mcse": float(rates.std(ddof=1)),
            "n_tests": int(effect_p.size), "n_failed": int(table.failed[:, relevant].sum()),
            "critical_p": float(critical[0]),
            "note": SIZE_ADJUSTED_NOTE.format(critical=float(critical[0]), alpha=alpha, achieved=achieved)}
