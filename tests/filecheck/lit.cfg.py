"""lit configuration for Prism's FileCheck tests.

Tools come from the Python environment running lit: ``prism-opt`` and
``filecheck`` are console scripts next to the interpreter, and ``mlir-opt``
ships inside the MLIR tools package.
"""

import os
import sys
from pathlib import Path

import lit.formats
import mlir

config.name = "prism"  # noqa: F821 (lit injects config)
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".mlir"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.excludes = ["lit.cfg.py", "Inputs"]  # noqa: F821

bin_dir = str(Path(sys.executable).parent)
mlir_opt = Path(next(iter(mlir.__path__))) / "bin" / "mlir-opt"
repo = Path(__file__).resolve().parents[2]

# The host is a fixed 2-core AVX2 machine with the default rates, whatever machine runs the tests and whatever
# its calibration says: the checks below read its vector width, cores and caches.
config.environment["PRISM_HOST_CONFIG"] = ""  # noqa: F821
config.environment["PRISM_HOST_DESCRIPTION"] = str(Path(__file__).parent / "Inputs" / "host-avx2.json")  # noqa: F821
config.environment["PATH"] = os.pathsep.join([bin_dir, config.environment.get("PATH", os.environ["PATH"])])  # noqa: F821
# The tools import Prism from the tree that holds these tests (ahead of whatever the environment installed).
config.environment["PYTHONPATH"] = os.pathsep.join(  # noqa: F821
    [str(repo / "python")] + [p for p in [os.environ.get("PYTHONPATH")] if p])
config.substitutions.append(("%mlir-opt", str(mlir_opt)))  # noqa: F821
config.substitutions.append(("%prism-dialect", str(repo / "dialects" / "prism.irdl.mlir")))  # noqa: F821
