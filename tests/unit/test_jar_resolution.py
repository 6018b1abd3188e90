"""``mesh setup`` resolves Delta's jars with Maven: a CI log shows none of Maven's output when it works (Maven 3.8
prints colour codes even with ``-q -B``), and all of what it said when it fails; cloud jars only for settings
that use them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mesh_assets.engine.jars import _resolve, cached_extra, extras_for, provision
from mesh_assets.settings import MeshSettings


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


def recording_mvn(bin_dir: Path, calls: Path) -> None:
    """An ``mvn`` that records its arguments and leaves one jar per set in the output folder: Delta's for the
    core set, the AWS bundle for the ``s3a`` profile."""
    bin_dir.mkdir()
    script = bin_dir / "mvn"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        'out=$(printf "%s\\n" "$@" | sed -n "s/^-DoutputDirectory=//p")\n'
        'mkdir -p "$out"\n'
        'case "$*" in *"-P s3a"*) jar=bundle-2.35.4.jar ;; *) jar=delta-spark_4.2_2.13-4.4.0.jar ;; esac\n'
        'touch "$out/$jar"\n'
    )
    script.chmod(0o755)


@pytest.fixture
def mvn_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    calls = tmp_path / "mvn-calls"
    recording_mvn(tmp_path / "bin", calls)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return calls


def test_the_local_default_fetches_no_cloud_jars(tmp_path: Path, mvn_calls: Path) -> None:
    """The local warehouse needs only Delta's core set: the 686 MB AWS SDK bundle is neither fetched nor cached."""
    settings = MeshSettings(home=tmp_path / "home", jars_dir=tmp_path / "jars")
    assert extras_for(settings) == ()

    jars = provision(settings.jars_path, extras_for(settings))

    assert [j.name for j in jars] == ["delta-spark_4.2_2.13-4.4.0.jar"]
    assert len(mvn_calls.read_text().splitlines()) == 1 and "-P" not in mvn_calls.read_text().split()
    assert not (settings.jars_path / "s3a").exists()


def test_settings_on_object_storage_fetch_the_s3a_set_once(tmp_path: Path, mvn_calls: Path) -> None:
    settings = MeshSettings(home=tmp_path / "home", jars_dir=tmp_path / "jars", warehouse="s3a://lake/warehouse")
    assert extras_for(settings) == ("s3a",)

    provision(settings.jars_path)  # the core set alone, as the local default leaves it
    jars = provision(settings.jars_path, extras_for(settings))
    again = provision(settings.jars_path, extras_for(settings))

    assert [j.name for j in cached_extra(settings.jars_path, "s3a")] == ["bundle-2.35.4.jar"]
    assert jars == again and {j.name for j in jars} == {"delta-spark_4.2_2.13-4.4.0.jar", "bundle-2.35.4.jar"}
    calls = mvn_calls.read_text().splitlines()
    assert len(calls) == 2 and calls[1].endswith("-P s3a"), "the core set once, then only the s3a profile"
