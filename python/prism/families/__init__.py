"""The op families Prism ships beyond the contraction, each one module that assembles its
:class:`~prism.search.families.Family` from its parts and registers it.

A family's parts live in the layers they belong to (its matcher and problem in ``search/``, its space and cost
in ``targets/``, its kernel in ``codegen/``); its module here, above them all, joins them into one object.
Importing :mod:`prism` registers these.
"""

from prism.families import attention

__all__ = ["attention"]
