"""Exact replications (Ito & Gatt 2023, ReproHum): does a replication reach the original study's verdicts?"""
