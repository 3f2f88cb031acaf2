"""The layer rules of pyproject.toml [tool.importlinter], run by import-linter (`lint-imports`).

A wrong import fails here with import-linter's message: the contract, and the import chain that
breaks it with file lines. The second test proves the contracts catch such an import, on a
throwaway tree of the same packages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [str(LINT_IMPORTS) if LINT_IMPORTS.exists() else shutil.which("lint-imports") or "lint-imports"]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_layers_only_point_down() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    kept = re.search(r"Contracts: (\d+) kept, (\d+) broken", result.stdout)
    assert kept is not None and int(kept.group(1)) >= 6 and kept.group(2) == "0", result.stdout


def _package(root: Path, name: str, body: str = "") -> None:
    folder = root.joinpath(*name.split("."))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").write_text(body)


def test_contracts_catch_an_import_that_points_up(tmp_path: Path) -> None:
    config = (ROOT / "pyproject.toml").read_text()
    start = re.search(r"^\[tool\.importlinter\]", config, re.M).start()
    section = config[start : re.search(r"^\[tool\.ruff\]", config, re.M).start()]
    (tmp_path / "pyproject.toml").write_text(section)
    packages = re.search(r"root_packages = \[(.*?)\]", section, re.S).group(1)
    for name in re.findall(r'"([\w.]+)"', packages):
        _package(tmp_path, name)
    for name in ("transforms.marts", "transforms.intermediate", "transforms.staging", "transforms.helpers"):
        _package(tmp_path, name)
    (tmp_path / "contracts" / "pricing.py").write_text("import pipelines\n")
    (tmp_path / "reports" / "costs.py").write_text("from transforms.helpers import dated\n")
    (tmp_path / "transforms" / "helpers" / "dated.py").write_text("")
    (tmp_path / "transforms" / "staging" / "rows.py").write_text("import transforms.marts\n")

    result = _lint_imports(tmp_path)

    assert result.returncode == 1, result.stdout + result.stderr
    assert "contracts.pricing -> pipelines (l.1)" in result.stdout
    assert "reports.costs -> transforms.helpers.dated (l.1)" in result.stdout
    assert "transforms.staging.rows -> transforms.marts (l.1)" in result.stdout
    assert re.search(r"Contracts: 1 kept, 5 broken", result.stdout), result.stdout
