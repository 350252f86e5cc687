"""The build backend of ``pip install .``: setuptools, run on a copy of the checkout in a temporary directory.

setuptools builds in the source tree: it writes ``build/`` and ``simdesign_humeval.egg-info`` into the
checkout, so ``pip install .`` from a read-only checkout (a shared or mounted copy) fails before it starts.
Every hook that builds a wheel or an sdist here copies the tree first (without version control, virtual
environments, results and earlier build output) and runs setuptools' own hook inside the copy; the result
goes to the directory pip asked for. Editable installs point at the checkout by nature and run in place.
pyproject.toml names this module (``build-backend``, ``backend-path``).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from setuptools import build_meta as _setuptools

# Never needed to build, possibly large: version control, environments, run outputs, earlier builds, caches.
_SKIPPED = shutil.ignore_patterns(".git", ".venv", "venv", "results", "build", "dist", "site", "*.egg-info",
                                  "__pycache__", "*.nbi", "*.nbc", ".pytest_cache", ".setup-stamp*")


@contextlib.contextmanager
def _in_a_copy():
    """Run the body with the working directory a temporary copy of the checkout (symbolic links kept)."""
    source = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="simdesign-build-") as scratch:
        tree = os.path.join(scratch, "source")
        shutil.copytree(source, tree, symlinks=True, ignore=_SKIPPED)
        os.chdir(tree)
        try:
            yield
        finally:
            os.chdir(source)


def _out(directory: str) -> str:
    # pip may name its output directory relative to the checkout: resolve it before the working directory moves
    return os.path.abspath(directory)


def get_requires_for_build_wheel(config_settings=None):
    with _in_a_copy():
        return _setuptools.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    with _in_a_copy():
        return _setuptools.get_requires_for_build_sdist(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    target = _out(metadata_directory)
    with _in_a_copy():
        return _setuptools.prepare_metadata_for_build_wheel(target, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    target = _out(wheel_directory)
    metadata = _out(metadata_directory) if metadata_directory else None
    with _in_a_copy():
        return _setuptools.build_wheel(target, config_settings, metadata)


def build_sdist(sdist_directory, config_settings=None):
    target = _out(sdist_directory)
    with _in_a_copy():
        return _setuptools.build_sdist(target, config_settings)


# Editable installs: in place (their point is to run the checkout's files).
get_requires_for_build_editable = _setuptools.get_requires_for_build_editable
prepare_metadata_for_build_editable = _setuptools.prepare_metadata_for_build_editable
build_editable = _setuptools.build_editable
