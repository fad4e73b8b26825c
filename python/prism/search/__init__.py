"""The search over program families: spaces (isl), the family ops, pruning and selection.

- :mod:`~prism.search.space`: a contraction's semantics and the isl representation of a space;
- :mod:`~prism.search.family`: reading and writing ``prism.family`` ops;
- :mod:`~prism.search.cost`: what every target's roofline shares;
- :mod:`~prism.search.search`: prune once, select per shape, shape tables.

Timing the best few points on this machine needs compiled code: :mod:`prism.runtime.measure` does it.
"""
