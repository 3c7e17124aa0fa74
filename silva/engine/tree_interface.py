"""The one interface every fitted tree offers to readers: exports, plots and JSON dumps.

silva keeps two tree layouts: CART's binary :class:`silva.engine.tree.Tree` (and the
per-tree views of packed ensembles, :class:`silva.engine.ensemble.PackedTreeView`, which
are ``Tree`` objects) and ID3's and C4.5's :class:`silva.engine.multiway.MultiwayTree`.
Both implement :class:`TreeInterface`, so a reader walks either one node by node without
asking which layout it holds. The compiled kernels keep reading each layout's own arrays.

A split is described by a :class:`Split` record. Its branches are numbered as each layout
numbers them: CART's left branch is 0 and right branch 1; a multiway node's branch ``b``
takes category code ``b`` (``"values"``), interval ``b`` (``"intervals"``) or one side of a
threshold (``"threshold"``); -1 is a multiway node's branch of missing values.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Protocol

import numpy as np

__all__ = ["MISSING_BRANCH", "Split", "TreeInterface", "branch_test"]

# Branch number of the branch that only missing values take (ID3's "missing" value).
MISSING_BRANCH = -1


class Split(NamedTuple):
    """How one internal node sends a sample to a child.

    ``kind`` is one of

    - ``"threshold"``: branch 0 takes ``x <= threshold``, branch 1 ``x > threshold``;
    - ``"categories"``: branch 0 takes the codes in ``categories_left``, branch 1 the
      others;
    - ``"values"``: branch ``b`` takes category code ``b``, printed as
      ``category_names[b]`` when names are known;
    - ``"intervals"``: branch ``b`` takes ``bin_edges[b - 1] < x <= bin_edges[b]`` (the
      first and last intervals are open).

    ``branches`` gives the branch number of each child, in the order of
    ``tree.children(node)``. ``missing_branch`` is the branch missing values take; None
    when there is none (C4.5 spreads them over all branches, ID3 classifies them by the
    node's own distribution).
    """

    kind: str
    feature: int
    branches: tuple[int, ...]
    missing_branch: int | None
    threshold: float = math.nan
    categories_left: tuple[int, ...] = ()
    bin_edges: tuple[float, ...] = ()
    category_names: tuple[str, ...] | None = None


class TreeInterface(Protocol):
    """What every fitted silva tree offers, whatever its layout.

    Node ids run from 0 (the root) to ``n_nodes - 1``; a child's id is larger than its
    parent's. Per-node arrays: ``value`` (``(n_nodes, 1, n_values)``: class fractions or
    the predicted value), ``impurity``, ``n_node_samples``, ``weighted_n_node_samples``
    and ``node_depth`` (the root is at depth 0). ``multiway`` says whether a split may
    have more than two branches (ID3, C4.5), which changes how exports draw a split.
    """

    n_features: int
    multiway: bool
    value: np.ndarray
    impurity: np.ndarray
    n_node_samples: np.ndarray
    weighted_n_node_samples: np.ndarray
    node_depth: np.ndarray

    @property
    def n_nodes(self) -> int:
        """Number of nodes."""

    @property
    def max_depth(self) -> int:
        """Depth of the deepest node."""

    def is_leaf(self, node: int) -> bool:
        """Whether ``node`` has no children."""

    def children(self, node: int) -> tuple[int, ...]:
        """Child ids of ``node``, in branch order; empty at a leaf."""

    def split(self, node: int) -> Split:
        """The test at internal ``node``."""

    def node_value(self, node: int) -> np.ndarray:
        """``value[node, 0]``: the node's class fractions or predicted value(s)."""


def branch_test(split: Split, branch: int, decimals: int = 2) -> str:
    """The test of one branch without the feature's name: ``<= 1.50``, ``>  1.50``,
    ``in {0, 2}``, ``not in {0, 2}``, ``= sunny``, ``in (1.00, 2.50]`` or ``is missing``.

    ``"<= "`` and ``">  "`` have the same width, so printed thresholds line up.
    """
    if branch == MISSING_BRANCH:
        return "is missing"
    if split.kind == "threshold":
        return ("<= " if branch == 0 else ">  ") + f"{split.threshold:.{decimals}f}"
    if split.kind == "categories":
        codes = "{" + ", ".join(str(int(code)) for code in split.categories_left) + "}"
        return ("in " if branch == 0 else "not in ") + codes
    if split.kind == "intervals":
        edges = split.bin_edges
        low = "-inf" if branch == 0 else f"{edges[branch - 1]:.{decimals}f}"
        high = "inf" if branch >= len(edges) else f"{edges[branch]:.{decimals}f}"
        return f"in ({low}, {high}]"
    names = split.category_names
    return "= " + (str(names[branch]) if names is not None and branch < len(names)
                   else str(branch))
