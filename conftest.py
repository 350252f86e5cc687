"""Collection rules for the doctests of simdesign/ (tests/conftest.py holds the test fixtures)."""
import importlib.util

# The compiled kernels need numba (the optional 'fast' extra); without it their module cannot be imported.
collect_ignore = [] if importlib.util.find_spec("numba") else ["simdesign/_clmm_numba.py"]
