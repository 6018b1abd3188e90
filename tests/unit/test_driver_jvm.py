"""A driver's JVM options: the class-data archive ``mesh setup`` made, when the driver's class path is Spark's
own, and the settings' JIT (with interpreted projections when quick); and a session Mesh starts maps Spark's
classes from that archive."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mesh_assets.engine.jvm import QUICK, QUICK_CONF, archive_path, java_options
from mesh_assets.engine.session import application_conf, spark_conf
from mesh_assets.settings import MeshSettings, get_settings

ROOT = Path(__file__).resolve().parents[2]


def settings_with(tmp_path: Path, **spark: str) -> MeshSettings:
    return MeshSettings(home=tmp_path / "home", jars_dir=tmp_path / "jars", spark=spark)


def test_the_archive_is_used_once_it_exists_and_only_on_sparks_own_class_path(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, jit="tiered")
    archive = archive_path(settings.jars_path)
    assert archive is not None and archive.parent == tmp_path / "jvm"
    assert java_options(settings, {}) == []

    archive.parent.mkdir()
    archive.write_bytes(b"archived classes")
    assert java_options(settings, {}) == [f"-XX:SharedArchiveFile={archive}"]
    assert java_options(settings, {"spark.driver.extraClassPath": "/opt/s3a.jar"}) == []


def test_quick_compiles_with_c1_alone_and_keeps_the_code_cache_both_compilers_share(tmp_path: Path) -> None:
    quick = java_options(settings_with(tmp_path, jit="quick"), {})
    assert quick == list(QUICK)
    assert "-XX:TieredStopAtLevel=1" in quick
    assert "-XX:ReservedCodeCacheSize=240m" in quick  # C1 alone gets 48 MB, which a long session fills


def test_quick_interprets_sparks_projections_wherever_the_application_runs(tmp_path: Path) -> None:
    """Local drivers and submitted applications alike (``application_conf`` is what spark-submit and EMR get);
    whole-stage code generation is left on, and a setting's own ``spark.conf`` still wins."""
    quick, tiered = settings_with(tmp_path, jit="quick"), settings_with(tmp_path, jit="tiered")
    assert QUICK_CONF == {"spark.sql.codegen.factoryMode": "NO_CODEGEN"}
    assert application_conf(quick)["spark.sql.codegen.factoryMode"] == "NO_CODEGEN"
    local = MeshSettings(home=tmp_path / "home", spark={"jit": "quick"})  # the checkout's jars
    assert spark_conf(local)["spark.sql.codegen.factoryMode"] == "NO_CODEGEN"
    assert "spark.sql.codegen.wholeStage" not in application_conf(quick)
    assert "spark.sql.codegen.factoryMode" not in application_conf(tiered)
    mine = MeshSettings(home=tmp_path, spark={"jit": "quick", "conf": {"spark.sql.codegen.factoryMode": "FALLBACK"}})
    assert application_conf(mine)["spark.sql.codegen.factoryMode"] == "FALLBACK"


def test_the_test_sessions_driver_interprets_projections_and_a_product_may_generate_them_again(spark) -> None:
    """The suite's drivers are quick (``tests/conftest.py``): the live session carries the setting. Spark cannot
    build ``spark.catalog.listTables``' rows without generated code; the deployment guide's way back works."""
    assert spark.conf.get("spark.sql.codegen.factoryMode") == "NO_CODEGEN"
    assert spark.range(5).selectExpr("named_struct('a', id, 'b', array(id, id * 2)) AS s").collect()[4].s.b == [4, 8]
    spark.sql("CREATE DATABASE IF NOT EXISTS quick_listing")
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW listed AS SELECT 1 AS one")
    try:
        spark.conf.set("spark.sql.codegen.factoryMode", "FALLBACK")
        assert "listed" in [table.name for table in spark.catalog.listTables("quick_listing")]
    finally:
        spark.conf.set("spark.sql.codegen.factoryMode", "NO_CODEGEN")
        spark.sql("DROP VIEW IF EXISTS listed")


def test_the_drivers_options_keep_mesh_logging_and_add_the_jvm_options(tmp_path: Path) -> None:
    settings = MeshSettings(home=tmp_path / "home", spark={"jit": "quick"})  # the checkout's jars and archive
    java = spark_conf(settings)["spark.driver.extraJavaOptions"].split()
    assert java[0] == f"-Dderby.system.home={tmp_path / 'home' / 'derby'}"
    assert java[1].startswith("-Dlog4j.configurationFile=")
    assert java[2:] == [f"-XX:SharedArchiveFile={archive_path(settings.jars_path)}", *QUICK]


@pytest.mark.slow
def test_a_session_mesh_starts_maps_sparks_classes_from_the_archive_setup_made(tmp_path: Path) -> None:
    archive = archive_path(get_settings().jars_path)
    assert archive is not None and archive.exists(), "make test (mesh setup) makes the archive"
    loaded = tmp_path / "classes.log"
    code = "from mesh_assets import get_spark; assert get_spark().range(3).count() == 3"
    env = {
        **os.environ,
        "MESH_HOME": str(tmp_path / "home"),
        "SPARK_SUBMIT_OPTS": f"-Xlog:class+load=info:file={loaded}",
    }
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env, cwd=ROOT, timeout=300)

    text = loaded.read_text()
    assert "org.apache.spark.SparkContext source: shared objects file (top)" in text
    shared = text.count("source: shared objects file (top)")
    assert shared > 10 * text.count("source: jar:"), "most classes come from the archive, not from jars"
