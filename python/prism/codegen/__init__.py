"""Code generators: libraries of named stages, from tuned Linalg on tensors to an artifact.

- :mod:`~prism.codegen.cpu`: the host, down to the LLVM dialect (then :mod:`~prism.runtime.cpu` runs it);
- :mod:`~prism.codegen.gpu`: NVIDIA GPUs, down to PTX.

Both build their transform scripts with one builder (:mod:`~prism.codegen.transform`)
and run upstream pieces through one runner that turns MLIR diagnostics into
Prism errors (:mod:`~prism.codegen.upstream`). A stage is a named function
from IR to IR (:mod:`~prism.codegen.stages`); a driver can print the IR after
any of them (``prism-opt --print-ir-after=cpu-bufferize``).
"""
