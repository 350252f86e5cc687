"""Judgement tables of every annotation method: reading, validating and orienting them (CSV, JSON, JSON Lines),
with messages that name the line and the allowed values."""
