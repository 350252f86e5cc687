"""Simulated studies, one package per study kind (rates, panels, crowd, metrics, tac, replication, judge), and the
drivers over them (sweeps); the built-in kinds are registered by :mod:`simdesign.studies.kinds`."""
