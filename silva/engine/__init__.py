"""silva's compiled engine: one pipeline that every estimator grows its trees with.

Stages, one module each, in the order data flows through them:

- :mod:`silva.engine.binning` — raw features to small integer bin codes (once per fit);
- :mod:`silva.engine.criteria` — per-sample statistic channels and the impurity scores
  computed from their sums;
- :mod:`silva.engine.histogram` — per-node sums of the channels per (feature, bin);
- :mod:`silva.engine.splitting` — the best split of a node, read off its histograms;
- :mod:`silva.engine.grower` — one whole tree grown in one compiled call;
- :mod:`silva.engine.tree` — the flat-array tree and its compiled prediction kernels;
- :mod:`silva.engine.pruning` — minimal cost-complexity pruning (Breiman et al. 1984).

:mod:`silva.engine.random` holds the counter-free RNG that keeps every stage deterministic
whatever the number of threads; :mod:`silva.engine.specialize` compiles a kernel per
criterion, so that a fit compiles only the kernels it reaches, and
:mod:`silva.engine.compile_notice` says so on stderr while it happens.
"""

from silva.engine import compile_notice

compile_notice.install()
