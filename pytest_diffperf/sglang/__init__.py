"""SGLang-specific knowledge: loading SGLang's own case lists (``gpu_cases.py``) and converting them to cases.

``standins`` lets SGLang's test files load without sglang installed; ``source`` finds them in a
checkout, an unpacked wheel or the installed package; ``caselist`` runs them and picks the suites
SGLang's CI runs; ``convert`` turns each case into a ``cases.Case`` (or says why it cannot yet).
"""
