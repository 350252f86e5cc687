"""simdesign: will a human-evaluation study see what it wants to see?

Simulate annotation studies under a cumulative-link mixed model (Steen &
Markert, 2021, EACL) and estimate the type I error and power of the tests
researchers use on them.

The Python API (:mod:`simdesign.api`)::

    import simdesign
    result = simdesign.simulate("configs/quick.yaml", trials=50)
    result.summary()

``simdesign.analyse`` is both the module and, called, :func:`simdesign.analyse.analyse`.
"""
from simdesign.designs import BlockDesign, PoolDesign
from simdesign.errors import ConfigError, DataError, StoreError
from simdesign.judgements import Judgements
from simdesign.model import OrdinalMixedModel, load_model
from simdesign.config import SimulationConfig, load_config, parse_config
from simdesign.engine import replay_trial, run_simulation
from simdesign.summary import summarise
from simdesign.api import (PlanOutcome, Reliability, SimulationResult, check_model, fit_model, load_results, plan,
                           reliability, simulate)
from simdesign import analyse  # a callable module: simdesign.analyse(frame) runs simdesign.analyse.analyse

__version__ = "0.1.0"
__all__ = ["BlockDesign", "PoolDesign", "ConfigError", "DataError", "StoreError", "Judgements", "OrdinalMixedModel",
           "load_model", "SimulationConfig", "load_config", "parse_config", "replay_trial", "run_simulation",
           "summarise", "simulate", "SimulationResult", "load_results", "plan", "PlanOutcome", "fit_model",
           "check_model", "reliability", "Reliability", "analyse"]
