"""Import paths that moved when the package was laid out by what each part holds (issue 40).

``simdesign.simulation`` became ``simdesign.studies`` (one package per study kind), ``simdesign.analyses``
became ``simdesign.significance``, and ``simdesign.pilot`` was split into ``simdesign.tables`` (reading every
method's tables) and ``simdesign.realdata`` (fit, check, analyse). The old module paths stay importable for one
release: importing one warns (DeprecationWarning) and gives the module at its new path, the same object, so a
plug-in's monkeypatch or registration reaches the real module.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
import warnings

MOVED: dict[str, str] = {
    'simdesign.analyses': 'simdesign.significance',
    'simdesign.analyses.base': 'simdesign.significance.base',
    'simdesign.analyses.classical': 'simdesign.significance.classical',
    'simdesign.analyses.document_tests': 'simdesign.significance.document_tests',
    'simdesign.analyses.lmm_native': 'simdesign.significance.lmm_native',
    'simdesign.analyses.mixed_native': 'simdesign.significance.mixed_native',
    'simdesign.analyses.mixed_r': 'simdesign.significance.mixed_r',
    'simdesign.analyses.partial_pairs': 'simdesign.significance.partial_pairs',
    'simdesign.analyses.preferences': 'simdesign.significance.preferences',
    'simdesign.analyses.preferences_r': 'simdesign.significance.preferences_r',
    'simdesign.analyses.rsession': 'simdesign.significance.rsession',
    'simdesign.pilot': 'simdesign.realdata',
    'simdesign.pilot.analyse': 'simdesign.realdata.analyse',
    'simdesign.pilot.check': 'simdesign.realdata.check',
    'simdesign.pilot.crowd_fit': 'simdesign.realdata.crowd_fit',
    'simdesign.pilot.fit': 'simdesign.realdata.fit',
    'simdesign.pilot.judge_analysis': 'simdesign.realdata.judge_analysis',
    'simdesign.pilot.judge_fit': 'simdesign.realdata.judge_fit',
    'simdesign.pilot.judge_pairwise': 'simdesign.realdata.judge_pairwise',
    'simdesign.pilot.judge_pairwise_fit': 'simdesign.realdata.judge_pairwise_fit',
    'simdesign.pilot.judge_table': 'simdesign.tables.judge',
    'simdesign.pilot.likert_table': 'simdesign.tables.likert',
    'simdesign.pilot.method_steps': 'simdesign.realdata.method_steps',
    'simdesign.pilot.metric_analysis': 'simdesign.realdata.metric_analysis',
    'simdesign.pilot.pairwise_analysis': 'simdesign.realdata.pairwise_analysis',
    'simdesign.pilot.pairwise_check': 'simdesign.realdata.pairwise_check',
    'simdesign.pilot.pairwise_fit': 'simdesign.realdata.pairwise_fit',
    'simdesign.pilot.pairwise_table': 'simdesign.tables.pairwise',
    'simdesign.pilot.rank_check': 'simdesign.realdata.rank_check',
    'simdesign.pilot.rank_fit': 'simdesign.realdata.rank_fit',
    'simdesign.pilot.rank_model_fit': 'simdesign.realdata.rank_model_fit',
    'simdesign.pilot.rank_noise': 'simdesign.realdata.rank_noise',
    'simdesign.pilot.ranks': 'simdesign.tables.ranks',
    'simdesign.pilot.records': 'simdesign.tables.records',
    'simdesign.pilot.resample': 'simdesign.realdata.resample',
    'simdesign.pilot.tables': 'simdesign.tables.recognise',
    'simdesign.simulation': 'simdesign.studies',
    'simdesign.simulation.backends': 'simdesign.studies.backends',
    'simdesign.simulation.config': 'simdesign.studies.rates.config',
    'simdesign.simulation.coverage': 'simdesign.studies.rates.coverage',
    'simdesign.simulation.criteria': 'simdesign.studies.rates.criteria',
    'simdesign.simulation.crowd_plots': 'simdesign.studies.crowd.crowd_plots',
    'simdesign.simulation.crowd_study': 'simdesign.studies.crowd.crowd_study',
    'simdesign.simulation.design_picture': 'simdesign.studies.design_picture',
    'simdesign.simulation.engine': 'simdesign.studies.rates.engine',
    'simdesign.simulation.judge_study': 'simdesign.studies.judge.judge_study',
    'simdesign.simulation.method_plots': 'simdesign.studies.rates.method_plots',
    'simdesign.simulation.method_specs': 'simdesign.studies.rates.method_specs',
    'simdesign.simulation.metric_power': 'simdesign.studies.metrics.metric_power',
    'simdesign.simulation.metric_store': 'simdesign.studies.metrics.metric_store',
    'simdesign.simulation.metric_targets': 'simdesign.studies.metrics.metric_targets',
    'simdesign.simulation.metric_validation': 'simdesign.studies.metrics.metric_validation',
    'simdesign.simulation.panel_plots': 'simdesign.studies.panels.panel_plots',
    'simdesign.simulation.panel_study': 'simdesign.studies.panels.panel_study',
    'simdesign.simulation.panel_summary': 'simdesign.studies.panels.panel_summary',
    'simdesign.simulation.panel_tests': 'simdesign.studies.panels.panel_tests',
    'simdesign.simulation.plots': 'simdesign.studies.rates.plots',
    'simdesign.simulation.replication': 'simdesign.studies.replication.replication',
    'simdesign.simulation.replication_plots': 'simdesign.studies.replication.replication_plots',
    'simdesign.simulation.store': 'simdesign.studies.rates.store',
    'simdesign.simulation.study_kinds': 'simdesign.studies.kinds',
    'simdesign.simulation.summary': 'simdesign.studies.rates.summary',
    'simdesign.simulation.sweep': 'simdesign.studies.sweep',
    'simdesign.simulation.tac_study': 'simdesign.studies.tac.tac_study',
    'simdesign.simulation.views': 'simdesign.studies.rates.views',
}


OLD_PACKAGES = ("simdesign.simulation", "simdesign.pilot", "simdesign.analyses")


def _old_package(old: str, new: str) -> types.ModuleType:
    """A stand-in for a package that was split: ``from old import name`` finds the moved submodule ``old.name``
    (through this finder) or else the new package's ``name``."""
    stand_in = types.ModuleType(old, f"Moved: see {new}.")
    stand_in.__path__ = []

    def __getattr__(name):
        if f"{old}.{name}" in MOVED:
            return importlib.import_module(f"{old}.{name}")
        return getattr(importlib.import_module(new), name)

    stand_in.__getattr__ = __getattr__
    return stand_in


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path and loads it as the module at its new path (see the module docstring)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; the old path will be removed in the next release",
                      DeprecationWarning, stacklevel=2)
        if spec.name in OLD_PACKAGES:
            return _old_package(spec.name, new)
        module = importlib.import_module(new)
        # the import system overwrites __spec__ of what create_module returns: restored in exec_module
        self._specs = getattr(self, "_specs", {})
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module):
        spec = module.__spec__
        if spec.name not in OLD_PACKAGES:
            module.__spec__ = self._specs.pop(spec.name, spec)


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModules())
