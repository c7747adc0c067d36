"""`diffperf compare`: each case on each framework, median latencies, and their journal."""
