"""Docs that run: every ``python`` block and every ``python -m zoo.`` command of the README, of
CONTRIBUTING.md and of ``docs/`` runs as written, in a fresh folder (issue: the house).

How the examples are run:

* ``python`` blocks of one file run in order in one namespace, so a block may use what an
  earlier one made.
* In ``bash`` blocks, every command starting with ``python -m zoo.`` (or ``stagezoo``) runs in this process (as
  the shell would run it, through the tool's ``main``) and must exit 0. Profiles run on the
  meta device (``device=...`` becomes ``device=meta``) and ``zoo.split`` gets ``--meta`` when it
  has no run to read, unless the block is marked ``<!-- docs: run as written -->``, for
  examples that need measured times; ``zoo.calibrate`` measures for a moment.
* Transcripts (``$ python -m zoo....`` followed by the output lines) run too, and each shown
  line must appear in the output (a line ending in ``...`` is a prefix).
* A block preceded by ``<!-- docs: not run (reason) -->`` is skipped, visibly: the reasons are
  listed in this test's output.
* A block whose mark's reason says ``needs the EXTRA extra`` (``<!-- docs: run as written (needs
  the runtimes extra) -->``) runs in a case of its own, ``FILE[EXTRA]``, marked with the extra's
  marker: it skips where the extra is not installed (the README's own setup installs ``.[dev]``
  only), and ``pytest -m runtimes`` runs it once the extra is there. That case runs the file's
  python blocks too, for the names they define.
"""

from __future__ import annotations

import importlib
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import zoo

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]
_MARK = re.compile(r"<!--\s*docs:\s*(not run|run as written)\s*(?:\((.*)\))?\s*-->")
_NEEDS = re.compile(r"needs the (\w+) extra")
_CALIBRATE_BRIEFLY = ["--seconds", "0.05", "--size", "64", "--megabytes", "1"]


@dataclass
class Block:
    """One fenced code block of a Markdown file."""

    language: str
    code: str
    line: int
    mark: str = ""
    reason: str = ""

    @property
    def extra(self) -> str:
        """The optional extra the block needs (``""``: none)."""
        needs = _NEEDS.search(self.reason)
        return needs.group(1) if needs else ""


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of ``path`` with the mark on the line before each, if any."""
    found, lines = [], path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            language, start = lines[i][3:].strip(), i
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            previous = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
            mark = _MARK.search(previous)
            found.append(Block(language, "\n".join(body), start + 1,
                               mark.group(1) if mark else "", (mark.group(2) or "")
                               if mark else ""))
        i += 1
    return found


def _logical_lines(code: str) -> list[str]:
    joined = code.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip()]


def _as_module(line: str) -> str:
    """``stagezoo TOOL ...`` as the ``python -m zoo.TOOL ...`` that it runs."""
    return f"python -m zoo.{line[len('stagezoo '):]}" if line.startswith("stagezoo ") else line


def _rewrite(args: list[str], as_written: bool) -> list[str]:
    tool, rest = args[2], args[3:]
    if tool == "zoo.calibrate":
        return [tool, *rest, *_CALIBRATE_BRIEFLY]
    if as_written:
        return [tool, *rest]
    if tool == "zoo.profile":
        return [tool, *[a for a in rest if not a.startswith("device=")], "device=meta"]
    if tool == "zoo.split" and not {"--meta", "--server-run", "--device-run"} & set(rest):
        return [tool, *rest, "--meta"]
    return [tool, *rest]


def run_tool(command: list[str], monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture) -> tuple[int, str]:
    """Run ``[tool, *arguments]`` through the tool's ``main`` in this process."""
    module = importlib.import_module(command[0])
    monkeypatch.setattr(sys, "argv", [f"python -m {command[0]}", *command[1:]])
    code = 0
    try:
        module.main()
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    printed = capsys.readouterr()
    return code, printed.out + printed.err


def _check_transcript(block: Block, monkeypatch, capsys, where: str) -> None:
    entries = re.split(r"^\$ ", block.code, flags=re.MULTILINE)[1:]
    for entry in entries:
        command, *expected = entry.splitlines()
        args = shlex.split(command, comments=True)
        _, output = run_tool(args[2:], monkeypatch, capsys)
        for line in filter(None, (e.strip() for e in expected)):
            shown = line[:-3] if line.endswith("...") else line
            assert any(o.startswith(shown) if line.endswith("...") else o.strip() == shown
                       for o in output.splitlines()), f"{where}: {command!r} printed {output!r}"


def _forget_registrations(monkeypatch) -> None:
    """What an example registers (a model, a collector, a count formula, a tool, an
    executor) is forgotten after its file, so that the other tests see the registries as the
    packages fill them."""
    import profiling.collectors.registry as collectors
    import profiling.counting.registry as formulas
    import profiling.runtimes.registry as executors
    import zoo.models.registry as models
    import zoo.tools.registry as tools

    zoo.list_models()  # the zoo's own models are registered before the copy
    tools.registered_tools()
    executors.registered_executors()  # the built-in executors too
    for module, names in ((models, ("_BUILDERS", "_REGISTRATIONS")), (tools, ("_TOOLS",)),
                          (collectors, ("_COLLECTORS", "_ALIASES")), (formulas, ("_FORMULAS",)),
                          (executors, ("_EXECUTORS",))):
        for name in names:
            monkeypatch.setattr(module, name, dict(getattr(module, name)))


def _run_file(path: Path, tmp_path: Path, monkeypatch, capsys, extra: str = "") -> list[str]:
    """Run the blocks of ``path`` that need no extra, or (``extra``) those that need it and
    the python blocks; return what was skipped, with why."""
    _forget_registrations(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "zoo").symlink_to(ROOT / "zoo")  # paths such as zoo/inputs/sample/... resolve
    namespace: dict = {"__name__": "__docs__"}
    skipped = []
    for block in blocks(path):
        where = f"{path.relative_to(ROOT)}:{block.line}"
        if block.mark == "not run":
            skipped.append(f"{where} ({block.reason})")
            continue
        if block.extra != extra and (block.extra or block.language != "python"):
            if block.extra:
                skipped.append(f"{where} (run by the {path.name}[{block.extra}] case)")
            continue
        if block.language == "python":
            exec(compile(block.code, where, "exec"), namespace)
        elif block.language in ("bash", "sh", "shell"):
            for line in map(_as_module, _logical_lines(block.code)):
                if line.startswith("python -m zoo."):
                    command = _rewrite(shlex.split(line, comments=True),
                                       block.mark == "run as written")
                    code, output = run_tool(command, monkeypatch, capsys)
                    assert code == 0, f"{where}: {' '.join(command)} exited {code}: {output}"
        elif block.code.lstrip().startswith("$ python -m zoo."):
            _check_transcript(block, monkeypatch, capsys, where)
    return skipped


def _cases() -> list:
    """One case per file, and one per file and extra that some of its blocks need."""
    cases = []
    for path in DOCS:
        name = str(path.relative_to(ROOT))
        speed = [] if path.name == "README.md" else [pytest.mark.slow]
        cases.append(pytest.param(path, "", id=name, marks=speed))
        for extra in sorted({b.extra for b in blocks(path)} - {""}):
            cases.append(pytest.param(path, extra, id=f"{name}[{extra}]",
                                      marks=[*speed, getattr(pytest.mark, extra)]))
    return cases


@pytest.mark.parametrize("path, extra", _cases())
def test_the_examples_run_as_written(path, extra, tmp_path, monkeypatch, capsys):
    skipped = _run_file(path, tmp_path, monkeypatch, capsys, extra)
    if skipped:
        print(f"not run in {path.name}: " + "; ".join(skipped))


def test_a_block_that_needs_an_extra_runs_in_that_extras_case_only():
    readme = [b for b in blocks(ROOT / "README.md") if b.extra]
    assert [b.extra for b in readme] == ["runtimes"]  # the OpenVINO example
    assert "run.runtime=openvino" in readme[0].code
    case_ids = [c.id for c in _cases()]
    assert "README.md[runtimes]" in case_ids and "README.md" in case_ids


def test_the_marks_are_rare():
    marked = [b for p in DOCS for b in blocks(p) if b.mark == "not run"]
    runnable = [b for p in DOCS for b in blocks(p)
                if b.language == "python" or "python -m zoo." in b.code]
    assert all(b.reason for b in marked), "a skipped block says why"
    assert len(marked) <= len(runnable) // 5
