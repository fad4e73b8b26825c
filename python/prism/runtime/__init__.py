"""What loads and calls compiled code, apart from what produces it (:mod:`prism.codegen`).

- :mod:`~prism.runtime.cpu`: the JIT and the calling convention of host functions on numpy arrays;
- :mod:`~prism.runtime.pool`: the host's thread pool, compiled into this process;
- :mod:`~prism.runtime.measure`: timing a family's schedules on this machine (``prism-select{measure=K}``);
- :mod:`~prism.runtime.compare`: the numeric check of a proof, a counterexample found on random inputs.

The layers below never import this package: what needs compiled code is handed to them by the caller that
joins the layers (a pass, the driver, the API).
"""
