"""The README's commands, tested as written (parsed from the README itself, never copied into this file).

* the test command is what ``.ci/run`` runs, verbatim, and the only pytest run there;
* the book command builds with ``-W`` (a failing cell must fail the build, not publish a traceback) and ``-n``;
* the advice for a quick build really reaches every command of the book command's ``&&`` chain: the advice and
  the command run in bash exactly as written, each command replaced by a stand-in that records the
  ``SHOULDERS_SCALE`` it sees (nothing is installed or built; the whole file takes well under a second);
* the screenshot command's arguments are ones the script accepts.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def bash_blocks(text: str) -> list[str]:
    """The contents of the fenced ```bash blocks, in order."""
    return re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M)


def commands() -> dict[str, str]:
    """``{"book": line, "tests": line}``: the README's two commands (one-line fenced bash blocks)."""
    found = {}
    for block in bash_blocks(README):
        lines = [line for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
        for line in lines:
            if "jupyter-book build" in line:
                found.setdefault("book", line.strip())
            elif re.search(r"\bpytest\b", line):
                found.setdefault("tests", line.strip())
    assert set(found) == {"book", "tests"}, f"the README's fenced bash blocks hold {sorted(found)} commands"
    return found


def chain(line: str) -> list[list[str]]:
    """The simple commands of an ``a && b && c`` line, each as its words (shell quoting removed)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    parts: list[list[str]] = [[]]
    for token in lexer:
        if token == "&&":
            parts.append([])
        else:
            assert token not in {";", "|", "||", "&", "(", ")"}, f"not a plain && chain: {line!r}"
            parts[-1].append(token)
    assert all(parts), f"an empty command in {line!r}"
    return parts


def test_ci_runs_exactly_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    test_command = commands()["tests"]
    assert test_command in [line.strip() for line in ci], ".ci/run does not run the README's test command verbatim"
    pytest_lines = [line for line in ci if re.search(r"\bpytest\b", line) and not line.lstrip().startswith("#")]
    assert [line.strip() for line in pytest_lines] == [test_command], f"other pytest runs in .ci/run: {pytest_lines}"


def test_the_test_command_runs_at_smoke_scale_by_default():
    conftest = (ROOT / "conftest.py").read_text()
    assert 'os.environ.setdefault("SHOULDERS_SCALE", "smoke")' in conftest
    assert re.search(r"SHOULDERS_SCALE`? defaults to `?smoke`? for the tests", README), "the README no longer says so"


def test_book_command_fails_on_warnings_and_failed_cells():
    build = next(words for words in chain(commands()["book"]) if "build" in words and "jupyter-book" in words[0])
    assert "-W" in build, "without -W a failing cell still ends 'build succeeded' and publishes its traceback"
    assert "-n" in build and "--keep-going" in build
    assert build[-1] == ".", "the book is built from the repository root (_config.yml, _toc.yml)"


def scale_advice() -> list[str]:
    """Every inline-code span of the README that sets ``SHOULDERS_SCALE=smoke`` (the quick-build advice)."""
    spans = re.findall(r"(?<!`)`([^`\n]+)`(?!`)", README)
    return [s for s in spans if re.search(r"(^|\s)SHOULDERS_SCALE=smoke(\s|$)", s)]


def run_as_written(advice: str, line: str, tmp_path: Path) -> list[str]:
    """Run ``advice`` then ``line`` in bash as a reader would (a separate line if the advice is a statement of its
    own, i.e. starts with ``export``; else as a prefix of the command), every command of the chain replaced by a
    stand-in that logs the ``SHOULDERS_SCALE`` it sees. Returns the log, one line per command run."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash on this machine")
    log, fake_bin = tmp_path / "scale.log", tmp_path / "fake-bin"
    fake_bin.mkdir(parents=True)
    stand_in = '#!/bin/sh\necho "$(basename "$0") ${SHOULDERS_SCALE-unset}" >> "$SCALE_LOG"\n'
    for words in chain(line):
        exe = Path(words[0])
        target = tmp_path / exe if len(exe.parts) > 1 else fake_bin / exe
        assert not exe.is_absolute(), f"the README's command uses an absolute path: {exe}"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(stand_in)
        target.chmod(0o755)
    script = f"{advice}\n{line}\n" if advice.startswith("export ") else f"{advice} {line}\n"
    env = {k: v for k, v in os.environ.items() if k != "SHOULDERS_SCALE"}
    env.update(PATH=f"{fake_bin}{os.pathsep}{env.get('PATH', '')}", SCALE_LOG=str(log))
    done = subprocess.run([bash, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return log.read_text().splitlines() if log.exists() else []


def test_quick_build_advice_reaches_every_command_of_the_book_command(tmp_path):
    advice = scale_advice()
    assert advice, "the README no longer says how to build the book at smoke scale"
    line = commands()["book"]
    n = len(chain(line))
    for i, text in enumerate(advice):
        seen = run_as_written(text, line, tmp_path / str(i))
        assert len(seen) == n, f"{text!r} + the book command ran {len(seen)} of its {n} commands: {seen}"
        assert all(entry.endswith(" smoke") for entry in seen), (
            f"the advice {text!r} does not reach every command of the book command (each command and the scale "
            f"it saw: {seen}); a VAR=value prefix reaches only the first command of an && chain: use export")


def test_a_prefix_would_have_been_caught(tmp_path):
    """The check above can fail: the old advice (a prefix on the && chain) reaches only the first command."""
    seen = run_as_written("SHOULDERS_SCALE=smoke", commands()["book"], tmp_path)
    assert seen[0].endswith(" smoke") and not all(entry.endswith(" smoke") for entry in seen)


def test_screenshot_command_arguments_are_accepted():
    line = next(s for s in re.findall(r"`([^`\n]+)`", README) if "scripts/screenshot_widget.py" in s)
    words = shlex.split(line)
    at = next(i for i, w in enumerate(words) if w.endswith("scripts/screenshot_widget.py"))
    assert (ROOT / words[at]).is_file()
    spec = importlib.util.spec_from_file_location("screenshot_widget", ROOT / words[at])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = module.parser().parse_args(words[at + 1:])
    assert (ROOT / "book" / Path(args.page).with_suffix(".md").name).is_file(), f"no chapter for {args.page}"
