"""Every registry behaves alike (issue 40): the same entry again is harmless (a notebook reloading a plug-in
module makes new objects of the same definition), another entry under a taken name is refused with
ConfigError (a ValueError), and every registry can unregister."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from simdesign.significance import ANALYSES, register
from simdesign.significance.base import unregister
from simdesign.significance.base import AnalysisInfo
from simdesign.core.designs import DESIGN_KINDS, BlockDesign, register_design_kind, unregister_design_kind
from simdesign.core.errors import ConfigError
from simdesign.core.estimands import ESTIMANDS, Estimand, register_estimand, unregister_estimand
from simdesign.methods import REGISTERED as METHODS
from simdesign.methods import AnnotationMethod, register_method, unregister_method
from simdesign.runner.study import REGISTERED as STUDY_KINDS
from simdesign.runner.study import StudyKind, register_study_kind, unregister_study_kind


def _analysis(judgements, rng, **options):
    return None


def _method_class():
    # a class statement run twice, as a module reload runs it: two classes of one definition
    class PluginMethod(AnnotationMethod):
        name, label, value_column = "plugin_alike", "Plugin", "verdict"
        stream_suffix, result_suffix = ("plugin_alike",), "@plugin_alike"

        def can_generate(self, model) -> bool:
            return False

        def responses(self, model, eta, rng):
            return np.zeros(eta.shape, dtype=np.int64)

    return PluginMethod


def _study_kind_class():
    class PluginKind(StudyKind):
        name, keys = "plugin_alike", ("plugin_alike_key",)

    return PluginKind


def _design_class():
    @dataclasses.dataclass(frozen=True)
    class PluginDesign(BlockDesign):
        kind = "plugin_alike"

    return PluginDesign


def _estimand(label: str = "plugin") -> Estimand:
    return Estimand(name="plugin_alike", study_kinds=("rates",), unit="value", label=label,
                    summarise=_analysis, description="a test's own")


# registry -> (register, unregister, the registry's dict, make an entry (a fresh definition each call), make
# another entry under the same name, the entry's name)
REGISTRIES = {
    "method": (register_method, unregister_method, METHODS, lambda: _method_class()(),
               lambda: type("OtherMethod", (_method_class(),), {})(), "plugin_alike"),
    "study kind": (register_study_kind, unregister_study_kind, STUDY_KINDS, lambda: _study_kind_class()(),
                   lambda: type("OtherKind", (_study_kind_class(),), {})(), "plugin_alike"),
    "design kind": (register_design_kind, unregister_design_kind, DESIGN_KINDS, _design_class,
                    lambda: type("OtherDesign", (_design_class(),), {}), "plugin_alike"),
    "estimand": (register_estimand, unregister_estimand, ESTIMANDS, _estimand, lambda: _estimand("another"),
                 "plugin_alike"),
    "test": (register, unregister, ANALYSES, lambda: AnalysisInfo("plugin_alike", _analysis),
             lambda: AnalysisInfo("plugin_alike", _analysis, options={"extra": 1}), "plugin_alike"),
}


@pytest.mark.parametrize("registry", sorted(REGISTRIES))
def test_every_registry_takes_the_same_entry_again_refuses_another_and_unregisters(registry):
    register_entry, unregister_entry, entries, make, make_other, name = REGISTRIES[registry]
    assert name not in entries
    try:
        first = make()
        register_entry(first)
        assert entries[name] is first
        register_entry(first)  # the same object again
        again = make()  # a new object of the same definition (a reloaded module)
        assert again is not first
        register_entry(again)
        assert entries[name] is again
        with pytest.raises(ConfigError, match=f"{registry} 'plugin_alike' is registered already") as caught:
            register_entry(make_other())
        assert isinstance(caught.value, ValueError)
        assert entries[name] is again
    finally:
        unregister_entry(name)
    assert name not in entries
    unregister_entry(name)  # unregistering what is not there is harmless too


def test_an_invalid_estimand_is_refused_with_every_problem():
    bad = dataclasses.replace(_estimand(), name="plugin_invalid", unit="furlongs")
    with pytest.raises(ConfigError, match="plugin_invalid"):
        register_estimand(bad)
    assert "plugin_invalid" not in ESTIMANDS


def test_a_step_registered_again_is_harmless_only_as_the_same_function():
    from simdesign.methods import register_step

    method = _method_class()()

    def reader(path, columns, scale=None):
        return None

    register_step(method, "read_table", reader)
    register_step(method, "read_table", reader)  # the same function again

    def reader_again(path, columns, scale=None):  # another definition under the same role
        return None

    with pytest.raises(ConfigError, match="has a 'read_table' step already"):
        register_step(method, "read_table", reader_again)
    assert method.steps["read_table"] is reader
