"""The README is the front door and docs/ the rest: links resolve, commands exist, usage matches --help."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from prism.cli import build_parser
from prism.driver import EMIT_KINDS
from prism.passes import PASSES, PIPELINES
from prism.targets import target_names

README = REPO / "README.md"
USAGE = REPO / "docs" / "usage.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
# The two commands the README promises, exactly as a user types them.
COMMANDS = ("scripts/setup.sh && cmake -S . -B build && cmake --build build --target prism-demo", "scripts/test.sh")


def prose(path: Path) -> str:
    """The page without its fenced code blocks (a link or heading there is code, not Markdown)."""
    return FENCE.sub("", path.read_text())


def anchors(path: Path) -> set[str]:
    """The anchors of a page's headings, as GitHub makes them: lower case, punctuation dropped, spaces to '-'."""
    headings = re.findall(r"^#+\s+(.*)$", prose(path), re.MULTILINE)
    return {re.sub(r"[^a-z0-9 _-]", "", heading.strip().lower()).replace(" ", "-") for heading in headings}


def test_the_readme_is_under_150_lines() -> None:
    assert len(README.read_text().splitlines()) < 150


def test_the_docs_pages_exist() -> None:
    names = {path.name for path in PAGES}
    assert {"usage.md", "iree.md", "architecture.md", "limits.md", "benchmarks.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.relative_to(REPO).as_posix())
def test_every_relative_link_points_to_an_existing_file(page: Path) -> None:
    links = [link for link in LINK.findall(prose(page)) if not re.match(r"[a-z]+:", link)]
    for link in links:
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        assert path.exists(), f"{page.name}: link to {link}: no file {path}"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{page.name}: link to {link}: no heading '{anchor}' in {path.name}"


def test_the_readme_keeps_the_two_commands() -> None:
    text = README.read_text()
    for command in COMMANDS:
        assert command in text, command
    for script in ("scripts/setup.sh", "scripts/test.sh"):
        assert (REPO / script).stat().st_mode & 0o111, f"{script} is not executable"
    assert "add_custom_target(prism-demo" in (REPO / "CMakeLists.txt").read_text()
    assert "scripts/test.sh" in (REPO / ".ci" / "run").read_text()


def test_usage_lists_every_flag_target_and_emit_kind_of_help() -> None:
    usage = USAGE.read_text()
    parser = build_parser()
    for action in parser._actions:
        for flag in action.option_strings:
            if flag not in ("-h", "--help"):
                assert f"`{flag}" in usage, f"docs/usage.md does not list {flag}"
    assert f"--target={'|'.join(target_names())}" in usage
    assert f"--emit={'|'.join(EMIT_KINDS)}" in usage
    for variable in sorted(set(re.findall(r"PRISM_[A-Z_]+", parser.format_help()))):
        assert f"`{variable}`" in usage, f"docs/usage.md does not list {variable}"


def test_every_flag_in_usage_is_one_of_help() -> None:
    flags_section = usage_section("### Flags")
    known = {flag for action in build_parser()._actions for flag in action.option_strings}
    for flag in re.findall(r"`(--?[a-z][a-z-]*)", flags_section):
        assert flag in known, f"docs/usage.md lists {flag}, which prism-opt does not take"


def test_usage_lists_every_pass_with_its_options_and_stages() -> None:
    usage = USAGE.read_text()
    rows = re.findall(r"^\| `(prism-[a-z-]+)` \|(.*)$", usage, re.MULTILINE)
    assert {name for name, _ in rows} == set(PASSES) | set(PIPELINES)
    for name, cls in PASSES.items():
        described = " ".join(row for row_name, row in rows if row_name == name)
        for option in cls.option_names():
            assert f"`{option}`" in described, f"docs/usage.md does not list {name}'s option {option}"
        for stage in cls.STAGES:
            assert f"`{stage}`" in usage, f"docs/usage.md does not list the stage {stage}"


def usage_section(heading: str) -> str:
    """The text of docs/usage.md from ``heading`` to the next heading of the same or a higher level."""
    text = USAGE.read_text()
    level = heading.split()[0]
    start = text.index(heading + "\n")
    rest = text[start + len(heading):]
    end = re.search(rf"^#{{1,{len(level)}}}\s", rest, re.MULTILINE)
    return rest[:end.start()] if end else rest
