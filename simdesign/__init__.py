"""simdesign: will a human-evaluation study see what it wants to see?

Simulate annotation studies under a cumulative-link mixed model (Steen &
Markert, 2021, EACL) and estimate the type I error and power of the tests
researchers use on them.

The Python API (:mod:`simdesign.api`)::

    import simdesign
    result = simdesign.simulate("configs/quick.yaml", trials=50)
    result.summary()

``simdesign.analyse`` is the module :mod:`simdesign.realdata.analyse` and, called, its :func:`analyse`;
``simdesign.analyse_metrics`` compares automatic metrics with human scores (:mod:`simdesign.realdata.metric_analysis`).

Layers (a module imports only its own layer and those listed before it; ``tests/test_architecture.py`` checks;
``docs/explanation/layout.md`` lists every package and what it holds):

0. ``core``: errors, seeds, designs, judgements (the vocabulary every layer speaks); ``runner``: chunks,
   workers, backends, stores and study kinds, for every kind of study (it imports only ``core``);
1. ``model``: the ordinal mixed model that generates judgements, with its ``presets``; ``methods``: the
   annotation methods (Likert, Rank, pairwise, plug-ins), which the model asks for its responses;
2. ``stats``: pure statistics (contrasts, reliability, annotation time); ``tables``: reading and validating
   every method's judgement tables;
3. ``clmm``, ``lmm`` (+ ``_clmm_numba``, left in place so its on-disk numba cache stays valid): the native
   mixed models;
4. ``significance``: the registered tests (+ ``rsession``, the R session they run in);
5. ``studies``: one package per study kind (``rates``, ``panels``, ``crowd``, ``metrics``, ``tac``,
   ``replication``, ``judge``) and the sweep driver;
6. ``planning`` and ``realdata`` (fit, check, analyse real studies): two clients of the studies that ignore
   each other;
7. ``outputs``, ``api``, ``cli`` (one module per command), ``explore`` (the web explorer), ``testing`` (contract
   checks for plug-ins): user-facing entry points, flat at the top so ``python -m simdesign.cli`` and the
   ``simdesign`` console script keep their paths.

Folders are named ``studies`` and ``planning`` (not ``simulate``/``plan``) so they never shadow the API
functions ``simdesign.simulate`` and ``simdesign.plan``. The old paths (``simdesign.simulation``,
``simdesign.pilot``, ``simdesign.analyses``) stay importable for one release (:mod:`simdesign._moved`).
"""
from simdesign import _moved

_moved.install()  # before anything imports an old path

from simdesign.core.designs import BlockDesign, OverlapDesign, PoolDesign
from simdesign.core.errors import ConfigError, DataError, StoreError
from simdesign.core.judgements import Judgements
from simdesign.core.results import NoFigureError, Result
from simdesign.model import OrdinalMixedModel, load_model
from simdesign.studies.rates.config import SimulationConfig, load_config, parse_config
from simdesign.studies.rates.engine import replay_trial, run_simulation
from simdesign.studies.rates.summary import summarise
from simdesign.api import (PlanOutcome, Reliability, SimulationResult, StudyResult, analyse_metrics, check_model,
                           fit_model, load_results, plan, reliability, simulate)
# a callable module: simdesign.analyse(frame) runs simdesign.realdata.analyse.analyse
from simdesign.realdata import analyse



def draw_designs(designs, **options):
    """Draw designs (annotators x documents, blocks shaded): a matplotlib Figure, one panel per design.

    Parameters
    ----------
    designs : sequence
        Design objects or config ``designs:`` entries.
    **options
        As :func:`simdesign.studies.design_picture.draw_designs` (imported here only when called, so
        that ``import simdesign`` does not load matplotlib).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> figure = simdesign.draw_designs([{"kind": "block", "blocks": 4, "docs_per_block": 5,
    ...                                   "annotators_per_block": 3}])          # doctest: +SKIP
    """
    from simdesign.studies.design_picture import draw_designs as draw

    return draw(designs, **options)


from simdesign.core.version import VERSION as __version__  # noqa: E402 (pyproject.toml is its source)
__all__ = ["BlockDesign", "PoolDesign", "OverlapDesign", "ConfigError", "DataError", "StoreError", "Judgements", "Result", "NoFigureError", "OrdinalMixedModel",
           "load_model", "SimulationConfig", "load_config", "parse_config", "replay_trial", "run_simulation",
           "summarise", "simulate", "SimulationResult", "StudyResult", "load_results", "plan", "PlanOutcome", "fit_model",
           "check_model", "reliability", "Reliability", "analyse", "analyse_metrics", "draw_designs"]
