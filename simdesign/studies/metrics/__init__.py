"""Metric validation: automatic metrics against human scores, by simulation (correlations, their tests)."""
