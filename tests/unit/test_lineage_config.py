"""Where events go: Mesh's transports, the OpenLineage client's own configuration when Mesh sets none, and
the per-domain rule for undeclared reads (no Spark)."""

from __future__ import annotations

import json
import logging

import pytest
from lineage_runs import sql_run, validate
from receiver import json_receiver

from mesh_assets.lineage.emit import emit, make_client
from mesh_assets.lineage.events import build_event
from mesh_assets.lineage.graph import read_events
from mesh_assets.settings import MeshSettings


def test_http_transport_posts_to_a_marquez_style_endpoint(monkeypatch):
    received: list[tuple[str, dict]] = []
    server = json_receiver(lambda path, body: received.append((path, body)), status=201)
    try:
        settings = MeshSettings(lineage={"transport": "http", "url": f"http://127.0.0.1:{server.server_port}"})
        client = make_client(settings)
        assert emit(client, build_event("COMPLETE", sql_run()))
    finally:
        server.shutdown()
    [(path, event)] = received
    assert path == "/api/v1/lineage"
    validate(event)
    assert event["eventType"] == "COMPLETE" and event["job"]["name"] == "food_delivery.orders_7_days"


def test_console_transport_logs_each_event():
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("openlineage.client.transport.console")
    logger.addHandler(handler)
    level, logger.level = logger.level, logging.INFO
    try:
        client = make_client(MeshSettings(lineage={"transport": "console"}))
        assert emit(client, build_event("START", sql_run()))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    [record] = records
    assert json.loads(record.getMessage())["eventType"] == "START"


def test_http_transport_needs_a_url():
    with pytest.raises(ValueError, match=r"lineage\.url is not set"):
        make_client(MeshSettings(lineage={"transport": "http"}))
    assert make_client(MeshSettings(lineage={"transport": "none"})) is None


@pytest.fixture
def no_client_config(monkeypatch, tmp_path):
    """No OpenLineage configuration from this machine: no variables, no ``openlineage.yml`` found."""
    for name in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_clients_own_configuration_applies_when_mesh_sets_no_transport(no_client_config, monkeypatch):
    tmp_path = no_client_config
    received: list[tuple[str, dict]] = []
    server = json_receiver(lambda path, body: received.append((path, body)), status=201)
    try:
        monkeypatch.setenv("OPENLINEAGE_URL", f"http://127.0.0.1:{server.server_port}")
        assert emit(make_client(MeshSettings(home=tmp_path / "mesh")), build_event("START", sql_run()))
        assert [path for path, _ in received] == ["/api/v1/lineage"]
        own = MeshSettings(home=tmp_path / "mesh", lineage={"transport": "file"})  # Mesh's own setting wins
        assert emit(make_client(own), build_event("COMPLETE", sql_run()))
        assert len(received) == 1 and [e["eventType"] for e in read_events(own.lineage_dir)] == ["COMPLETE"]
    finally:
        server.shutdown()

    monkeypatch.delenv("OPENLINEAGE_URL")
    log_file = tmp_path / "from-openlineage-yml.jsonl"
    (tmp_path / "openlineage.yml").write_text(
        f"transport:\n  type: file\n  log_file_path: {log_file}\n  append: true\n"
    )
    assert emit(make_client(MeshSettings(home=tmp_path / "other")), build_event("START", sql_run()))
    [line] = log_file.read_text().splitlines()
    assert json.loads(line)["job"]["name"] == "food_delivery.orders_7_days"
    assert not (tmp_path / "other" / "lineage").exists()


def test_without_any_configuration_events_go_to_the_files(no_client_config):
    settings = MeshSettings(home=no_client_config / "mesh")
    assert emit(make_client(settings), build_event("START", sql_run()))
    assert [e["eventType"] for e in read_events(settings.lineage_dir)] == ["START"]


def test_undeclared_reads_rule_is_per_domain(monkeypatch):
    settings = MeshSettings(lineage={"undeclared_reads": "warn", "domains": {"finance": {"undeclared_reads": "error"}}})
    assert settings.lineage.undeclared_reads_for("finance") == "error"
    assert settings.lineage.undeclared_reads_for("food_delivery") == "warn"
    monkeypatch.setenv("MESH_LINEAGE__DOMAINS__LX__UNDECLARED_READS", "error")
    assert MeshSettings().lineage.undeclared_reads_for("lx") == "error"
    with pytest.raises(ValueError, match="undeclared_reads"):
        MeshSettings(lineage={"domains": {"lx": {"undeclared_reads": "ignore"}}})
