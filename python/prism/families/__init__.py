"""The op families Prism ships beyond the contraction, each one module that assembles its
:class:`~prism.search.families.Family` from its parts and registers it.

A family's parts live in the layers they belong to (its matcher and problem in ``search/``, its space and cost
in ``targets/``, its kernel in ``codegen/``); its module here, above them all, joins them into one object. A
model read off a code generator's own limits (the GPU attention kernels' plans) lives here too, beside it.
Importing :mod:`prism` registers these.

Adding a family (``tests/python/test_families.py`` does it in one file):
1. a problem type with ``roles`` and ``extent(role)`` (what the search reads), and a matcher that returns the
   chain of ops ending at a given op with its problem, or None;
2. per target that schedules it, a :class:`~prism.search.families.FamilyModel`: a space
   (:class:`~prism.search.space.Space`, tested from both sides), the predicted seconds over candidate arrays, a
   bound below them, and the cost as text;
3. per code generator that runs it, a kernel: it finds the chains whose first op carries the family's choice
   attribute (prism-instantiate puts the selected schedule there) and rewrites them;
4. a module here that builds the :class:`~prism.search.families.Family` and calls ``register_family``.
Nothing else changes: prism-lift, prune, select, instantiate, the targets and the host's ``cpu-tile`` look
families up by problem or kind.
"""

from prism.families import attention

__all__ = ["attention"]
