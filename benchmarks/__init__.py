"""Benchmarks of gbdt_plrank: synthetic MSLR-shaped data, reference baselines, timing scripts.

Run ``make bench`` (or ``python benchmarks/bench_round.py``); nothing here is imported by the
library itself.
"""
