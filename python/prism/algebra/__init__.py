"""The algebra: terms with shapes, their laws, proofs of equality and exploration of equivalent forms.

- :mod:`~prism.algebra.ops` declares the terms (egglog) and :mod:`~prism.algebra.laws` the laws;
- :mod:`~prism.algebra.terms` translates Linalg functions into terms, and
  :mod:`~prism.algebra.to_mlir` turns terms back into MLIR;
- :mod:`~prism.algebra.egraph` runs bounded e-graph saturation and proofs of two programs;
- :mod:`~prism.algebra.prove` proves whole modules equal (with a numeric check);
- :mod:`~prism.algebra.explore` extracts the cheapest equivalent form of a function.
"""
