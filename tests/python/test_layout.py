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
        for word in ("GpuTarget", "HostTarget", "is_gpu"):
            assert word not in text, f"{path} mentions {word}"
