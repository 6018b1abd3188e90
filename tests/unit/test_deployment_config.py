"""What production settings turn into, without starting anything: Spark configuration per master and
storage, the Connect server's command, the instance file `mesh setup` writes, SQL bound for Connect."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import dagster as dg
import pytest
from pydantic import ValidationError

from mesh_assets.cli import commands
from mesh_assets.engine.connect_server import SERVER_CLASS, server_command
from mesh_assets.engine.jars import JarsMissingError, cached_extra
from mesh_assets.engine.session import s3a_credentials, spark_conf
from mesh_assets.graph.queries import bind_parameters
from mesh_assets.settings import MeshSettings, get_settings


@pytest.fixture
def jars(tmp_path: Path) -> Path:
    """A jar cache as `mesh setup` leaves it: the core set and the s3a set in its own folder."""
    cache = tmp_path / "jars"
    (cache / "s3a").mkdir(parents=True)
    for name in ("delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar"):
        (cache / name).touch()
    for name in ("hadoop-aws-3.5.0.jar", "bundle-2.35.4.jar"):
        (cache / "s3a" / name).touch()
    (cache / ".complete").write_text("pom")
    return cache


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def settings(jars: Path, **values) -> MeshSettings:
    return MeshSettings(home=jars.parent / "home", jars_dir=jars, **values)


def test_a_local_warehouse_loads_only_the_core_jars_and_no_object_storage(jars: Path, no_aws) -> None:
    conf = spark_conf(settings(jars))
    assert conf["spark.jars"].split(",") == [str(p) for p in sorted(jars.glob("*.jar"))]
    assert not any(key.startswith("spark.hadoop.fs.s3a") for key in conf)
    assert "spark.driver.extraClassPath" not in conf


def test_an_s3a_warehouse_adds_the_s3a_jars_and_configures_the_store(
    jars: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key-id")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    s3 = {"endpoint": "http://127.0.0.1:9000", "region": "us-east-1", "path_style_access": True}
    conf = spark_conf(settings(jars, warehouse="s3a://lake/warehouse", s3=s3))
    s3a = [str(jars / "s3a" / "bundle-2.35.4.jar"), str(jars / "s3a" / "hadoop-aws-3.5.0.jar")]
    assert conf["spark.driver.extraClassPath"].split(":") == s3a  # local: on the class path, never copied
    assert not any("s3a" in Path(j).parent.name for j in conf["spark.jars"].split(","))
    cluster = spark_conf(settings(jars, warehouse="s3a://lake/warehouse", spark={"master": "spark://127.0.0.1:7077"}))
    assert cluster["spark.jars"].split(",")[-2:] == s3a and "spark.driver.extraClassPath" not in cluster
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "us-east-1"
    # secrets never become Spark configuration (it is the JVM's command line); the running session gets them
    assert not any("secret" in value or "key-id" in value for value in conf.values())
    assert s3a_credentials() == {"fs.s3a.access.key": "key-id", "fs.s3a.secret.key": "secret"}


def test_a_session_token_switches_to_temporary_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b", "AWS_SESSION_TOKEN": "c"}.items():
        monkeypatch.setenv(name, value)
    credentials = s3a_credentials()
    assert credentials["fs.s3a.session.token"] == "c"
    assert credentials["fs.s3a.aws.credentials.provider"].endswith("TemporaryAWSCredentialsProvider")


def test_without_credentials_in_the_environment_hadoops_default_chain_applies(no_aws) -> None:
    assert s3a_credentials() == {}


def test_s3_credentials_are_not_settings() -> None:
    with pytest.raises(ValueError, match="access_key"):
        MeshSettings(s3={"access_key": "in-a-file"})


def test_a_connect_client_sends_no_jars(jars: Path) -> None:
    assert "spark.jars" not in spark_conf(settings(jars, spark={"master": "sc://127.0.0.1:15002"}))


def test_missing_s3a_jars_name_the_fix(jars: Path) -> None:
    for jar in (jars / "s3a").glob("*.jar"):
        jar.unlink()
    with pytest.raises(JarsMissingError, match="mesh setup"):
        cached_extra(jars, "s3a")


def test_the_connect_server_runs_pysparks_server_class_with_mesh_jars_and_delta(jars: Path) -> None:
    command = server_command(settings(jars), host="127.0.0.1", port=15099)
    assert command[command.index("--class") + 1] == SERVER_CLASS
    conf = dict(arg.split("=", 1) for arg in command[1:] if "=" in arg and arg.startswith("spark."))
    assert conf["spark.connect.grpc.binding.address"] == "127.0.0.1"
    assert conf["spark.connect.grpc.binding.port"] == "15099"
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert str(jars / "delta-spark_4.2_2.13-4.4.0.jar") in conf["spark.jars"]
    with pytest.raises(ValueError):
        server_command(settings(jars), master="sc://elsewhere:15002")


def test_window_bounds_are_bound_as_typed_literals_for_connect() -> None:
    sql = "SELECT ':partition_end' AS s, x FROM t WHERE d BETWEEN :partition_start AND :partition_end AND y = :other"
    bound = bind_parameters(sql, {"partition_start": date(2021, 6, 1), "partition_end": date(2021, 6, 7)})
    assert bound == (
        "SELECT ':partition_end' AS s, x FROM t WHERE d BETWEEN CAST('2021-06-01' AS DATE) "
        "AND CAST('2021-06-07' AS DATE) AND y = :other"
    )
    hourly = bind_parameters("SELECT * FROM t WHERE h = :partition_start", {"partition_start": datetime(2021, 6, 1, 5)})
    assert hourly == "SELECT * FROM t WHERE h = CAST('2021-06-01 05:00:00+00:00' AS TIMESTAMP)"


@pytest.fixture
def dagster_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(lambda: None))
    get_settings.cache_clear()
    yield tmp_path / "dagster.yaml"
    get_settings.cache_clear()


def test_setup_writes_the_instance_the_setting_names_and_leaves_a_foreign_file_alone(dagster_home: Path) -> None:
    commands.persistent_instance()
    assert "storage:" not in dagster_home.read_text()  # SQLite files under DAGSTER_HOME
    commands.persistent_instance("postgres")
    postgres = dagster_home.read_text()
    assert postgres.startswith(commands.WRITTEN_BY_MESH)
    assert "password: {env: DAGSTER_PG_PASSWORD}" in postgres and "concurrency:" in postgres
    dagster_home.write_text("storage: {}\n")
    commands.persistent_instance("sqlite")
    assert dagster_home.read_text() == "storage: {}\n"


def test_the_daemon_asks_for_each_domains_tick_on_its_own_thread(tmp_path: Path) -> None:
    # One sensor per domain, evaluated in the domain's code server; the daemon waits for each on a thread of its
    # own, so a domain whose evaluation is slow does not hold back the others (the dbt models' sensor, evaluated
    # by the daemon itself, gets threads too).
    (tmp_path / "dagster.yaml").write_text(commands.instance_yaml("sqlite"))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        sensors, automation = instance.get_settings("sensors"), instance.get_settings("auto_materialize")
        assert instance.auto_materialize_use_sensors  # sensors evaluated in code servers need it
    assert sensors["use_threads"] is True and sensors["num_workers"] >= 2
    assert automation["use_threads"] is True and automation["num_workers"] >= 2


def test_the_session_time_zone_stays_utc_whatever_the_settings_say():
    from mesh_assets.engine.session import spark_conf
    from mesh_assets.settings import MeshSettings

    settings = MeshSettings(spark={"conf": {"spark.sql.session.timeZone": "Europe/Madrid"}})
    assert spark_conf(settings)["spark.sql.session.timeZone"] == "UTC"


def documented_production_config() -> str:
    """The example production ``mesh.yaml`` of docs/deployment.md, as written there."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "deployment.md").read_text()
    return text.split("### Example production `mesh.yaml`", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]


def test_the_documented_production_config_loads_and_a_key_mesh_does_not_know_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key of the documented example means something; a stray one (the example once had a
    ``partition_start`` that nothing read; first partitions are a product's or its domain's ``start_date``) or a
    typo in a section is refused by name instead of being ignored."""
    config = tmp_path / "mesh.yaml"
    monkeypatch.setenv("MESH_CONFIG", str(config))
    config.write_text(documented_production_config())
    loaded = MeshSettings()
    assert (loaded.instance, loaded.warehouse, loaded.lineage.undeclared_reads_for("finance")) == (
        "postgres",
        "s3a://acme-mesh/warehouse",
        "error",
    )
    for stray, name in [
        ('partition_start: "2021-01-01"\n', "partition_start"),
        ("automation:\n  intervall_seconds: 5\n", "automation.intervall_seconds"),
        ("spark:\n  mastr: local[2]\n", "spark.mastr"),
    ]:
        config.write_text(stray)
        with pytest.raises(ValidationError) as refused:
            MeshSettings()
        assert [(".".join(map(str, e["loc"])), e["type"]) for e in refused.value.errors()] == [
            (name, "extra_forbidden")
        ]
