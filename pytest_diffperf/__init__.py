"""pytest-diffperf: performance and output regression guard for diffusion-model serving."""

__version__ = "0.1.0"
