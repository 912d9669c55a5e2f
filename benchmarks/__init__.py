"""The timing suite of gbdt_plrank: what a round, an estimate, a thread and a compilation cost.

Run ``make bench`` (or ``python benchmarks/bench_round.py``); nothing here is imported by the
library itself. The scripts that measured quality and chose the defaults are in ``research/``.
"""
