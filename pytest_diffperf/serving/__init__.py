"""Starting servers and talking to them: launchers, the HTTP client, processes, the pool, measuring."""
