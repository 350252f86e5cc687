"""Shared fixtures and helpers for the test suite."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data" / "steen-markert-2021"


@pytest.fixture
def paper_data_dir() -> Path:
    """The paper's data (../shared); the test is skipped, with the reason, in a clone without it."""
    if not (SHARED_DATA / "judgements").is_dir():
        pytest.skip(f"the Steen & Markert data are not present at {SHARED_DATA} (a clone without ../shared)")
    return SHARED_DATA


@pytest.fixture
def coherence():
    from simdesign import load_model
    return load_model("coherence")


@pytest.fixture
def rng():
    return np.random.default_rng(20211)


def within_mcse(value: float, target: float, mcse: float, k: float = 4.0) -> bool:
    """True when |value - target| <= k Monte-Carlo standard errors."""
    return abs(value - target) <= k * mcse
