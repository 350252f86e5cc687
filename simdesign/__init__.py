"""simdesign: will a human-evaluation study see what it wants to see?

Simulate annotation studies under a cumulative-link mixed model (Steen &
Markert, 2021, EACL) and estimate the type I error and power of the tests
researchers use on them.
"""
from simdesign.designs import BlockDesign, PoolDesign
from simdesign.errors import ConfigError
from simdesign.judgements import Judgements
from simdesign.model import OrdinalMixedModel, load_model
from simdesign.config import load_config, parse_config
from simdesign.engine import replay_trial, run_simulation
from simdesign.summary import summarise

__version__ = "0.1.0"
__all__ = ["BlockDesign", "PoolDesign", "ConfigError", "Judgements", "OrdinalMixedModel", "load_model", "load_config",
           "parse_config", "replay_trial", "run_simulation", "summarise"]
