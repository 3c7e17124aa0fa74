"""silva's compiled engine: binning, histograms, splitting, growers, trees.

The stages, in the order data flows through them (drawn in ``docs/architecture.md``):

1. **Binning** — :mod:`~silva.engine.binning`: raw features to small integer bin codes,
   once per fit (missing values and categories get bins of their own).
2. **Statistics** — :mod:`~silva.engine.criteria` (CART's per-sample channels and
   impurities; :mod:`~silva.engine.absolute_error` for medians, which histograms cannot
   give) and :mod:`~silva.engine.losses` (boosting's gradients and hessians;
   :mod:`~silva.engine.vector_exp` for its vectorised ``exp``).
3. **Histograms** — per-node channel sums per (feature, bin):
   :mod:`~silva.engine.histogram` (CART) and :mod:`~silva.engine.gradient_histogram`
   (boosting's sample records and row-block passes).
4. **Splitting** — a node's best split from its histogram:
   :mod:`~silva.engine.splitting` (CART criteria, one compiled copy per criterion through
   :mod:`~silva.engine.specialize`), :mod:`~silva.engine.gradient_splitting`
   (second-order gain), :mod:`~silva.engine.significance` (CHAID-style stopping).
5. **Growers** — one whole tree in one compiled call: :mod:`~silva.engine.grower` (CART)
   and :mod:`~silva.engine.gradient_grower` (boosting; partition in
   :mod:`~silva.engine.partition`), both keeping their books with
   :mod:`~silva.engine.nodes`; :mod:`~silva.engine.cart` holds the bundles a CART tree
   grows from and its one entry, :mod:`~silva.engine.forest` grows many in threads;
   :mod:`~silva.engine.leaf_values` applies boosting's leaf values.
6. **Trees** — what estimators keep and predict with: :mod:`~silva.engine.tree` (binary
   CART trees), :mod:`~silva.engine.multiway` (ID3/C4.5, grown in Python over compiled
   kernels), :mod:`~silva.engine.tree_interface` (what every tree shape offers to
   export, plots and model files), :mod:`~silva.engine.ensemble` (many trees packed
   for one prediction call), :mod:`~silva.engine.pruning` (cost-complexity and
   reduced-error pruning).

:mod:`~silva.engine.random` holds the explicit-state RNG that keeps every stage
deterministic whatever the number of threads; :mod:`~silva.engine.compile_notice` says on
stderr when kernels are being compiled.
"""

from silva.engine import compile_notice

compile_notice.install()
