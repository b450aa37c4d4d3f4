"""The README's "Five-minute tour", run as written: its signature file is built, its Python
session is run as a doctest, and its example of a misspelt type gives the message shown."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def _tour() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("## Five-minute tour"):text.index("## The signature file format")]


def _block_after(text: str, marker: str) -> str:
    """The first fenced code block after `marker`, without its fences."""
    rest = text[text.index(marker):]
    m = re.search(r"^```[a-z]*\n(.*?)^```$", rest, re.S | re.M)
    return m.group(1)


@pytest.fixture(scope="module")
def tour(tmp_path_factory):
    """The tour's folder, with stats.ufunc built into stats.<abi>.so."""
    work = tmp_path_factory.mktemp("tour")
    (work / "stats.ufunc").write_text(_block_after(_tour(), "**1. Write a signature file**"))
    result = subprocess.run([sys.executable, "-m", "ufuncgen", "build", "stats.ufunc", "--name",
                             "stats", "-o", ".", "--cuda-arch", "none"], cwd=work,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return work


def test_the_tours_python_session_prints_what_the_readme_shows(tour):
    session = _block_after(_tour(), "**3. Call it**")
    (tour / "session.txt").write_text(session)
    result = subprocess.run([sys.executable, "-m", "doctest", "session.txt"], cwd=tour,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_tours_misspelt_type_gives_the_message_the_readme_shows(tour):
    text = _tour()
    shown = _block_after(text, "A mistake in the file is reported like a compiler would")
    source = (tour / "stats.ufunc").read_text()
    (tour / "misspelt.ufunc").write_text(source.replace("float32(float32", "flaot32(float32", 1))
    result = subprocess.run([sys.executable, "-m", "ufuncgen", "check", "misspelt.ufunc"],
                            cwd=tour, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr == shown.replace("stats.ufunc", "misspelt.ufunc")
