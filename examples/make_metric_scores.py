"""Regenerate examples/metric_scores.csv: one simulated metric-validation study as a real-format table.

    python examples/make_metric_scores.py

The study is trial 0 of 12 systems x 30 inputs under configs/metric_validation.yaml (systems from a
normal population around the coherence model, 3 annotators per input; metric_a has a system-level
correlation of 0.8 with the latent quality, metric_b 0.6, both 0.5 at the summary level, errors
correlated 0.5; simdesign/model/metric.py), seed 2021 from the config. tests/test_metric_analysis.py
checks that the committed file is what this script writes.
"""
from pathlib import Path

from simdesign.studies.metrics.metric_validation import example_table, load_metric_config

ROOT = Path(__file__).resolve().parents[1]
CONFIG, SYSTEMS, INPUTS, TRIAL = ROOT / "configs" / "metric_validation.yaml", 12, 30, 0
OUT = ROOT / "examples" / "metric_scores.csv"


def make_table():
    """The example table as a DataFrame."""
    return example_table(load_metric_config(CONFIG), SYSTEMS, INPUTS, TRIAL)


if __name__ == "__main__":
    make_table().to_csv(OUT, index=False)
    print(f"wrote {OUT}")
