"""``pip install .`` writes nothing into the checkout and works from a read-only one (issue 39).

setuptools builds in the source tree (``build/``, ``*.egg-info``); pyproject.toml's backend
(build_support/out_of_tree_backend.py) runs it on a temporary copy instead.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "build_support"))
import out_of_tree_backend  # noqa: E402


def test_pyproject_builds_through_the_out_of_tree_backend():
    system = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]
    assert system["build-backend"] == "out_of_tree_backend" and system["backend-path"] == ["build_support"]
    for hook in ("build_wheel", "build_sdist", "prepare_metadata_for_build_wheel", "get_requires_for_build_wheel",
                 "build_editable"):
        assert callable(getattr(out_of_tree_backend, hook))


def test_the_hooks_run_in_a_copy_without_outputs_or_environments(tmp_path, monkeypatch):
    tree = tmp_path / "checkout"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "a.py").write_text("")
    (tree / "link").symlink_to("pkg")
    for skipped in (".git", ".venv", "results", "build", "x.egg-info", "pkg/__pycache__"):
        (tree / skipped).mkdir()
    monkeypatch.chdir(tree)
    with out_of_tree_backend._in_a_copy():
        copy = Path.cwd()
        assert copy != tree and (copy / "pkg" / "a.py").is_file() and (copy / "link").is_symlink()
        assert not any((copy / name).exists() for name in (".git", ".venv", "results", "build", "x.egg-info",
                                                            "pkg/__pycache__"))
        (copy / "build").mkdir()  # what setuptools would write
    assert Path.cwd() == tree and not copy.exists() and not (tree / "build" / "lib").exists()


def _copy_of_the_checkout(target: Path) -> Path:
    shutil.copytree(ROOT, target, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "results", "build", "*.egg-info", "__pycache__", ".pytest_cache"))
    return target


def _read_only(path: Path) -> bool:
    """Bind-mount ``path`` read-only onto itself (root with mount rights only); False where that cannot be done."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    done = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True)
    if done.returncode:
        return False
    if subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], capture_output=True).returncode:
        subprocess.run(["umount", str(path)], capture_output=True)
        return False
    return True


@pytest.mark.slow
def test_pip_builds_a_wheel_from_a_read_only_checkout_and_writes_nothing_into_it(tmp_path):
    # slow: pip builds in an isolated environment, with setuptools from the package index (or pip's cache)
    source = _copy_of_the_checkout(tmp_path / "checkout")
    before = sorted(str(p.relative_to(source)) for p in source.rglob("*"))
    mounted = _read_only(source)
    try:
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w",
                               str(tmp_path / "wheels"), str(source)], cwd=tmp_path, capture_output=True, text=True,
                              timeout=600)
    finally:
        if mounted:
            subprocess.run(["umount", str(source)], check=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert list((tmp_path / "wheels").glob("simdesign_humeval-*.whl"))
    assert sorted(str(p.relative_to(source)) for p in source.rglob("*")) == before


def test_an_sdist_carries_the_backend():
    # pip builds a wheel from an sdist with the sdist's own pyproject.toml: without the backend module the
    # build fails. setuptools puts a file into an sdist that MANIFEST.in names (checked by hand: the sdist
    # lists build_support/out_of_tree_backend.py and pip builds a wheel from it).
    lines = (ROOT / "MANIFEST.in").read_text().splitlines()
    assert "include build_support/out_of_tree_backend.py" in lines
