"""A tiny explicit-state RNG for compiled code.

numba's ``np.random`` keeps one hidden state per thread, so a result would depend on which
thread drew a number. silva instead threads an explicit ``uint64`` state through every
kernel that draws, and derives independent sub-streams (one per feature, per tree) from it
on the main thread. The generator is SplitMix64 (Steele, Lea & Flood 2014): one 64-bit
word of state, full period 2**64, and good enough statistical quality for choosing
features and thresholds.
"""

import threading

import numpy as np

from silva.engine.jit import kernel

GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


@kernel(inline="always")
def mix_state(z):
    """SplitMix64's output function of an advanced state ``z``. With ``GOLDEN_GAMMA``
    (the state's increment) it lets a kernel keep the state in a local while drawing:
    ``state += GOLDEN_GAMMA``, then ``mix_state(state)``, is :func:`next_uint64`'s draw."""
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


@kernel(inline="always")
def next_uint64(state):
    """Advance ``state`` (a length-1 uint64 array) and return the next 64-bit draw."""
    state[0] += GOLDEN_GAMMA
    return mix_state(state[0])


@kernel(inline="always")
def unit_float(draw):
    """A 64-bit ``draw`` as a float64 in [0, 1): its top 53 bits over 2**53."""
    return np.float64(draw >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel(inline="always")
def uniform(state):
    """A float64 drawn uniformly from [0, 1), from the top 53 bits of a draw."""
    return unit_float(next_uint64(state))


@kernel(inline="always")
def uniform_after(state_value, k):
    """:func:`uniform`'s ``k``-th draw (from 1) from a state holding ``state_value``,
    without the state array: the state only advances by ``GOLDEN_GAMMA``, so any draw is
    at hand without the ones before it."""
    return unit_float(mix_state(state_value + GOLDEN_GAMMA * np.uint64(k)))


@kernel(inline="always")
def first_uniform(seed):
    """:func:`uniform`'s first draw from a state set to ``seed``, without the state array
    (whose allocation, once per feature of every node, was a third of an extra-trees fit).
    """
    return uniform_after(np.uint64(seed), 1)


@kernel(inline="always")
def randint(state, high):
    """An integer drawn uniformly from [0, high); ``high`` must be positive."""
    return np.int64(uniform(state) * high)


@kernel(inline="always")
def shuffle_in_place(values, state, partners):
    """Fisher-Yates shuffle of ``values`` (Knuth, TAOCP vol. 2, algorithm P, from the
    last position down): position ``i`` swapped with one drawn by ``randint(state, i +
    1)``, the very draws and order of a loop of :func:`randint` calls. ``partners``: a
    scratch array (uint64) of at least ``values.shape[0] - 1`` entries.

    The draws are made first, all of them, into ``partners``, then the swaps: draw ``k``
    (from 1) mixes the state advanced ``k`` times, which needs no earlier draw, so the
    draws' iterations do not wait on one another (nor on the swaps' stores), and the state
    is stored once. With one loop drawing and swapping in turn, the split search's shuffle
    of the features at every node of a forest's trees made its function (mostly this
    shuffle, in extra trees' rows-only copy) about a twentieth of an extra-trees
    classifier's fit on 16,000 x 28 rows and 7.1% of one on 2,000 rows (perf); 4.3% with
    the draws first."""
    n = values.shape[0]
    n_draws = max(n - 1, 0)
    start = state[0]
    for k in range(n_draws):
        # Position n - 1 - k takes draw k + 1, scaled as randint's to its n - k candidates.
        partners[k] = np.uint64(np.int64(uniform_after(start, k + 1) * (n - k)))
    for k in range(n_draws):
        i = n - 1 - k
        j = np.int64(partners[k])
        values[i], values[j] = values[j], values[i]
    state[0] = start + GOLDEN_GAMMA * np.uint64(n_draws)


# One legacy generator per thread, reseeded by seeded_random_state.
_THREAD_LOCAL = threading.local()


def seeded_random_state(seed):
    """A ``np.random.RandomState`` in the state ``np.random.RandomState(seed)`` starts in.

    The same draws, about ten times cheaper: a new ``RandomState`` first seeds itself from
    the OS's entropy (about 80 us) before the integer seed replaces that state, and a
    forest makes two per tree (its bootstrap and its engine seed), about a fifth of a
    tree's fit on a small table. This reseeds one generator kept per thread instead
    (``RandomState.seed``: the legacy seeding, as the constructor's). Use the result at
    once, before the same thread calls this again, which reseeds it.
    """
    random_state = getattr(_THREAD_LOCAL, "random_state", None)
    if random_state is None:
        random_state = _THREAD_LOCAL.random_state = np.random.RandomState()
    random_state.seed(seed)
    return random_state


def seed_from_random_state(random_state):
    """A uint64 seed drawn from a numpy ``RandomState`` (the scikit-learn convention)."""
    return np.uint64(random_state.randint(0, 2**63 - 1, dtype=np.int64))
