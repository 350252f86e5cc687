"""Write examples/crowd_pilot.csv: a crowd pilot table made by the worker-level generator (simdesign.model.crowd).

The paper's structure (50 single outputs, 5-point scale, 46 workers, 24 per item), 15% uniform spammers, noise
lognormal around 1 (log-SD 0.5), leniency SD 0.3, item SD 1.5; seconds per judgement lognormal around 40 s
(honest) or 12 s (spammers), log-SD 0.4. Run: python scripts/make_crowd_pilot.py
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from simdesign.model.crowd import Criterion, ItemStructure, WorkerModel, sample_crowd

WORKERS = WorkerModel(spammer_share=0.15, noise=1.0, noise_spread=0.5, leniency_sd=0.3)


def main() -> None:
    rng = np.random.default_rng(2021)
    sample = sample_crowd(ItemStructure(), (Criterion("overall", item_sd=1.5),), WORKERS, rng)
    worker = sample.workers.ravel()
    typical = np.where(sample.is_spammer[worker], WORKERS.spam_seconds, WORKERS.work_seconds)
    seconds = np.round(typical * np.exp(WORKERS.seconds_spread * rng.standard_normal(worker.size)), 1)
    table = pd.DataFrame({"item": [f"summary{i + 1:02d}" for i in np.repeat(np.arange(50), 24)],
                          "worker": [f"w{w + 1:02d}" for w in worker], "score": sample.crowd[0].ravel(),
                          "seconds": seconds})
    path = Path(__file__).resolve().parents[1] / "examples" / "crowd_pilot.csv"
    table.to_csv(path, index=False)
    print(f"wrote {path}: {len(table)} judgements; true spammers: "
          f"{', '.join(f'w{w + 1:02d}' for w in np.flatnonzero(sample.is_spammer))}")


if __name__ == "__main__":
    main()
