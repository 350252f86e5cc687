"""Crowd studies with a worker-level crowd: aggregation against experts, per study and across studies."""
