"""silva.metrics: the evaluation metrics of boosting against scikit-learn's, the metric
names each task allows, and which direction is better."""

import numpy as np
import pytest
from sklearn.metrics import log_loss, mean_absolute_error, roc_auc_score

from silva import metrics
from silva.engine import losses


def test_auc_matches_scikit_learn_with_weights_and_ties():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 300).astype(float)
    score = np.round(rng.rand(300) + 0.3 * y, 1)  # rounded: many ties
    weight = rng.uniform(0.1, 3.0, 300)
    assert metrics.auc(y, score, weight) == pytest.approx(
        roc_auc_score(y, score, sample_weight=weight), rel=1e-12)
    assert np.isnan(metrics.auc(np.ones(3), np.arange(3.0), np.ones(3)))


def test_metric_names_follow_scoring_and_the_task():
    regression = losses.make_loss("squared_error")
    binary = losses.make_loss("log_loss", n_classes=2)
    assert metrics.metric_name(None, regression) == "loss"
    assert metrics.metric_name("auc", binary) == "auc"

    def my_score(y, prediction, weight):
        return 0.0

    assert metrics.metric_name(my_score, regression) == "my_score"
    custom = losses.make_loss(lambda y, raw: (raw - y, np.ones_like(raw)), n_classes=2)
    assert metrics.metric_name(None, custom) == "log_loss"
    with pytest.raises(ValueError, match="scoring must be"):
        metrics.metric_name("auc", regression)


def test_evaluate_values_and_directions():
    rng = np.random.RandomState(1)
    y = rng.randint(0, 3, 200).astype(float)
    raw = rng.randn(200, 3)
    weight = rng.uniform(0.5, 2.0, 200)
    loss = losses.make_loss("log_loss", n_classes=3)
    proba = loss.link(raw)
    value, higher = metrics.evaluate("log_loss", None, loss, y, raw, weight)
    assert not higher
    assert value == pytest.approx(log_loss(y, proba, sample_weight=weight), rel=1e-12)
    accuracy, higher = metrics.evaluate("accuracy", None, loss, y, raw, weight)
    error, lower = metrics.evaluate("error", None, loss, y, raw, weight)
    assert higher and not lower and accuracy + error == pytest.approx(1.0)
    with pytest.raises(ValueError, match="binary"):
        metrics.evaluate("auc", None, loss, y, raw, weight)
    regression = losses.make_loss("squared_error")
    target = rng.randn(200)
    value, higher = metrics.evaluate("mae", None, regression, target, raw[:, :1], weight)
    assert not higher and value == pytest.approx(
        mean_absolute_error(target, raw[:, 0], sample_weight=weight), rel=1e-12)
    # A callable scoring is a score (higher is better) on the predictions.
    value, higher = metrics.evaluate(
        "score", lambda t, p, w: float(p.mean()), regression, target, raw[:, :1], weight)
    assert higher and value == pytest.approx(raw[:, 0].mean())
