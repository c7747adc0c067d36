"""Performance: SGLang's baseline files (schema, loader, lint), what a run measured, and the limit engine."""
