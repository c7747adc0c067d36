"""Verdict statistics: the one place that tells a regression from noise.

Pure (numpy, no pytest, no servers): the A/B design and its stop rule (:mod:`.design`), ratio
intervals over process pairs and request pairs (:mod:`.interval`, :mod:`.noise`), the verdict rules
(:mod:`.rules`), per-metric policy (:mod:`.metrics`), A/B analysis (:mod:`.ab`), stage attribution
(:mod:`.attribution`) and the noise-aware static mode (:mod:`.static`). See ``docs/verdicts.md``.
Nothing is re-exported here: importing one module loads only what it needs.
"""
