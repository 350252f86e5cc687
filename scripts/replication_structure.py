"""The original study's structure: F1, r and matching accuracy over effect sizes and tested-pair choices.

    python scripts/replication_structure.py [--jobs 2] [--trials 300] [--gaps 0.02 0.04 0.1 0.2 0.3]

Runs (resumable, under results/):

* configs/replication_effects.yaml -- the coherence model's fitted effects x 1, 0.5, 0.25 (results/
  replication-effects/effect=*), with kappa stored;
* configs/replication_structure.yaml at each gap g: reported means 4.30, 4.30 + g, 4.30 + 2g, 5.30, 3.50
  (results/replication-structure/gap=*), and at g = 0.1 with three independent criteria (criteria=3).

Each run's stored trials are read under every tested-pair choice (all system pairs, adjacent, first
against the others, and for the structured runs the three close systems' pairs) and correction (none,
Holm): the per-trial r, matching accuracy and F1 (simdesign.studies.replication.replication.replication_trials),
their means with MCSE, and the trials with F1 <= 0.29 and r >= 0.89 together (the paper's pattern; Wilson
95% interval, trial = unit). Writes figures/replication_structure.csv and .png (mean F1 against mean r,
the paper's box drawn).
"""
from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from statsmodels.stats.proportion import proportion_confint  # noqa: E402

from simdesign import api  # noqa: E402
from simdesign.core.yamlio import load_yaml  # noqa: E402
from simdesign.studies.replication.replication import ReplicationSettings, replication_trials  # noqa: E402
from simdesign.stats.montecarlo import mean_interval  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CLOSE = (("__REFERENCE__", "abssentrw"), ("abssentrw", "BART"), ("__REFERENCE__", "BART"))
F1_BAND, R_BAND = (0.25, 0.29), (0.89, 0.90)


def runs(trials: int, gaps: list[float]) -> list[tuple[str, dict, Path]]:
    """(setting label, config mapping, results directory) of every run."""
    found = []
    effects = load_yaml((ROOT / "configs" / "replication_effects.yaml").read_text())
    for effect in effects["sweep"]["effect"]:
        mapping = {key: value for key, value in effects.items() if key != "sweep"}
        mapping.update(effect=effect, trials=trials, name=f"replication-effects-{effect}")
        mapping["replication"] = dict(mapping["replication"], kappa=True)
        found.append((f"fitted effects x{effect:g}", mapping, ROOT / "results" / "replication-effects" /
                      f"effect={effect:g}-kappa"))
    structure = load_yaml((ROOT / "configs" / "replication_structure.yaml").read_text())
    for gap in gaps:
        for criteria in ([1, 3] if gap == 0.1 else [1]):
            mapping = copy.deepcopy(structure)
            mapping["trials"] = trials
            mapping["replication"]["means"] = [4.30, round(4.30 + gap, 4), round(4.30 + 2 * gap, 4), 5.30, 3.50]
            suffix = "" if criteria == 1 else f"-criteria={criteria}"
            if criteria > 1:
                mapping["replication"]["criteria"] = criteria
            mapping["name"] = f"replication-structure-gap-{gap:g}{suffix}"
            found.append((f"means, gap {gap:g}" + ("" if criteria == 1 else f", {criteria} criteria"), mapping,
                          ROOT / "results" / "replication-structure" / f"gap={gap:g}{suffix}"))
    return found


def pair_choices(structured: bool) -> dict:
    choices = {"all": "all", "adjacent": "adjacent", "first": "first"}
    if structured:
        choices["close three"] = CLOSE
    return choices


def read(result, label: str, structured: bool) -> list[dict]:
    """Rows of the table: one per (pairs, correction, test) of one run."""
    config = result.config
    design_rows = result.trials[result.trials["design"] == config.designs[0].label]
    summary = result.summary()
    kappa = summary[summary["estimand"].str.startswith("kappa_")].set_index("estimand")["rate"].to_dict()
    rows = []
    for pairs_name, pairs in pair_choices(structured).items():
        for correction in ("none", "holm"):
            settings = ReplicationSettings(config.replication.tolerance, pairs, correction,
                                           config.replication.criteria, config.replication.means, True)
            table = replication_trials(config, design_rows, settings)
            for test, group in table.groupby("test", sort=False):
                n = len(group)
                f1 = group["significance_f1"].to_numpy()
                r = group["replication_r"].to_numpy()
                defined = np.isfinite(f1)
                joint = int(np.sum((f1 <= F1_BAND[1]) & (r >= R_BAND[0])))  # NaN F1 compares False
                low, high = proportion_confint(joint, n, method="wilson")
                f1_mean, f1_mcse = (mean_interval(f1[defined])[:2] if defined.sum() > 1 else (np.nan, np.nan))
                r_mean, r_mcse = mean_interval(r[np.isfinite(r)])[:2]
                m_mean, m_mcse = mean_interval(group["matching_accuracy"].to_numpy())[:2]
                rows.append({"setting": label, "pairs": pairs_name, "correction": correction, "test": test,
                             "trials": n, "replication_r": r_mean, "r_mcse": r_mcse, "matching_accuracy": m_mean,
                             "matching_mcse": m_mcse, "significance_f1": f1_mean, "f1_mcse": f1_mcse,
                             "f1_undefined": int((~defined).sum()), "joint": joint, "joint_share": joint / n,
                             "joint_low": low, "joint_high": high,
                             "kappa_original": kappa.get("kappa_original"),
                             "kappa_replication": kappa.get("kappa_replication"),
                             "means_match_paper": bool(F1_BAND[0] <= f1_mean <= F1_BAND[1]
                                                       and R_BAND[0] <= r_mean <= R_BAND[1] + 0.005)})
    return rows


def plot(table: pd.DataFrame, out_base: Path) -> None:
    subset = table[table["correction"] == "none"]
    tests = list(dict.fromkeys(subset["test"]))
    fig, axes = plt.subplots(1, len(tests), figsize=(5 * len(tests), 6.4), sharex=True, sharey=True)
    markers = {"all": "o", "adjacent": "s", "first": "^", "close three": "D"}
    settings = list(dict.fromkeys(subset["setting"]))
    colours = plt.cm.viridis(np.linspace(0, 0.9, len(settings)))
    for ax, test in zip(np.atleast_1d(axes), tests):
        ax.add_patch(plt.Rectangle((R_BAND[0], F1_BAND[0]), R_BAND[1] - R_BAND[0], F1_BAND[1] - F1_BAND[0],
                                   color="red", alpha=0.3, label="Ito & Gatt: r 0.89-0.90, F1 0.25-0.29" if ax is np.atleast_1d(axes)[0] else None))
        for colour, setting in zip(colours, settings):
            for pairs, marker in markers.items():
                row = subset[(subset["test"] == test) & (subset["setting"] == setting) & (subset["pairs"] == pairs)]
                if row.empty or not np.isfinite(row["significance_f1"].iloc[0]):
                    continue
                ax.errorbar(row["replication_r"], row["significance_f1"], xerr=2 * row["r_mcse"],
                            yerr=2 * row["f1_mcse"], fmt=marker, color=colour, ms=5, lw=0.8,
                            label=f"{setting}, pairs {pairs}" if test == tests[0] else None)
        ax.set(title=test, xlabel="Pearson r of system scores (mean over trials)", xlim=(0, 1.02), ylim=(0, 1.02))
    np.atleast_1d(axes)[0].set_ylabel("significance F1 (mean over trials; bars: 2 MCSE)")
    fig.legend(loc="lower center", ncol=4, fontsize=6.5, frameon=False)
    fig.suptitle("Exact replications of overlap-S10-U30-A3: effect size, the original's means and tested pairs "
                 "(uncorrected)", fontsize=9)
    fig.tight_layout(rect=(0, 0.3, 1, 0.96))
    for suffix in (".png",):
        fig.savefig(out_base.with_suffix(suffix), dpi=130)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--gaps", type=float, nargs="+", default=[0.02, 0.04, 0.1, 0.2, 0.3])
    parser.add_argument("--figure", default=str(ROOT / "figures" / "replication_structure"))
    args = parser.parse_args()
    rows = []
    for label, mapping, out in runs(args.trials, args.gaps):
        started = time.perf_counter()
        result = api.simulate(mapping, out_dir=out, jobs=args.jobs, progress=False)
        print(f"{label}: {time.perf_counter() - started:.0f} s", flush=True)
        rows += read(result, label, structured="means" in label)
    table = pd.DataFrame(rows)
    base = Path(args.figure)
    table.to_csv(base.with_suffix(".csv"), index=False)
    plot(table, base)
    shown = table[table["means_match_paper"]]
    print(f"settings whose mean F1 is in 0.25-0.29 and mean r in 0.89-0.90: {len(shown)}")
    print(shown[["setting", "pairs", "correction", "test", "replication_r", "significance_f1", "joint"]].to_string())


if __name__ == "__main__":
    main()
