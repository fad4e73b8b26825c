"""Every ``prism.*`` name Prism reads or writes in IR, declared once.

The attributes are discardable: IR that carries them stays plain MLIR that
any tool parses (``mlir-opt --irdl-file=dialects/prism.irdl.mlir``).
"""

from __future__ import annotations

# The sGraph dialect's one op: the header of a family's payload function.
FAMILY_OP = "prism.family"
# A private function that prism-lift outlined around one contraction.
FAMILY_BODY = "prism.family_body"
# On a contraction: each loop's role ("batch", "m", "n", "k"), and the chosen schedule.
ROLES = "prism.roles"
CHOICE = "prism.choice"
# On the scores' product of an attention chain: the attention family's chosen schedule (BQ, BKV, RM, RN, KVS).
ATTENTION_CHOICE = "prism.attention"
# On an argument: a weight, the same on every call (prism-explore prepares values of it once).
INVARIANT = "prism.invariant"
# On prism-explore's _prepare and _apply functions: the function they implement together.
PART_OF = "prism.part_of"
# On a lowered host function: its tensor-level type, which the runtime reads.
SIGNATURE = "prism.signature"
# On a function: the relations among its arguments' sizes that its ops assume (prism.codegen.shapes).
SHAPE_RULES = "prism.shape_rules"
# On a function @f whose weights can be prepared once (by @f_prepare, then used by @f_apply):
# the indices of @f's arguments that @f_prepare takes, and for each argument of @f_apply where it comes
# from: i >= 0 is @f's argument i, -(j + 1) is @f_prepare's result j.
PREPARE_ARGS = "prism.prepare_args"
APPLY_ARGS = "prism.apply_args"
# Tags the code generators put on the ops a transform script must find; gone from their output.
CPU_CONTRACTION_TAG = "prism.lower_id"
CPU_TRANSPOSE_TAG = "prism.transpose_id"
GPU_KERNEL_TAG = "prism.gpu_op"
GPU_FILL_TAG = "prism.gpu_fill"
