"""pytest-diffperf: performance and output regression guard for diffusion-model serving.

PYTEST_DONT_REWRITE: the plugin's asserts are invariants, not test assertions. pytest marks this package for
rewriting whenever a distribution of it with a pytest11 entry point is visible, such as the source tree's
``pytest_diffperf.egg-info`` that an editable install leaves there, once the rootdir is on ``sys.path``; a run
already holding the package then warns "Module already imported so cannot be rewritten" in each pytester run.
"""

__version__ = "0.1.0"
