"""Benchmarks: each ``bench_*.py`` is a script that writes JSON to ``benchmarks/results/``."""
