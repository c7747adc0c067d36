"""Splitting a suite: time-balanced shards of server groups, and devices and ports per xdist worker."""
