"""Benchmark suites of a factory, their tasks, runs and trials."""
