"""Real studies: fit a model to a pilot, check it, analyse a study, resample it (their tables are read by
:mod:`simdesign.tables`)."""
from simdesign.realdata import method_steps  # noqa: F401,E402 -- the methods' fit, check and analyse steps
