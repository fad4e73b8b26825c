"""What a kernel will do, as pure functions of extents: the decisions that both a target's cost model and its
code generator need.

The code generator calls these with the integers of one op; the cost model calls them with numpy arrays, one
entry per candidate schedule. Each rule is written here once, so the cost can never describe a kernel the
code generator does not build. The package sits below ``targets/`` and ``codegen/`` and imports neither.
"""
