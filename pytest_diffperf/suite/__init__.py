"""The pytest layer: options, the session, items, scheduling, reports. The only code that imports pytest."""
