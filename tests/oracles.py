"""Reference packages the tests compare against that cannot live in the venv's site-packages.

ppi-python (the prediction-powered inference authors' package, Angelopoulos et al. 2023) ships a top-level
package named ``tests``, which would shadow this project's tests, so ``scripts/setup.sh`` installs it with
``--no-deps`` into ``.venv/oracles/ppi`` (its dependencies are the venv's own) and :func:`ppi_py` imports it
from there.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

PPI_FOLDER = Path(__file__).resolve().parents[1] / ".venv" / "oracles" / "ppi"


def ppi_py():
    """The ``ppi_py`` module, or skip the test saying how to install it."""
    if not (PPI_FOLDER / "ppi_py").is_dir():
        pytest.skip(f"ppi-python is not installed in {PPI_FOLDER} (run: bash scripts/setup.sh)")
    if str(PPI_FOLDER) not in sys.path:
        sys.path.append(str(PPI_FOLDER))  # appended, so its 'tests' package never shadows this project's
    import ppi_py

    return ppi_py
