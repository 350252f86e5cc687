"""Pilot and real studies: fit a model to a pilot, check it, read rank data, analyse a study, resample."""
