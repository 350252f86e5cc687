"""Judge plans: how many human judgements (and which outputs) a study still needs beside an LLM judge.

A plan config with a ``judge_plan`` mapping (``simdesign plan``, :func:`simdesign.plan`;
``configs/plan_judge.yaml``) is an ordinary plan (model, effect, ``target_power`` or ``budget``, the human cost
model, ``search`` over human designs, trials and confidence) plus the judge:

.. code-block:: yaml

    judge_plan:
      judge: {preset: unbiased, correlation: 0.7, cost_per_call: 0.002}   # or judges: [...]
      documents: 1000            # outputs the judge scores (every system's on each document)
      select: [random, least_certain]   # which outputs go to humans (simdesign.studies.judge.judge_study)
      targets: all               # the pairs whose difference is to be detected ('a - b' names, or all)
      bootstrap_resamples: 100
      interval: clustered        # clustered (two-way bootstrap) | clustered_t (few-clusters corrections)

The plan is decided several times by the planner's own procedure (:func:`~simdesign.planning.plan_search.
decide_plan`: adaptive search, then confirmation on fresh trials), once per *variant*: ``humans only`` (the
human-only estimator) and, for each ``select``, ``judge + <select>`` (PPI++; with ``least_certain``, the
inverse-probability-weighted PPI++ in its Hajek form, :mod:`simdesign.stats.judge_ipw`). A candidate's power is the share of (trial, target pair) with a right
rejection (p < alpha, the sign of the true difference) of the variant's estimator with the chosen interval, on
studies of the judge-plus-human study kind (:func:`simdesign.studies.judge.judge_study.trial_rows`, the same trial
for the same design, seed and selection: humans-only and judge + random read the same studies). So each
variant carries the planner's guarantee: P(recommending a design whose true power is below the target) <=
(1 - confidence) / 2, whatever the number of candidates (tests/test_judge_plan.py checks it on the decision
procedure with events at known rates).

The human cost is the plan's cost model of the human design (expected judgements: with ``least_certain`` the
number of documents sent is random with the design's documents as its mean); the judge's cost is
``cost_per_call`` x documents x systems x judges, the same for every human design, added to each judge
variant (a budget goal leaves the judge variants the budget less the judge's cost). The recommendation states
the saving of the cheapest judge variant against humans only, both at the target power, and says when the
judge adds nothing (no cheaper human design; PPI++ gives the judge little weight: low correlation) or when the
human part alone decides (the judge is weighted, but the interval is set by the human annotators' clustering,
which no judge reduces). Type I checks (``max_type1``) are not part of a judge plan: leave it out.

Per-trial values are stored in ``OUT/judge_outcomes`` (one file per selection and design, keyed by the
study's settings), so a re-run resumes.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.core.suggest import suggestions
from simdesign.planning.plan_search import OutcomeSource, PlanResult, decide_plan
from simdesign.planning.planner import PlanConfig, parse_plan
from simdesign.runner.stores import Store, StoreFormat
from simdesign.significance import ANALYSES
from simdesign.methods import get_method
from simdesign.methods.pairwise import PAIRWISE
from simdesign.model.judge import JUDGE_PRESETS, PAIRWISE_SCALE
from simdesign.studies.judge.judge_study import (SELECTIONS, JudgeStudyConfig, is_pair_target, null_value,
                                                 parse_judge_study, trial_rows)

PLAN_JUDGE_KEYS = ("judge", "judges", "error_correlation", "documents", "select", "targets", "bootstrap_resamples",
                   "interval", "floor")
INTERVALS = ("clustered", "clustered_t")
HUMANS_ONLY = "humans only"
OUTCOMES_DIR = "judge_outcomes"
KEPT = ("trial", "target", "estimator", "interval", "estimate", "low", "high", "p_value", "lam", "truth")
OUTCOMES_VERSION = 2  # what a least-certain trial holds (2: with the Hajek IPW rows): part of its files' key
PLACEHOLDER_TEST = "ttest_doc"  # the planner's candidates are (design, test); a judge plan's test is its estimator


@dataclass(frozen=True)
class JudgePlan:
    """A judge plan: the planner's config per variant, the judge study per selection, and the targets."""

    plans: dict          # variant -> PlanConfig
    studies: dict        # select -> JudgeStudyConfig (every candidate design a cell)
    targets: tuple       # pair names
    interval: str
    judge_cost: float
    raw: dict

    @property
    def plan(self) -> PlanConfig:
        return self.plans[HUMANS_ONLY]

    @property
    def pairwise(self) -> bool:
        """Whether the judges and humans give pairwise verdicts (the targets are win rates 'a vs b')."""
        return self.studies["random"].pairwise

    def variants(self) -> list[str]:
        return list(self.plans)

    def __repr__(self) -> str:
        return f"<JudgePlan {self.plan.name!r}: variants {self.variants()}, targets {list(self.targets)}>"


def is_judge_plan(raw) -> bool:
    return isinstance(raw, dict) and "judge_plan" in raw


def variant_estimator(variant: str) -> str:
    if variant == HUMANS_ONLY:
        return "human_only"
    return "hajek_ppi++" if variant.endswith("least_certain") else "ppi++"


def variant_select(variant: str) -> str:
    return "random" if variant == HUMANS_ONLY else variant.split("+ ")[1]


def _section(raw: dict, errors: list[str]) -> dict:
    section = raw.get("judge_plan")
    if not isinstance(section, dict):
        raise ConfigError(f"The 'judge_plan' field must be a mapping with keys {list(PLAN_JUDGE_KEYS)}; got "
                          f"{section!r}")
    unknown = sorted(set(section) - set(PLAN_JUDGE_KEYS))
    if unknown:
        errors.append(f"Unknown 'judge_plan' key(s) {unknown}; allowed: {list(PLAN_JUDGE_KEYS)}"
                      f"{suggestions(unknown, PLAN_JUDGE_KEYS)}")
    if "tests" in raw:
        errors.append("A judge plan's tests are its estimators (human-only, PPI++, IPW PPI++ with the 'interval'): "
                      "leave out 'tests'")
    if raw.get("max_type1") is not None:
        errors.append("A judge plan checks no type I error: leave out 'max_type1' (or give null)")
    selects = section.get("select", ["random"])
    selects = [selects] if isinstance(selects, str) else selects
    if not isinstance(selects, list) or not selects or any(s not in SELECTIONS for s in selects):
        errors.append(f"The 'judge_plan.select' field must be a list from {list(SELECTIONS)}; got {selects!r}")
    if section.get("interval", "clustered") not in INTERVALS:
        errors.append(f"The 'judge_plan.interval' field must be one of {list(INTERVALS)}; got "
                      f"{section.get('interval')!r}")
    return section


def _study(raw: dict, section: dict, plan: PlanConfig, select: str, base_dir) -> JudgeStudyConfig:
    designs = [{"kind": d.kind, **{f: getattr(d, f) for f in d.fields}} for d in plan.designs]
    mapping = {"study": "judge", "name": plan.name, "model": raw["model"], "effect": float(plan.effect),
               "select": select, "designs": designs, "alpha": plan.alpha, "seed": plan.seed,
               **{key: section[key] for key in ("judge", "judges", "error_correlation", "documents",
                                                 "bootstrap_resamples", "floor") if key in section}}
    return parse_judge_study(mapping, base_dir)


def parse_judge_plan(raw: dict, base_dir: Path | None = None) -> JudgePlan:
    """Validate a judge plan mapping (module docstring); every problem at once in one ConfigError."""
    errors: list[str] = []
    section = _section(raw, errors)
    plan_raw = {key: value for key, value in raw.items() if key not in ("judge_plan", "max_type1")}
    plan_raw.update({"tests": [PLACEHOLDER_TEST], "max_type1": None})
    if _judges_pairwise(section):  # humans give pairwise verdicts: the plan prices comparisons
        search = plan_raw.get("search")
        plan_raw.update({"tests": [_placeholder_test(PAIRWISE)],
                         "search": {**search, "methods": [PAIRWISE.name]} if isinstance(search, dict) else search})
    plan = None
    try:
        plan = parse_plan(plan_raw, base_dir)
    except ConfigError as exc:
        errors.extend(exc.messages)
    if errors:
        raise ConfigError(list(dict.fromkeys(errors)))
    selects = section.get("select", ["random"])
    selects = [selects] if isinstance(selects, str) else list(selects)
    studies = {}
    for select in dict.fromkeys(["random"] + selects):
        try:
            studies[select] = _study(raw, section, plan, select, base_dir)
        except ConfigError as exc:
            errors.extend(exc.messages)
    if errors:
        raise ConfigError(list(dict.fromkeys(errors)))
    panel = studies["random"].panel
    n_systems = plan.model.n_systems
    calls_per_document = n_systems * (n_systems - 1) // 2 if panel.pairwise else n_systems  # pairs, or outputs
    judge_cost = sum(j.cost_per_call for j in panel.judges) * studies["random"].documents * calls_per_document
    plans = {HUMANS_ONLY: plan}
    for select in selects:
        reduced = plan if plan.budget is None else parse_plan({**plan_raw, "budget": plan.budget - judge_cost},
                                                              base_dir)
        plans[f"judge + {select}"] = reduced
    targets = _targets(section.get("targets", "all"), studies["random"])
    plans = {variant: dataclasses.replace(each, target_labels=targets) for variant, each in plans.items()}
    return JudgePlan(plans, studies, targets, section.get("interval", "clustered"), float(judge_cost), dict(raw))


def _judges_pairwise(section: dict) -> bool:
    """Whether the plan's judges give pairwise verdicts (read from the raw section: the plan's model, which the
    judges need, is parsed after the plan's methods are set)."""
    items = section.get("judges", [section.get("judge", "unbiased")])
    items = items if isinstance(items, list) else []
    specs = [{"preset": item} if isinstance(item, str) else item for item in items]
    return any(isinstance(spec, dict) and (spec.get("scale") == PAIRWISE_SCALE or JUDGE_PRESETS.get(
        spec.get("preset"), {}).get("scale") == PAIRWISE_SCALE and "scale" not in spec) for spec in specs)


def _placeholder_test(method) -> str:
    """A test the method takes (the planner's candidates are (design, test); a judge plan's test is its estimator
    and this one is never run)."""
    return sorted(name for name, info in ANALYSES.items() if get_method(method).accepts(info))[0]


def _targets(value, study: JudgeStudyConfig) -> tuple:
    truth = study.truth()
    pairs = [name for name in truth if is_pair_target(name)]
    chosen = pairs if value == "all" else ([value] if isinstance(value, str) else value)
    unknown = [name for name in chosen if name not in pairs] if isinstance(chosen, list) else [chosen]
    if unknown:
        form = "'a vs b' (pairwise judges: a's win rate over b)" if study.pairwise else "'a - b'"
        raise ConfigError(f"The 'judge_plan.targets' field must be 'all' or pair names {form} of the model's "
                          f"systems in their order; got {unknown}{suggestions([str(u) for u in unknown], pairs)}")
    differing = tuple(name for name in chosen if abs(truth[name] - null_value(name)) > 1e-9)
    if not differing:
        raise ConfigError("No target pair has a true difference at the plan's effect: there is no power to plan for")
    return differing


# ---------------------------------------------------------------------------------------------------------------
# Outcomes: the judge study's trials, stored per selection and design
# A selection's trials in the one store class: OUT/judge_outcomes/<select>, a cell per design (label).
JUDGE_OUTCOME_CHUNKS = StoreFormat(kind="judge-outcomes", folders=("trials",), columns=KEPT)


class _TrialFiles:
    """Per (select, design label) the kept rows of every computed trial: a
    :class:`~simdesign.runner.stores.Store` per selection in ``OUT/judge_outcomes/<select>`` (its cells the design
    labels), fingerprinted by the judge study and model, claimed until :meth:`release`; every chunk is written
    atomically as it is computed, so a killed plan resumes. Outcome files of earlier versions
    (``<select>/<design>-<key>.parquet``) are not read: their trials are computed again, with the same numbers.
    """

    def __init__(self, out_dir: Path, config: JudgePlan):
        self.directory = Path(out_dir) / OUTCOMES_DIR
        self.config = config
        self.stores: dict = {}
        self.frames: dict = {}

    def _store(self, select: str) -> Store:
        if select not in self.stores:
            study = self.config.studies[select]
            fingerprint = {"judge_study": study.raw | {"designs": None, "name": None}, "model": study.model.to_dict(),
                           **({"version": OUTCOMES_VERSION} if select == "least_certain" else {})}
            store = Store(self.directory / select, JUDGE_OUTCOME_CHUNKS)
            store.prepare(JUDGE_OUTCOME_CHUNKS.kind, fingerprint, None)
            self.stores[select] = store
        return self.stores[select]

    def get(self, select: str, label: str) -> pd.DataFrame:
        if (select, label) not in self.frames:
            self.frames[select, label] = self._store(select).read([label])[list(KEPT)]
        return self.frames[select, label]

    def add(self, select: str, label: str, rows: pd.DataFrame) -> None:
        """Store the rows of newly computed trials (a chunk per run of consecutive trials)."""
        rows, store = rows[list(KEPT)], self._store(select)
        trials = np.unique(rows["trial"].to_numpy(int))
        for run in np.split(trials, np.where(np.diff(trials) != 1)[0] + 1):
            first, stop = int(run[0]), int(run[-1]) + 1
            store.write_chunk(label, first, stop, rows[(rows["trial"] >= first) & (rows["trial"] < stop)]
                              .reset_index(drop=True))
        self.frames[select, label] = pd.concat([self.get(select, label), rows], ignore_index=True)

    def release(self) -> None:
        for store in self.stores.values():
            store.release()


class JudgeOutcomes(OutcomeSource):
    """The planner's outcome source for one variant of a judge plan (module docstring).

    ``power`` gives, per candidate and trial, a right rejection of each target pair by the variant's estimator;
    trials come from the judge study kind's :func:`~simdesign.studies.judge.judge_study.trial_rows`, computed here
    one after another (each a fraction of a second) and stored.
    """

    def __init__(self, config: JudgePlan, variant: str, files: _TrialFiles):
        self.config, self.variant, self.files = config, variant, files
        self.select, self.estimator = variant_select(variant), variant_estimator(variant)
        self.study = config.studies[self.select]
        self.new_studies = 0

    def rows(self, label: str, first: int, stop: int) -> pd.DataFrame:
        """The stored rows of trials first..stop-1 of a design (computing those missing)."""
        have = self.files.get(self.select, label)
        done = set(have["trial"].astype(int)) if len(have) else set()
        missing = [t for t in range(first, stop) if t not in done]
        if missing:
            computed = []
            for trial in missing:
                part = trial_rows(self.study, label, trial)
                computed.append(part.assign(trial=trial))
            self.files.add(self.select, label, pd.concat(computed, ignore_index=True))
            self.new_studies += len(missing)
        table = self.files.get(self.select, label)
        return table[(table["trial"] >= first) & (table["trial"] < stop)]

    def events(self, label: str, first: int, stop: int) -> np.ndarray:
        """(trials, targets) right rejections of the variant's estimator with the plan's interval."""
        rows = self.rows(label, first, stop)
        chosen = rows[(rows["estimator"] == self.estimator) & (rows["interval"] == self.config.interval)
                      & rows["target"].isin(self.config.targets)]
        null = chosen["target"].map(null_value)
        right = (chosen["p_value"] < self.config.plan.alpha) & (np.sign(chosen["estimate"] - null)
                                                                == np.sign(chosen["truth"] - null))
        table = chosen.assign(right=right.astype(bool)).pivot_table(index="trial", columns="target", values="right",
                                                                    aggfunc="first")
        table = table.reindex(index=range(first, stop), columns=list(self.config.targets))
        return table.fillna(False).to_numpy(bool)

    def power(self, wanted: dict) -> dict:
        return {key: self.events(key[0], first, stop) for key, (first, stop) in wanted.items()}

    def null(self, wanted: dict) -> dict:
        raise ConfigError("A judge plan checks no type I error (max_type1 must be left out)")

    def flush(self) -> None:
        """Nothing to do: every computed trial was stored as it was computed (:meth:`_TrialFiles.add`)."""


@dataclass
class JudgePlanResult:
    """Each variant's :class:`~simdesign.planning.plan_search.PlanResult`, and the plan."""

    config: JudgePlan
    results: dict
    files: object = dataclasses.field(default=None, repr=False)

    @property
    def recommended(self):
        """The humans-only recommendation (the judge variants' are in :attr:`results`)."""
        return self.results[HUMANS_ONLY].recommended


def run_judge_plan(config: JudgePlan, out_dir: Path, progress: bool = False) -> JudgePlanResult:
    """Decide every variant of a judge plan by the planner's procedure (module docstring); resumable."""
    files = _TrialFiles(Path(out_dir), config)
    results = {}
    try:
        for variant, plan in config.plans.items():
            _decide_variant(config, variant, plan, files, results, progress)
    finally:
        files.release()
    return JudgePlanResult(config, results, files)


def _decide_variant(config: JudgePlan, variant: str, plan, files: _TrialFiles, results: dict, progress: bool) -> None:
    outcomes = JudgeOutcomes(config, variant, files)
    # the planner's own progress lines would name its placeholder test: one line per variant instead
    results[variant] = decide_plan(plan, outcomes, progress=False)
    if progress:
        pick = results[variant].recommended
        print(f"{variant}: {outcomes.new_studies} studies simulated; "
              f"{'nothing recommended' if pick is None else 'recommended ' + pick.candidate.design.label}",
              flush=True)


# ---------------------------------------------------------------------------------------------------------------
# Report
def judge_plan_table(result: JudgePlanResult) -> pd.DataFrame:
    """Every variant's ranked candidates (the planner's table) with its estimator, the judge's cost and the total."""
    from simdesign.planning.plan_report import plan_table

    frames = []
    for variant, plan_result in result.results.items():
        table = plan_table(plan_result).drop(columns=["test"], errors="ignore")
        judge_cost = 0.0 if variant == HUMANS_ONLY else result.config.judge_cost
        table.insert(0, "variant", variant)
        table.insert(1, "estimator", variant_estimator(variant))
        table.insert(table.columns.get_loc("cost") + 1, "judge_cost", judge_cost)
        table.insert(table.columns.get_loc("judge_cost") + 1, "total_cost", table["cost"] + judge_cost)
        frames.append(table)
    return pd.concat(frames, ignore_index=True)


def _usefulness(result: JudgePlanResult, variant: str, label: str) -> tuple[float, float]:
    """(mean PPI++ weight, mean interval width with the judge / humans only) over a design's stored trials."""
    config = result.config
    rows = result.files.get(variant_select(variant), label)
    rows = rows[rows["target"].isin(config.targets) & (rows["interval"] == config.interval)]
    width = (rows["high"] - rows["low"]).groupby(rows["estimator"]).mean()
    lam = rows.loc[rows["estimator"] == variant_estimator(variant), "lam"].mean()
    ratio = width.get(variant_estimator(variant), np.nan) / width.get("human_only", np.nan)
    return float(lam), float(ratio)


def _pick_line(variant: str, recommended, judge_cost: float, plan) -> str:
    currency, n_systems = plan.cost.currency, plan.model.n_systems
    if recommended is None:
        return f"- {variant}: no design reached the goal among the candidates."
    design, cost = recommended.candidate.design, recommended.candidate.total_cost
    money = f"{currency} " if currency else ""
    extra = f" + judge {money}{judge_cost:,.2f} = {money}{cost + judge_cost:,.2f}" if variant != HUMANS_ONLY else ""
    cost_model = plan.method_costs.get(recommended.candidate.method, plan.cost)
    judged = f"{design.judgements(n_systems):,.0f} human judgements"
    if cost_model.count_items is not None:  # pairwise: what is paid for is comparisons
        judged = f"{cost_model.units(design, n_systems):,.0f} human {cost_model.item_name}s"
    return (f"- {variant} ({variant_estimator(variant)}): {design.describe()}, {judged}, humans "
            f"{money}{cost:,.2f}{extra}; "
            f"power {recommended.power:.3f} (confirmed on fresh trials: {recommended.confirm_power:.3f})")


def judge_recommendation(result: JudgePlanResult) -> str:
    """The recommendation in words: each variant's pick, the saving at equal power, and when the judge adds nothing."""
    config, plan = result.config, result.config.plan
    currency = plan.cost.currency
    goal = (f"at least {plan.target_power:.0%} power" if plan.goal == "target_power"
            else f"the most power within a budget of {plan.budget:,.2f}")
    lines = [f"# {plan.name}: human judgements needed beside an LLM judge",
             f"Goal: {goal} for the pairs {', '.join(config.targets)} (right rejections at alpha {plan.alpha}, the "
             f"{config.interval} interval), {plan.confidence:.0%} confidence in each recommendation.",
             f"The judge {'compares every pair of systems on' if config.pairwise else 'scores'} "
             f"{config.studies['random'].documents:,} documents{'' if config.pairwise else chr(39) + ' outputs'} for "
             f"{currency + ' ' if currency else ''}{config.judge_cost:,.2f}; "
             + "; ".join(f"{j.name}: {j.assumes}" for j in config.studies['random'].panel.judges) + ".", ""]
    picks = {variant: r.recommended for variant, r in result.results.items()}
    lines += [_pick_line(variant, pick, config.judge_cost, result.config.plans[variant])
              for variant, pick in picks.items()]
    lines += ["", _saving_text(result, picks)]
    return "\n".join(lines) + "\n"


def _saving_text(result: JudgePlanResult, picks: dict) -> str:
    config, plan = result.config, result.config.plan
    human = picks[HUMANS_ONLY]
    judged = {v: p for v, p in picks.items() if v != HUMANS_ONLY and p is not None}
    if not judged:
        return "No judge variant reached the goal among the candidates."
    best_variant = min(judged, key=lambda v: judged[v].candidate.total_cost)
    best = judged[best_variant]
    lam, ratio = _usefulness(result, best_variant, best.candidate.design.label)
    weights = (f"At {best.candidate.design.label}, PPI++ gave the judge a mean weight of {lam:.2f} and its intervals "
               f"were {ratio:.0%} as wide as the humans-only ones.")
    if plan.goal != "target_power" or human is None:
        return weights
    total = best.candidate.total_cost + config.judge_cost
    saving = human.candidate.total_cost - total
    if saving > 0 and best.candidate.total_cost < human.candidate.total_cost:
        return (f"Saving at equal power (both reach the target): {saving:,.2f} ({saving / human.candidate.total_cost:.0%}"
                f") with {best_variant} against humans only. " + weights)
    reason = (f"the judge's correlation with the human scores is too low for it to count (PPI++ weight {lam:.2f})"
              if lam < 0.2 else
              "the human part alone decides: the judge is weighted, but the annotators' clustering, which no judge "
              "reduces, sets the interval")
    return (f"The judge adds nothing here: no judge variant needs a cheaper human design than humans only "
            f"({'it costs ' + format(-saving, ',.2f') + ' more with the judge' if saving < 0 else 'no saving'}); "
            f"{reason}. " + weights)


def plot_judge_plan(table: pd.DataFrame, out_base: Path) -> list[Path]:
    """Total cost against power for every simulated candidate of every variant."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 5))
    axis = figure.subplots()
    for variant, group in table[table["trials"] > 0].groupby("variant", sort=False):
        group = group.sort_values("total_cost")
        axis.errorbar(group["total_cost"], group["power"], yerr=np.clip(
            [group["power"] - group["ci_low"], group["ci_high"] - group["power"]], 0, None), fmt="o-", ms=4,
            capsize=2, label=variant)
    axis.set_xlabel("total cost (human judgements + judge calls)")
    axis.set_ylabel("power (interval at the last look)")
    axis.legend(fontsize=8)
    figure.tight_layout()
    path = Path(out_base).with_suffix(".png")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    return [path]


def write_judge_plan(result: JudgePlanResult, out_dir: Path, figure: Path | None = None) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = judge_plan_table(result)
    table.to_csv(out_dir / "plan.csv", index=False)
    (out_dir / "recommendation.md").write_text(judge_recommendation(result))
    figures = plot_judge_plan(table, figure or out_dir / result.config.plan.name)
    return {"table": out_dir / "plan.csv", "recommendation": out_dir / "recommendation.md", "figures": figures}
