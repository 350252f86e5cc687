"""Collection rules for the doctests of simdesign/ (tests/conftest.py holds the test fixtures)."""
import importlib.util

# The compiled kernels need numba (the optional 'fast' extra); without it their module cannot be imported.
collect_ignore = [] if importlib.util.find_spec("numba") else ["simdesign/_clmm_numba.py"]
# The explorer's web application needs Flask (the optional 'explore' extra, part of 'test').
if not importlib.util.find_spec("flask"):
    collect_ignore.append("simdesign/explore/app.py")
