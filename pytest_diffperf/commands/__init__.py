"""Subcommands of the `diffperf` console script, one module each."""
