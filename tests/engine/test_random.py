"""The compiled SplitMix64 generator against a pure-Python reference."""

import numba as nb
import numpy as np
import pytest

from silva.engine.random import (
    next_uint64,
    randint,
    seed_from_random_state,
    shuffle_in_place,
    uniform,
)

_MASK = (1 << 64) - 1


def _splitmix64_naive(state, n):
    """SplitMix64 (Steele, Lea & Flood 2014) on Python integers."""
    out = []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & _MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        out.append(z ^ (z >> 31))
    return out


@nb.njit(cache=True)
def _draws(seed, n, high):
    state = np.empty(1, dtype=np.uint64)
    state[0] = seed
    words = np.empty(n, dtype=np.uint64)
    for i in range(n):
        words[i] = next_uint64(state)
    state[0] = seed
    floats = np.empty(n)
    for i in range(n):
        floats[i] = uniform(state)
    state[0] = seed
    integers = np.empty(n, dtype=np.int64)
    for i in range(n):
        integers[i] = randint(state, high)
    return words, floats, integers


def test_draws_equal_the_reference_generator():
    seed = 1234567
    words, floats, integers = _draws(np.uint64(seed), 1000, 7)
    expected = _splitmix64_naive(seed, 1000)
    assert [int(w) for w in words] == expected
    # The reference's published first word for seed 0.
    assert int(_draws(np.uint64(0), 1, 2)[0][0]) == 0xE220A8397B1DCDAF
    # uniform: the top 53 bits over 2**53; randint: floor(uniform * high)
    np.testing.assert_array_equal(floats, [(w >> 11) / 2.0**53 for w in expected])
    np.testing.assert_array_equal(integers, np.floor(floats * 7).astype(np.int64))
    assert floats.min() >= 0.0 and floats.max() < 1.0
    assert set(integers.tolist()) == set(range(7))


def test_seed_from_random_state_follows_the_numpy_state():
    a = seed_from_random_state(np.random.RandomState(3))
    b = seed_from_random_state(np.random.RandomState(3))
    c = seed_from_random_state(np.random.RandomState(4))
    assert a == b != c and a.dtype == np.uint64 and a < 2**63


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**31 - 1, 2**32 - 1])
def test_seeded_random_state_draws_as_a_new_random_state(seed):
    from silva.engine.random import seeded_random_state

    expected = np.random.RandomState(seed)
    first = expected.randint(0, 1000, 50)
    then = expected.uniform(size=5)
    reseeded = seeded_random_state(seed)
    np.testing.assert_array_equal(reseeded.randint(0, 1000, 50), first)
    np.testing.assert_array_equal(reseeded.uniform(size=5), then)
    # Reseeding starts the stream over, whatever was drawn in between.
    seeded_random_state(seed + 1 if seed < 2**32 - 1 else 0).uniform(size=3)
    np.testing.assert_array_equal(seeded_random_state(seed).randint(0, 1000, 50), first)


def test_seeded_random_state_is_one_generator_per_thread():
    from concurrent.futures import ThreadPoolExecutor

    from silva.engine.random import seeded_random_state

    # Threads reseeding at once each draw their own seed's stream (a shared generator
    # would hand one thread's state to another).
    def draws(seed):
        generator = seeded_random_state(seed)
        return [generator.randint(0, 2**30) for _ in range(200)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(draws, range(40)))
    for seed, values in enumerate(results):
        np.testing.assert_array_equal(values, np.random.RandomState(seed).randint(0, 2**30, 200))


@nb.njit(cache=True)
def _shuffle_by_randint(values, state):
    for i in range(values.shape[0] - 1, 0, -1):
        j = randint(state, i + 1)
        values[i], values[j] = values[j], values[i]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 28, 257])
def test_shuffle_in_place_draws_as_a_loop_of_randint(n):
    """The shuffle the split search visits features in, which keeps the generator's
    state in a register and draws every swap partner before the swaps: the permutation of
    a loop of ``randint`` calls, and the state left where that loop leaves it. Its
    scratch is as long as ``values``, as the split search's is."""
    for seed in (0, 1, 2**63 + 12345):
        state = np.array([seed], dtype=np.uint64)
        reference_state = state.copy()
        values = np.arange(n, dtype=np.int64)
        reference = values.copy()
        shuffle_in_place(values, state, np.empty(n, dtype=np.uint64))
        _shuffle_by_randint(reference, reference_state)
        assert np.array_equal(values, reference)
        assert state[0] == reference_state[0]
        assert np.array_equal(np.sort(values), np.arange(n))
        if n == 257:
            assert not np.array_equal(values, np.arange(n))  # it does shuffle
