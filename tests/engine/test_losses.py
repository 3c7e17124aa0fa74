"""Losses of silva.engine.losses: finite-difference gradients and hessians, optimal
constants, line searches, links and domain errors."""

import numpy as np
import pytest

from silva.engine import losses

RNG = np.random.RandomState(0)
N = 40


def _targets(name):
    if name in ("log_loss", "exponential"):
        return RNG.randint(0, 2, N).astype(float)
    if name in ("poisson", "tweedie"):
        return RNG.poisson(2.0, N).astype(float)
    if name == "gamma":
        return RNG.gamma(2.0, 1.5, N)
    return RNG.randn(N) * 3


def _make(name):
    if name in ("log_loss", "exponential"):
        return losses.make_loss(name, n_classes=2)
    return losses.make_loss(name, alpha=0.7, power=1.4)


SMOOTH = ["squared_error", "poisson", "gamma", "tweedie", "log_loss", "exponential"]


@pytest.mark.parametrize("name", SMOOTH)
def test_gradient_and_hessian_match_finite_differences(name):
    loss = _make(name)
    y = _targets(name)
    raw = RNG.randn(N, 1) * 0.7
    grad = np.empty((N, 1))
    hess = np.empty((N, 1))
    loss.gradient_hessian(y, raw, grad, hess)
    eps = 1e-5
    numeric_grad = (loss.pointwise(y, raw + eps) - loss.pointwise(y, raw - eps)) / (2 * eps)
    np.testing.assert_allclose(grad[:, 0], numeric_grad, rtol=1e-6, atol=1e-7)
    g_plus = np.empty((N, 1))
    g_minus = np.empty((N, 1))
    loss.gradient_hessian(y, raw + eps, g_plus, np.empty((N, 1)))
    loss.gradient_hessian(y, raw - eps, g_minus, np.empty((N, 1)))
    np.testing.assert_allclose(hess[:, 0], (g_plus - g_minus)[:, 0] / (2 * eps), rtol=1e-6,
                               atol=1e-7)


@pytest.mark.parametrize("name", ["absolute_error", "quantile", "huber"])
def test_piecewise_gradients_match_finite_differences(name):
    # Away from the kinks the gradient is the derivative; the hessian is 1 by design.
    loss = _make(name)
    y = _targets(name)
    raw = y[:, None] + RNG.choice([-1.0, 1.0], N)[:, None] * RNG.uniform(0.1, 8.0, (N, 1))
    loss.update_iteration(y, raw, np.ones(N))
    if name == "huber":
        # delta is one of the residuals (their alpha-quantile): move it off the kink.
        r = np.abs(raw[:, 0] - y)
        assert np.sum(r <= loss.param) == int(np.ceil(0.7 * N))
        loss.param += 1e-3
    grad = np.empty((N, 1))
    hess = np.empty((N, 1))
    loss.gradient_hessian(y, raw, grad, hess)
    eps = 1e-6
    numeric = (loss.pointwise(y, raw + eps) - loss.pointwise(y, raw - eps)) / (2 * eps)
    np.testing.assert_allclose(grad[:, 0], numeric, rtol=1e-5, atol=1e-6)
    assert np.all(hess == 1.0)


def test_multinomial_gradient_and_scaled_hessian():
    K = 4
    loss = losses.make_loss("log_loss", n_classes=K)
    y = RNG.randint(0, K, N).astype(float)
    raw = RNG.randn(N, K)
    grad = np.empty((N, K))
    hess = np.empty((N, K))
    loss.gradient_hessian(y, raw, grad, hess)
    eps = 1e-5
    for k in range(K):
        plus, minus = raw.copy(), raw.copy()
        plus[:, k] += eps
        minus[:, k] -= eps
        numeric = (loss.pointwise(y, plus) - loss.pointwise(y, minus)) / (2 * eps)
        np.testing.assert_allclose(grad[:, k], numeric, rtol=1e-6, atol=1e-8)
        g_plus = np.empty((N, K))
        g_minus = np.empty((N, K))
        loss.gradient_hessian(y, plus, g_plus, np.empty((N, K)))
        loss.gradient_hessian(y, minus, g_minus, np.empty((N, K)))
        diagonal = (g_plus[:, k] - g_minus[:, k]) / (2 * eps)
        # Friedman's (K - 1) / K factor: the hessian is K/(K-1) times the diagonal.
        np.testing.assert_allclose(hess[:, k], K / (K - 1) * diagonal, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(loss.link(raw).sum(axis=1), 1.0)


@pytest.mark.parametrize("name", ["squared_error", "absolute_error", "quantile", "poisson",
                                  "gamma", "tweedie", "log_loss", "exponential"])
def test_initial_constant_minimises_the_loss(name):
    loss = _make(name)
    y = _targets(name)
    w = RNG.uniform(0.5, 2.0, N)
    c = loss.init_raw(y, w)[0]
    best = loss.loss(y, np.full((N, 1), c), w)
    for step in (1e-3, -1e-3, 0.1, -0.1):
        assert loss.loss(y, np.full((N, 1), c + step), w) >= best - 1e-12


def test_textbook_constants():
    y = np.array([1.0, 2.0, 3.0, 10.0])
    w = np.ones(4)
    assert losses.make_loss("squared_error").init_raw(y, w)[0] == 4.0
    assert losses.make_loss("absolute_error").init_raw(y, w)[0] == 2.0
    assert losses.make_loss("poisson").init_raw(y, w)[0] == pytest.approx(np.log(4.0))
    yb = np.array([0.0, 1.0, 1.0, 1.0])
    assert losses.make_loss("log_loss", n_classes=2).init_raw(yb, w)[0] == \
        pytest.approx(np.log(3.0))
    assert losses.make_loss("exponential", n_classes=2).init_raw(yb, w)[0] == \
        pytest.approx(0.5 * np.log(3.0))


def test_line_search_median_quantile_and_huber():
    y = np.array([0.0, 1.0, 2.0, 3.0, 100.0, 5.0, 6.0])
    raw = np.zeros(7)
    w = np.ones(7)
    idx = np.arange(7, dtype=np.int32)
    out = np.empty(2)
    starts = np.array([0, 4])
    ends = np.array([4, 7])
    leaves = (idx, starts, ends, out)
    losses.leaf_line_search(losses.LINE_SEARCH_QUANTILE, 0.5, 0.0, y, raw, w, *leaves)
    assert list(out) == [1.0, 6.0]  # lower weighted medians
    losses.leaf_line_search(losses.LINE_SEARCH_QUANTILE, 0.9, 0.0, y, raw, w, *leaves)
    assert list(out) == [3.0, 100.0]
    # Huber with delta=1 on [5, 6, 100]: median 6, clipped deviations -1, 0, 1 -> 6.
    losses.leaf_line_search(losses.LINE_SEARCH_HUBER, 0.5, 1.0, y, raw, w, *leaves)
    assert out[1] == 6.0
    assert out[0] == pytest.approx(1.0 + (-1 + 0 + 1 + 1) / 4)


def test_links():
    raw = np.array([[0.0], [np.log(3.0)]])
    np.testing.assert_allclose(losses.make_loss("log_loss", n_classes=2).link(raw)[:, 1],
                               [0.5, 0.75])
    np.testing.assert_allclose(losses.make_loss("exponential", n_classes=2).link(raw)[:, 1],
                               [0.5, 0.9])
    np.testing.assert_allclose(losses.make_loss("gamma").link(raw)[:, 0], [1.0, 3.0])


def test_domain_errors():
    w = np.ones(3)
    with pytest.raises(ValueError, match="poisson.*y >= 0"):
        losses.make_loss("poisson").check_y(np.array([1.0, -1.0, 2.0]), w)
    with pytest.raises(ValueError, match="gamma.*y > 0"):
        losses.make_loss("gamma").check_y(np.array([1.0, 0.0, 2.0]), w)
    with pytest.raises(ValueError, match="exponential.*3 classes"):
        losses.make_loss("exponential", n_classes=3)
    with pytest.raises(ValueError, match="power"):
        losses.make_loss("tweedie", power=2.5)
    with pytest.raises(ValueError, match="alpha"):
        losses.make_loss("quantile", alpha=1.0)
    with pytest.raises(ValueError, match="loss must be one of"):
        losses.make_loss("hinge")


def test_custom_objective_validation_names_the_iteration():
    y = np.zeros(5)
    raw = np.zeros((5, 1))
    g = np.empty((5, 1))
    h = np.empty((5, 1))
    bad_shape = losses.make_loss(lambda yt, r: (np.zeros(4), np.ones(4)))
    with pytest.raises(ValueError, match="gradient at iteration 3 has shape"):
        bad_shape.gradient_hessian(y, raw, g, h, iteration=3)
    nan = losses.make_loss(lambda yt, r: (r - yt, np.full_like(r, np.nan)))
    with pytest.raises(ValueError, match="hessian at iteration 7 holds NaN"):
        nan.gradient_hessian(y, raw, g, h, iteration=7)
    quadratic = losses.make_loss(lambda yt, r: (r - yt, np.ones_like(r)))
    assert quadratic.init_raw(np.array([1.0, 2.0, 6.0]), np.ones(3))[0] == pytest.approx(3.0)


@pytest.mark.parametrize("name", ["squared_error", "absolute_error", "huber", "quantile",
                                  "poisson", "gamma", "tweedie", "log_loss",
                                  "exponential"])
def test_each_loss_code_selects_its_own_pointwise_loss(name):
    """The compiled pointwise loss, branching on the loss's named code, agrees with the
    definition in the module docstring."""
    loss = _make(name)
    y = _targets(name)
    f = RNG.randn(N) * 0.7
    r = y - f
    alpha, power = 0.7, 1.4
    expected = {
        "squared_error": 0.5 * r**2,
        "absolute_error": np.abs(r),
        "quantile": np.where(r > 0, alpha * r, (alpha - 1) * r),
        "poisson": np.exp(f) - y * f,
        "gamma": y * np.exp(-f) + f,
        "tweedie": -y * np.exp((1 - power) * f) / (1 - power)
        + np.exp((2 - power) * f) / (2 - power),
        "log_loss": np.log1p(np.exp(f)) - y * f,
        "exponential": np.exp(-(2 * y - 1) * f),
    }
    if name == "huber":
        loss.param = 1.0  # delta
        expected[name] = np.where(np.abs(r) <= 1.0, 0.5 * r**2, np.abs(r) - 0.5)
    np.testing.assert_allclose(loss.pointwise(y, f), expected[name], rtol=1e-10,
                               atol=1e-12)


def test_loss_codes_are_distinct_and_named_on_the_classes():
    classes = [losses.SquaredError, losses.AbsoluteError, losses.Huber, losses.Quantile,
               losses.Poisson, losses.Gamma, losses.Tweedie, losses.BinaryLogLoss,
               losses.MultinomialLogLoss, losses.Exponential]
    codes = [cls.code for cls in classes]
    assert codes == [losses.SQUARED_ERROR, losses.ABSOLUTE_ERROR, losses.HUBER,
                     losses.QUANTILE, losses.POISSON, losses.GAMMA, losses.TWEEDIE,
                     losses.BINARY_LOG_LOSS, losses.MULTINOMIAL_LOG_LOSS, losses.EXPONENTIAL]
    assert len(set(codes)) == len(codes)
    assert losses.AbsoluteError.line_search == losses.LINE_SEARCH_QUANTILE
    assert losses.Quantile.line_search == losses.LINE_SEARCH_QUANTILE
    assert losses.Huber.line_search == losses.LINE_SEARCH_HUBER
    assert losses.LINE_SEARCH_QUANTILE != losses.LINE_SEARCH_HUBER


def test_multinomial_gradient_serial_and_parallel_agree(monkeypatch):
    # Small data takes the serial copy, large the parallel loop over row blocks (three
    # here, the last one short), the boosting loop's pool threads ranges of rows: the
    # same bits every way.
    rng = np.random.default_rng(3)
    n_samples, n_classes = 2 * losses.SOFTMAX_BLOCK_ROWS + 904, 7
    raw = np.asfortranarray(rng.normal(scale=4.0, size=(n_samples, n_classes)))
    y = rng.integers(0, n_classes, n_samples).astype(np.float64)
    loss = losses.MultinomialLogLoss(n_classes)
    results = []
    for min_rows in (0, n_samples + 1):  # parallel, then serial
        monkeypatch.setattr(losses, "GRADIENT_PARALLEL_MIN_ROWS", min_rows)
        grad = np.empty_like(raw, order="F")
        hess = np.empty_like(raw, order="F")
        loss.gradient_hessian(y, raw, grad, hess)
        results.append((grad, hess))
    # Two uneven ranges, neither on a block boundary.
    grad = np.full_like(raw, np.nan, order="F")
    hess = np.full_like(raw, np.nan, order="F")
    for start, stop in ((0, 1234), (1234, n_samples)):
        loss.gradient_hessian_rows(y, raw, grad, hess, start, stop)
    results.append((grad, hess))
    (grad_p, hess_p), (grad_s, hess_s), (grad_r, hess_r) = results
    np.testing.assert_array_equal(grad_p, grad_s)
    np.testing.assert_array_equal(hess_p, hess_s)
    np.testing.assert_array_equal(grad_r, grad_s)
    np.testing.assert_array_equal(hess_r, hess_s)
    # And they are the softmax gradient: p - 1[y == k].
    p = np.exp(raw - raw.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(grad_s, p - (y[:, None] == np.arange(n_classes)), atol=1e-12)
