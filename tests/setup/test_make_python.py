"""The Makefile makes the venv with a Python that pyproject.toml admits, or says what to install.

Real ``make`` with a PATH of its own: fake interpreters (shell scripts that answer the version
probe and record what they are asked to do), or links to the real Pythons of this machine. No
venv is really made.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.services import missing

pytestmark = pytest.mark.spec("OP5")

ROOT = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make") or "make"
SENTENCE = (
    "tmsite needs Python 3.11, 3.12 or 3.13 and found none (tried: {tried}): install one, for "
    "example with 'apt-get install python3.11' or 'pyenv install 3.13', or name it with "
    "PYTHON=/path/to/python3.x.\n"
)
DEFAULT_TRIED = "python3 python3.13 python3.12 python3.11"

FAKE = """#!/bin/sh
# A Python {version} that makes no venv: it records what it was asked.
if [ "$1" = "-c" ]; then echo {version}; exit 0; fi
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  /bin/mkdir -p "$3/bin"
  printf '#!/bin/sh\\necho "pip $*" >> {log}\\n' > "$3/bin/pip"
  /bin/chmod +x "$3/bin/pip"
  echo "$(/usr/bin/basename "$0") -m venv $3" >> {log}
  exit 0
fi
exit 9
"""


def _fakes(where: Path, log: Path, **versions: str) -> Path:
    where.mkdir()
    for name, version in versions.items():
        path = where / name.replace("_", ".")
        path.write_text(FAKE.format(version=version, log=log))
        path.chmod(0o755)
    return where


def _make(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHON", "MAKEFLAGS", "MFLAGS"}}
    return subprocess.run(
        [MAKE, "-s", *args],
        cwd=ROOT,
        env={**env, "PATH": str(path)},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_requires_python_admits_exactly_the_versions_the_makefile_looks_for() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11,<3.14"


def test_no_supported_python_stops_make_with_one_sentence(tmp_path: Path) -> None:
    log = tmp_path / "asked.log"
    path = _fakes(tmp_path / "bin", log, python3="3.14", python3_10="3.10", python3_12="3.14")
    venv = tmp_path / "venv"
    done = _make(path, f"VENV={venv}", f"{venv}/bin/python")
    assert done.returncode == 2
    assert done.stderr.startswith(SENTENCE.format(tried=DEFAULT_TRIED))
    assert not venv.exists() and not log.exists()
    asked = _make(path, "which-python")
    assert (asked.returncode, asked.stdout) == (2, "")
    assert asked.stderr.startswith(SENTENCE.format(tried=DEFAULT_TRIED))


def test_a_named_python_of_another_version_is_refused_by_name(tmp_path: Path) -> None:
    path = _fakes(tmp_path / "bin", tmp_path / "asked.log", python3_14="3.14", python3="3.11")
    done = _make(path, "PYTHON=python3.14", "which-python")
    assert done.returncode == 2
    assert done.stderr.startswith(SENTENCE.format(tried="python3.14"))


@pytest.mark.parametrize(
    ("versions", "chosen"),
    [
        ({"python3": "3.12"}, "python3"),
        ({"python3": "3.13", "python3_11": "3.11"}, "python3"),
        ({"python3": "3.14", "python3_11": "3.11"}, "python3.11"),
        ({"python3": "3.10", "python3_12": "3.12", "python3_11": "3.11"}, "python3.12"),
    ],
)
def test_the_venv_is_made_with_the_first_supported_python(
    tmp_path: Path, versions: dict[str, str], chosen: str
) -> None:
    log = tmp_path / "asked.log"
    path = _fakes(tmp_path / "bin", log, **versions)
    venv = tmp_path / "venv"
    done = _make(path, f"VENV={venv}", f"{venv}/bin/python")
    assert done.returncode == 0, done.stderr
    assert log.read_text().splitlines() == [
        f"{chosen} -m venv {venv}",
        "pip install -q --upgrade pip",
    ]


def _real_pythons() -> dict[str, Path]:
    """This machine's real interpreters of the supported versions, by minor version."""
    found = {"3.11": Path(sys.executable)} if sys.version_info[:2] == (3, 11) else {}
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    for minor in ("3.11", "3.12", "3.13"):
        for candidate in sorted(root.glob(f"versions/{minor}.*/bin/python{minor}")):
            found.setdefault(minor, candidate)
    return found


@pytest.mark.parametrize("minor", ["3.11", "3.12", "3.13"])
def test_a_real_python_is_found_and_proceeds(tmp_path: Path, minor: str) -> None:
    real = _real_pythons().get(minor)
    if real is None:
        missing(f"Python {minor} is not on this machine", f"pyenv install {minor}")
    path = tmp_path / "bin"
    path.mkdir()
    (path / "python3").symlink_to(real)
    done = _make(path, "which-python")
    assert (done.returncode, done.stdout, done.stderr) == (0, "python3\n", "")
    (path / "python3").unlink()
    (path / f"python{minor}").symlink_to(real)
    done = _make(path, "which-python")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"python{minor}\n", "")
    dry = _make(path, "-n", f"VENV={tmp_path / 'venv'}", f"{tmp_path / 'venv'}/bin/python")
    assert dry.returncode == 0
    assert '"$python" -m venv' in dry.stdout
