"""A study kind defined outside simdesign, as a user would write one (used by tests/test_study_kinds.py).

Coin flips: each trial of a cell (a coin with bias ``p``) flips it ``flips`` times; the summary is the mean
share of heads per cell with its MCSE. ``CALLS`` counts trials computed in this process, so a test can see
that a resumed run computes only the missing ones.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from simdesign.core.errors import ConfigError
from simdesign.runner.study import StudyKind, register_study_kind

CALLS = {"trials": 0}


class CoinFlips(StudyKind):
    name, keys = "coin-flips", ("coins",)

    def parse(self, mapping, base_dir=None):
        problems = [f"Unknown key(s) {sorted(set(mapping) - {'name', 'coins', 'flips', 'trials', 'seed', 'study'})}"
                    ] if set(mapping) - {"name", "coins", "flips", "trials", "seed", "study"} else []
        if not isinstance(mapping.get("coins"), list) or not mapping["coins"]:
            problems.append(f"The 'coins' field must be a non-empty list of probabilities; "
                            f"got {mapping.get('coins')!r}")
        if problems:
            raise ConfigError(problems)
        return dict(name=mapping.get("name", "coins"), coins=tuple(mapping["coins"]),
                    flips=int(mapping.get("flips", 10)), trials=int(mapping.get("trials", 20)),
                    seed=int(mapping.get("seed", 0)))

    def config_name(self, config):
        return config["name"]

    def examples(self):
        return {"coin-flips": {"name": "coins", "coins": [0.2, 0.7], "flips": 20, "trials": 30, "seed": 4}}

    def with_trials(self, config, trials):
        return {**config, "trials": trials}

    def cells(self, config):
        return [f"p{p:g}" for p in config["coins"]]

    def trials(self, config):
        return config["trials"]

    def seed(self, config):
        return config["seed"]

    def chunk_trials(self, config):
        return 7

    def fingerprint(self, config):
        return {"coins": list(config["coins"]), "flips": config["flips"], "seed": config["seed"]}

    def trial_rows(self, config, cell, trial, rng):
        CALLS["trials"] += 1
        p = float(cell[1:])
        return pd.DataFrame({"heads": [int(rng.binomial(config["flips"], p))]})

    def summarise(self, config, rows):
        share = rows.assign(share=rows["heads"] / config["flips"]).groupby("cell", sort=False)["share"]
        table = share.agg(["mean", "std", "count"]).reset_index()
        table["mcse"] = table["std"] / np.sqrt(table["count"])
        return table.rename(columns={"count": "trials"}).drop(columns="std")

    def plot(self, config, summary, out_base):
        from matplotlib.figure import Figure

        figure = Figure(figsize=(4, 3))
        axis = figure.subplots()
        axis.errorbar(range(len(summary)), summary["mean"], yerr=1.96 * summary["mcse"], fmt="o")
        path = out_base.with_suffix(".png")
        path.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(path)
        return [path]


COIN_FLIPS = register_study_kind(CoinFlips())
