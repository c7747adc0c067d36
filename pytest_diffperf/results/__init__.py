"""What a scenario produced: the typed result and its outcome, judging, merging results files, tables."""
