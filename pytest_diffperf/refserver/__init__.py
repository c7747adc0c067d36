"""CPU reference diffusion server speaking SGLang's diffusion HTTP and perf-log protocol.

Serves tiny diffusers pipelines with seeded random weights (see ``specs.MODELS``) so the plugin
can be exercised end to end without a GPU. Entry point: ``diffperf-refserver serve``.
"""
