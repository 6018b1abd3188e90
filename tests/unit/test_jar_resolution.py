"""``mesh setup`` resolves Delta's jars with Maven: a CI log shows none of Maven's output when it works (Maven 3.8
prints colour codes even with ``-q -B``), and all of what it said when it fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mesh_assets.engine.jars import _resolve


def fake_mvn(bin_dir: Path, status: int) -> None:
    """An ``mvn`` that prints what Maven 3.8 prints around a quiet run, then exits with ``status``."""
    bin_dir.mkdir()
    script = bin_dir / "mvn"
    said = "printf '\\033[0m\\033[0m'\necho '[ERROR] no route to the repository'"
    script.write_text(f"#!/bin/sh\n{said}\nexit {status}\n")
    script.chmod(0o755)


def test_a_resolution_that_works_prints_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    fake_mvn(tmp_path / "bin", 0)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "delta-spark_2.13-4.4.0.jar").write_bytes(b"jar")

    assert _resolve(tmp_path / "out") == [tmp_path / "out" / "delta-spark_2.13-4.4.0.jar"]
    printed = capfd.readouterr()
    assert printed.out == "" and printed.err == ""


def test_a_failed_resolution_says_what_maven_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_mvn(tmp_path / "bin", 1)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")

    with pytest.raises(RuntimeError, match=r"(?s)exit status 1.*no route to the repository"):
        _resolve(tmp_path / "out")
