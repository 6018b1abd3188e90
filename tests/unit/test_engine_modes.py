"""Engine modes as settings and specs decide them, without starting anything: where a product's body runs,
the spark-submit command a submit run launches, EMR Serverless's job parameters, and the settings and specs
that are refused before a run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import dagster as dg
import pytest
from pydantic import ValidationError
from pyspark.sql.types import LongType, StructField, StructType

from mesh_assets.checks.outcomes import CheckOutcome, failed_partitions
from mesh_assets.cli import commands
from mesh_assets.engine.submit import submit_command
from mesh_assets.graph.discovery import domain_folder, load_domain
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.model.grain import Grain
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.run.app import APPLICATION
from mesh_assets.run.emr_serverless import submit_parameters
from mesh_assets.run.failures import step_failures
from mesh_assets.run.outcome import RunOutcome, outcome_from_json, outcome_json
from mesh_assets.run.pipeline import engine_mode
from mesh_assets.run.publish import RowsOutsidePartitions
from mesh_assets.run.remote import failure_json
from mesh_assets.run.submit import SubmittedRunFailed, reported_outcome
from mesh_assets.settings import EngineMode, MeshSettings
from mesh_assets.storage.writer import WriteResult

SPEC = """\
name: totals
owner: team:shop
contacts: [{kind: email, value: shop@example.com}]
tables:
  - table: totals
    sql: SELECT 1 AS orders
"""


def shop(tmp_path: Path, extra: str = "") -> Path:
    folder = tmp_path / "domains" / "shop"
    folder.mkdir(parents=True)
    (folder / "totals.yaml").write_text(SPEC + extra)
    return folder


def test_a_product_engine_overrides_the_deployments_mode(tmp_path: Path) -> None:
    folder = shop(tmp_path, "engine: submit\n")
    specs = load_domain(folder)
    node = MeshGraph({"shop": specs}).node("shop", "totals")
    assert engine_mode(node, MeshSettings()) is EngineMode.SUBMIT
    assert domain_folder(node.product) == folder.resolve()
    (folder / "totals.yaml").write_text(SPEC + "engine: session\n")
    node = MeshGraph({"shop": load_domain(folder)}).node("shop", "totals")
    assert engine_mode(node, MeshSettings(engine={"mode": "submit"})) is EngineMode.SESSION
    (folder / "totals.yaml").write_text(SPEC)
    node = MeshGraph({"shop": load_domain(folder)}).node("shop", "totals")
    assert engine_mode(node, MeshSettings(engine={"mode": "submit"})) is EngineMode.SUBMIT


def test_an_unknown_engine_is_refused_naming_the_file_line_and_field(tmp_path: Path) -> None:
    specs = load_domain(shop(tmp_path, "engine: cluster\n"))
    assert [(Path(e.file).name, e.line, e.field, e.message) for e in specs.errors] == [
        ("totals.yaml", 7, "engine", "Input should be 'session' or 'submit'")
    ]


def test_a_submit_run_is_spark_submit_in_client_mode_configured_like_a_session(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "delta-spark_4.2_2.13-4.4.0.jar").touch()
    (jars / ".complete").write_text("pom")
    settings = MeshSettings(home=tmp_path / "home", jars_dir=jars, spark={"master": "spark://10.0.0.5:7077"})
    command = submit_command(settings, "mesh shop.orders", APPLICATION)

    assert Path(command[0]).name == "spark-submit" and Path(command[0]).exists()
    assert command[1:7] == [
        "--master",
        "spark://10.0.0.5:7077",
        "--deploy-mode",
        "client",
        "--name",
        "mesh shop.orders",
    ]
    assert set(command[7:-1:2]) == {"--conf"}
    confs = dict(c.split("=", 1) for c in command[8:-1:2])
    assert confs["spark.jars"] == str(jars / "delta-spark_4.2_2.13-4.4.0.jar")
    assert confs["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert confs["spark.sql.session.timeZone"] == "UTC"
    assert command[-1] == str(APPLICATION) and APPLICATION.exists()
    # Python puts the application's folder first on sys.path: nothing there may shadow an installed module
    assert sorted(p.name for p in APPLICATION.parent.glob("*.py")) == ["__init__.py", "mesh_remote.py"]


def test_an_emr_serverless_job_gets_delta_and_utc_then_the_settings_parameters() -> None:
    extra = "--conf spark.archives=s3://lake/mesh-env.tar.gz#environment"
    settings = MeshSettings(
        engine={
            "launcher": "emr-serverless",
            "emr_serverless": {
                "application_id": "00abc",
                "execution_role_arn": "arn:aws:iam::1:role/mesh",
                "bucket": "lake",
                "spark_submit_parameters": extra,
            },
        }
    )
    parameters = submit_parameters(settings)
    assert "--conf spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in parameters
    assert "--conf spark.sql.session.timeZone=UTC" in parameters
    assert parameters.endswith(extra)
    assert "spark.jars" not in parameters  # the laptop's jar cache means nothing on EMR


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"engine": {"mode": "submit"}, "spark": {"master": "sc://127.0.0.1:15002"}}, "not Spark Connect's"),
        ({"engine": {"launcher": "emr-serverless"}}, "needs engine.emr_serverless.application_id"),
    ],
)
def test_settings_that_cannot_launch_are_refused(values: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MeshSettings(**values)


def test_compute_logs_on_s3_are_written_into_the_instance(tmp_path: Path) -> None:
    settings = MeshSettings(
        compute_logs={"bucket": "mesh-logs", "prefix": "runs"},
        s3={"endpoint": "http://127.0.0.1:9000", "region": "eu-west-1"},
    )
    (tmp_path / "dagster.yaml").write_text(commands.instance_yaml("sqlite", settings))
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        manager = instance.compute_log_manager
        assert type(manager).__name__ == "S3ComputeLogManager"
        assert manager.inst_data.config_dict == {
            "bucket": "mesh-logs",
            "prefix": "runs",
            "upload_interval": 30,
            "endpoint_url": "http://127.0.0.1:9000",
            "use_ssl": False,
            "region": "eu-west-1",
        }
    assert "compute_logs" not in commands.instance_yaml("sqlite", MeshSettings())


def totals_node(tmp_path: Path):
    return MeshGraph({"shop": load_domain(shop(tmp_path))}).node("shop", "totals")


def test_an_outcome_survives_its_trip_from_the_application_to_the_step(tmp_path: Path) -> None:
    node = totals_node(tmp_path)
    valid = next(c for c in node.table.checks if c.check_name == "valid")
    part = PartitionRange.from_keys(Grain.DAILY, "2021-06-01", "2021-06-03")
    checks = [
        CheckOutcome(valid, "2021-06-01", True),
        CheckOutcome(valid, "2021-06-02", False, 2, [{"orders": 1}], {"drift": ["orders: int -> bigint"]}, "boom"),
    ]
    outcome = RunOutcome(
        WriteResult("/wh/shop/totals", 4, 7, {"2021-06-01": 7}, StructType([StructField("orders", LongType())])),
        part,
        checks,
        failed_partitions(checks),
        reads=["/wh/shop/raw"],
        undeclared_reads=("/wh/x/y",),
        undeclared_names=("x.y",),
        column_lineage={"orders": [("/wh/shop/raw", "id")]},
        blocked={"2021-06-03": ["shop.raw 2021-06-03 (not published)"]},
    )
    sent = json.loads(json.dumps(outcome_json(outcome)))  # what a Pipes message carries
    assert outcome_from_json(sent, node, part) == outcome


def test_a_failure_in_the_application_fails_the_step_with_its_own_words(tmp_path: Path) -> None:
    refused = RowsOutsidePartitions(
        description="shop.totals: rows outside the run's partitions 2021-06-01 were refused, nothing was written",
        metadata={"partitions_outside_the_run": ["2021-06-02"]},
    )
    message = json.loads(json.dumps({"failure": failure_json(refused)}))
    node = totals_node(tmp_path)
    with pytest.raises(SubmittedRunFailed) as raised:
        reported_outcome([message], node, None)
    assert raised.value.description == refused.description
    assert raised.value.metadata["partitions_outside_the_run"].value == ["2021-06-02"]
    assert raised.value.metadata["error"].value == "RowsOutsidePartitions"
    with pytest.raises(dg.Failure, match=r"shop\.totals: the Spark application reported no outcome"):
        reported_outcome([], node, None)


def test_a_refusal_in_a_local_run_fails_the_step_as_a_submitted_one_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The body raises Mesh's refusals without Dagster (it may run as a Spark application); in the step they
    become the ``dg.Failure`` a submitted run's report becomes: same words, metadata and error class."""
    node = totals_node(tmp_path)  # classified l1: other errors lose their words
    refused = RowsOutsidePartitions(
        "shop.totals: rows outside the run's partitions 2021-06-01 were refused, nothing was written",
        {"partitions_outside_the_run": ["2021-06-02"]},
    )
    with pytest.raises(dg.Failure) as local, step_failures(node.table):
        raise refused
    with pytest.raises(SubmittedRunFailed) as submitted:
        reported_outcome([json.loads(json.dumps({"failure": failure_json(refused, node)}))], node, None)
    for raised in (local.value, submitted.value):
        assert raised.description == refused.description
        assert raised.metadata["partitions_outside_the_run"].value == ["2021-06-02"]
        assert raised.metadata["error"].value == "RowsOutsidePartitions"

    with pytest.raises(dg.Failure) as quoting, step_failures(node.table):
        raise ValueError("The value 'ann@example.org' cannot be cast to BIGINT")
    here = f"raised at {Path(__file__).relative_to(Path.cwd())}:"
    own_line = "in test_a_refusal_in_a_local_run_fails_the_step_as_a_submitted_one_does"
    assert re.fullmatch(
        re.escape(f"shop.totals failed: [ValueError] {here}")
        + r"\d+ "
        + re.escape(f"{own_line} (message withheld: ")
        + re.escape("shop.totals is classified l1; the full error is in the run's compute log (stderr))"),
        quoting.value.description,
    )
    assert quoting.value.metadata["error"].value == "ValueError"
    assert "ValueError: The value 'ann@example.org' cannot be cast" in capsys.readouterr().err  # the compute log
    own = dg.Failure(description="shop.totals: no partitions to check")
    with pytest.raises(dg.Failure) as passed, step_failures(node.table):
        raise own
    assert passed.value is own


def test_an_application_error_of_a_classified_table_reaches_the_step_as_its_class_alone(tmp_path: Path) -> None:
    node = totals_node(tmp_path)  # classified l1, the default
    quoting = ValueError("The value 'ann@example.org' cannot be cast to BIGINT")
    message = json.loads(json.dumps({"failure": failure_json(quoting, node)}))
    with pytest.raises(SubmittedRunFailed) as raised:
        reported_outcome([message], node, None)
    withheld = (
        "shop.totals failed: [ValueError] "
        "(message withheld: shop.totals is classified l1; the full error is in the run's compute log (stderr))"
    )
    assert raised.value.description == withheld
    refused = RowsOutsidePartitions(description="shop.totals: rows outside the run's partitions were refused")
    assert failure_json(refused, node)["description"] == refused.description  # Mesh's own words are kept
