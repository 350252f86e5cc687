"""The plain `pip install` route works: a wheel built from the checkout, installed into a fresh virtual
environment without R and without scripts/setup.sh, runs configs/quick.yaml and a clmm_native config,
first without the `fast` extra (the mixed model in numpy) and then with it (numba's compiled kernels).

Slow (a venv and its dependencies from the package index, about two minutes with a warm pip cache).
"""
from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow

CLMM_CONFIG = """\
name: wheel-clmm
model: coherence
effect: fitted
designs: [{kind: block, blocks: 4, docs_per_block: 5, annotators_per_block: 3}]
tests: [{name: clmm_native, structure: paper}, ttest_doc]
trials: 3
seed: 5
"""


def _run(command, cwd, timeout=900):
    # A clean environment: nothing of this checkout or its venv on the path of the installed package.
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{' '.join(map(str, command))}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_a_wheel_installs_and_runs_without_r_or_the_set_up(tmp_path):
    wheels = tmp_path / "wheels"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(ROOT)], tmp_path)
    wheel = next(wheels.glob("simdesign_humeval-*.whl"))

    environment = tmp_path / "env"
    venv.EnvBuilder(with_pip=True).create(environment)
    python = environment / "bin" / "python"
    _run([python, "-m", "pip", "install", "--quiet", str(wheel)], tmp_path)
    _run([python, "-c", "import importlib.util, sys; sys.exit(importlib.util.find_spec('rpy2') is not None "
                        "or importlib.util.find_spec('numba') is not None)"], tmp_path)

    work = tmp_path / "work"
    work.mkdir()
    (work / "clmm.yaml").write_text(CLMM_CONFIG)
    simdesign = environment / "bin" / "simdesign"
    _run([simdesign, "run", str(ROOT / "configs" / "quick.yaml"), "--trials", "20", "--jobs", "1", "--quiet",
          "--out", "quick"], work)
    assert (work / "quick" / "summary.csv").is_file() and (work / "quick" / "quick.png").is_file()
    _run([simdesign, "run", "clmm.yaml", "--jobs", "1", "--quiet", "--out", "numpy"], work)

    _run([python, "-m", "pip", "install", "--quiet", f"{wheel}[fast]"], tmp_path)
    _run([simdesign, "run", "clmm.yaml", "--jobs", "1", "--quiet", "--out", "fast"], work)
    without, with_fast = (pd.read_csv(work / name / "summary.csv") for name in ("numpy", "fast"))
    assert set(without["test"]) == {"clmm_native[paper]", "ttest_doc"}
    # The compiled kernels follow the numpy code's optimiser path: the same rates and failure counts.
    columns = ["design", "test", "estimand", "rate", "n_failed"]
    pd.testing.assert_frame_equal(without[columns], with_fast[columns])
