"""The layout keeps one home per concern: thin passes, and a library that never imports them."""

from __future__ import annotations

import ast

from conftest import REPO

ENTRY_POINTS = {"api.py", "cli.py", "driver.py"}
PIPELINE = REPO / "python" / "prism" / "infra" / "pipeline.py"


def imported_modules(path) -> set[str]:  # noqa: ANN001
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_passes_are_thin_adapters() -> None:
    for path in (REPO / "passes").glob("*.py"):
        assert len(path.read_text().splitlines()) <= 150, f"{path.name} is over 150 lines"


def test_only_entry_points_import_the_passes() -> None:
    library = [p for p in (REPO / "python" / "prism").rglob("*.py")
               if p.relative_to(REPO / "python" / "prism").as_posix() not in ENTRY_POINTS and p != PIPELINE]
    assert len(library) > 20
    for path in library:
        assert not any(m == "prism.passes" or m.startswith("prism.passes.") for m in imported_modules(path)), path


def test_nothing_switches_on_the_kind_of_target() -> None:
    """Code asks a target; only the targets package names the target classes."""
    for path in (REPO / "python" / "prism").rglob("*.py"):
        if "targets" in path.parts:
            continue
        text = path.read_text()
        for word in ("GpuTarget", "GpuModel", "NvidiaTarget", "AmdGpuTarget", "HostTarget", "is_gpu"):
            assert word not in text, f"{path} mentions {word}"


# DESIGN §3's layers, lowest first: a module imports from its own layer and the ones below, never above.
LAYERS = {
    "prism.infra": 0, "prism.dialects": 0,
    "prism.kernels": 1, "prism.search": 1, "prism.algebra": 1,
    "prism.targets": 2,
    "prism.codegen": 3,
    "prism.runtime": 4,
    "prism.passes": 5,
    "prism.families": 6, "prism.api": 6, "prism.cli": 6, "prism.driver": 6, "prism.calibrate": 6,
    "prism.summary": 6, "prism": 6,
}
# The pipeline parser looks the pass registry up when it runs: the one accepted upward import.
ACCEPTED = {("prism.infra.pipeline", "prism.passes")}


def module_files() -> dict[str, object]:
    """Every module of the package by its dotted name (``passes/`` and ``dialects/`` mapped into it)."""
    found = {}
    for root, package in ((REPO / "python" / "prism", "prism"), (REPO / "passes", "prism.passes"),
                          (REPO / "dialects", "prism.dialects")):
        for path in root.rglob("*.py"):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_lines(tree: ast.Module) -> set[int]:
    """The lines of ``if TYPE_CHECKING:`` blocks: imports there are annotations, never run."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for inner in node.body:
                lines.update(range(inner.lineno, (inner.end_lineno or inner.lineno) + 1))
    return lines


def dependencies(name: str, path, modules: set[str], run_only: bool = False) -> set[str]:  # noqa: ANN001
    """The package's modules that ``name`` imports, anywhere in it (``run_only``: leaving out the imports of
    ``if TYPE_CHECKING:`` blocks). ``from package import module`` depends on that module."""
    tree = ast.parse(path.read_text())
    skipped = _type_checking_lines(tree) if run_only else set()
    found = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skipped:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("prism"):
            subs = {f"{node.module}.{alias.name}" for alias in node.names} & modules
            found |= subs if subs and len(subs) == len(node.names) else {node.module, *subs}
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("prism"))
    return {m for m in found if m in modules and m != name}


def layer(name: str) -> int:
    """The layer of the longest prefix of ``name`` that LAYERS names."""
    return max((len(prefix), rank) for prefix, rank in LAYERS.items()
               if name == prefix or name.startswith(prefix + "."))[1]


def test_every_module_has_a_layer() -> None:
    for name in module_files():
        assert any(name == p or name.startswith(p + ".") for p in LAYERS), f"{name} belongs to no layer"


def test_no_import_runs_up_the_layers() -> None:
    """infra <- kernels, search, algebra <- targets <- codegen <- runtime <- passes <- api, cli, driver."""
    files = module_files()
    upward = [f"{name} imports {dep}" for name, path in files.items() for dep in dependencies(name, path, set(files))
              if layer(dep) > layer(name) and not any(name == a and dep.startswith(b) for a, b in ACCEPTED)]
    assert not upward, "\n".join(sorted(upward))


def test_the_lower_layers_import_no_code_generator_or_runtime() -> None:
    """What needs compiled code is handed down by the caller that joins the layers."""
    files = module_files()
    for name, path in files.items():
        if layer(name) <= LAYERS["prism.targets"]:
            bad = {d for d in dependencies(name, path, set(files)) if layer(d) >= LAYERS["prism.codegen"]}
            assert not bad or name == "prism.infra.pipeline", f"{name} imports {sorted(bad)}"


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as the modules along it, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return path[path.index(dep):] + [dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycle() -> None:
    """Between the package's modules, counting every import that runs, at load time or in a function."""
    files = module_files()
    graph = {name: dependencies(name, path, set(files), run_only=True) for name, path in files.items()}
    graph["prism.infra.pipeline"] -= {m for m in graph["prism.infra.pipeline"] if m.startswith("prism.passes")}
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle)


def test_the_checks_catch_an_upward_import_and_a_cycle() -> None:
    assert layer("prism.search.family") < layer("prism.targets.base") < layer("prism.codegen.cpu")
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
