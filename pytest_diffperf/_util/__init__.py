"""Small single-purpose helpers shared by the layers above: JSON files, atomic writes, text, git, lint findings, CI outputs."""
