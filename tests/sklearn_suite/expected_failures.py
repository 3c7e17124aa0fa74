"""scikit-learn tests that are expected to fail on silva, each with its reason."""

EXPECTED_FAILURES = {}
