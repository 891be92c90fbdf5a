"""The install story stays coherent: environment.yml == pyproject.toml, and CI runs the README's test command."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _norm(req: str) -> str:
    return re.sub(r"\s+", "", req).lower().replace("_", "-")


def pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = set(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs |= {r for r in extra if not r.startswith(project["name"] + "[")}
    return {_norm(r) for r in reqs}


def environment_requirements() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    return {_norm(r) for r in pip if not r.startswith("-e")}


def test_environment_yml_matches_pyproject():
    py, env = pyproject_requirements(), environment_requirements()
    assert py == env, f"only in pyproject: {sorted(py - env)}; only in environment.yml: {sorted(env - py)}"


def test_environment_yml_installs_the_package_itself():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert "-e ." in pip


def test_torch_requirement_is_a_range_not_a_pin():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    torch = [d for d in deps if d.startswith("torch")]
    assert torch and "==" not in torch[0], torch


def readme_commands() -> list[str]:
    """The fenced ``bash`` blocks of the README section "The two commands"."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", section, re.S)]


def test_readme_has_exactly_two_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert len(commands) == 2, commands
    assert all("\n" not in c for c in commands), "each command is one line a reader can paste"
    book, test = commands
    assert "jupyter-book build" in book and "pytest" in test
    assert test in (ROOT / ".ci" / "run").read_text(), ".ci/run must run exactly the README's test command"
