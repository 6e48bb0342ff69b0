"""environment.yml must list exactly what pyproject.toml asks for (conda users get the same)."""

import re
import tomllib

from ltrlib.config import PROJ_ROOT


def _name_spec(req: str) -> tuple[str, str]:
    m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*(.*)", req)
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def test_environment_yml_mirrors_pyproject():
    project = tomllib.loads((PROJ_ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for reqs in project["optional-dependencies"].values() for r in reqs]
    wanted = dict(_name_spec(r) for r in project["dependencies"] + extras)
    listed = {}
    for line in (PROJ_ROOT / "environment.yml").read_text().splitlines():
        m = re.match(r"\s*-\s+([A-Za-z0-9_.-]+\s*[<>=!~].*)$", line)
        if m and not line.strip().startswith("- -e"):
            name, spec = _name_spec(m.group(1))
            listed[name] = spec
    assert listed.pop("python") == "=3.11"
    assert listed == wanted


def test_ci_runs_the_readme_test_command():
    ci = (PROJ_ROOT / ".ci" / "run").read_text()
    readme = (PROJ_ROOT / "README.md").read_text()
    assert "make test" in ci
    assert "make test" in readme.split("\n## ")[0]  # among the opening commands
    assert "make reproduce" in readme.split("\n## ")[0]
