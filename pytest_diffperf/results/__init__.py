"""What a scenario produced: the typed result and its outcome, the results file, merging, reports."""
