"""Simulation: configs, the trial engine, parallel backends, the results store, summaries and plots."""
