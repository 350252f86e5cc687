"""Collection rules for the doctests of simdesign/ (tests/conftest.py holds the test fixtures)."""
import importlib.util

# The compiled kernels need numba (the optional 'fast' extra); without it their module cannot be imported.
collect_ignore = [] if importlib.util.find_spec("numba") else ["simdesign/_clmm_numba.py"]
# The explorer's web application needs Flask (the optional 'explore' extra, part of 'test').
if not importlib.util.find_spec("flask"):
    collect_ignore.append("simdesign/explore/app.py")

import pytest  # noqa: E402

# Doctests that start R (seconds each) belong to the slow tier, like the tests that need R.
SLOW_DOCTESTS = ("simdesign.significance.rsession",)


def pytest_collection_modifyitems(items):
    for item in items:
        if isinstance(item, pytest.DoctestItem) and item.name in SLOW_DOCTESTS:
            item.add_marker(pytest.mark.slow)
