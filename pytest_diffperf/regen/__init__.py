"""Baseline regeneration: the one rule (policy), the locked JSON writer, the regenerator and its summary."""
