"""``diffperf bisect``: the search over commits (pure) and one step of it (an A/B run)."""
