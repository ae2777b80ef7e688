"""Verdicts: the analysis providers, the ``localRulesOnly`` policy and the model-verdict contract."""
