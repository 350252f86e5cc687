"""The import paths that moved with issue 40's layout stay importable for one release, as deprecated aliases of
the very same modules (simdesign._moved)."""
import importlib
import sys
import warnings

import pytest

from simdesign._moved import MOVED, OLD_PACKAGES


@pytest.mark.parametrize("old", sorted(set(MOVED) - set(OLD_PACKAGES)))
def test_an_old_module_path_is_the_moved_module_with_a_warning(old, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)  # another test may have imported it (no second warning)
    with pytest.warns(DeprecationWarning, match="moved to"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__spec__.name == MOVED[old]  # the moved module keeps its own spec


def test_an_old_package_gives_its_moved_submodules_and_names():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from simdesign.analyses import ANALYSES, classical
        from simdesign.pilot import analyse
        from simdesign.pilot.fit import read_judgements  # the reader moved to simdesign.tables.judgements
        from simdesign.simulation import engine
    import simdesign.realdata.analyse
    import simdesign.significance
    import simdesign.studies.rates.engine
    import simdesign.tables.judgements

    assert ANALYSES is simdesign.significance.ANALYSES and classical.__name__ == "simdesign.significance.classical"
    assert analyse is simdesign.realdata.analyse and engine is simdesign.studies.rates.engine
    assert read_judgements is simdesign.tables.judgements.read_judgements


def test_every_old_path_names_an_existing_module():
    import importlib.util

    assert all(importlib.util.find_spec(new) is not None for new in MOVED.values())
    assert {old.split(".")[1] for old in MOVED} == {"simulation", "pilot", "analyses"}
