"""scikit-learn's own tree and ensemble tests, run against silva's estimators.

The tests are not in this file: conftest.py collects this file as the copies of the
scikit-learn modules it lists, with silva's estimators imported in place of
scikit-learn's. See conftest.py for how, and expected_failures.py for what is expected
to fail and why.
"""
