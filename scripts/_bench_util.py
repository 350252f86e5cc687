"""Helpers shared by the clmm benchmark and comparison scripts (run as `python scripts/NAME.py`)."""
from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path


def load_baseline():
    """simdesign.clmm before issue 15 (commit d44f140), from scripts/_clmm_baseline.py.

    A verbatim snapshot rather than `git show`, so the same-run comparison also works in a checkout
    without history.
    """
    spec = importlib.util.spec_from_file_location("clmm_baseline", Path(__file__).with_name("_clmm_baseline.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["clmm_baseline"] = module
    spec.loader.exec_module(module)
    return module


def timed(function, *args, **kwargs):
    """(wall seconds, CPU seconds of this process, result) of one call."""
    started, started_cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    return time.perf_counter() - started, time.process_time() - started_cpu, result
