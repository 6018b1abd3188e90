"""A lineage server that is down never slows a run, and loses nothing: its events wait on disk and are
delivered, once each and in order, when it is back (no Spark)."""

from __future__ import annotations

import json
import socket
import time

import pytest
from lineage_runs import sql_run
from lineage_server import lineage_server

from mesh_assets.cli import main
from mesh_assets.lineage.emit import emit, make_client, spool_dir
from mesh_assets.lineage.events import build_event
from mesh_assets.lineage.run import run_events
from mesh_assets.settings import MeshSettings, get_settings


class Log:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, text: str) -> None:
        self.warnings.append(text)


def settings_for(url: str, home, **lineage) -> MeshSettings:
    return MeshSettings(home=home, lineage={"transport": "http", "url": url, **lineage})


def one_run(settings: MeshSettings, table: str = "orders_7_days") -> tuple[Log, float]:
    """A product run's START and COMPLETE as a run emits them; the log it wrote and the seconds they cost."""
    log, d = Log(), sql_run()
    d.table = table
    began = time.perf_counter()
    with run_events(log, settings, d):
        pass
    return log, time.perf_counter() - began


@pytest.fixture
def silent_server():
    """A port that accepts connections and never answers: the slowest a lineage server can be."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


def test_one_attempt_with_a_short_timeout_instead_of_the_clients_retries(tmp_path):
    transport = make_client(settings_for("http://127.0.0.1:9", tmp_path)).transport
    assert transport.inner.config.timeout == 2.0  # the client's default is 5 s
    retry = transport.inner.session.get_adapter("http://127.0.0.1:9/api/v1/lineage").max_retries
    assert (retry.connect, retry.read, retry.status, retry.other) == (0, 0, 0, 0)  # the client's: 5 with backoff


def test_the_clients_own_http_configuration_is_tried_once_too(tmp_path, monkeypatch):
    """`OPENLINEAGE_URL` without a Mesh transport: the same single attempt and the same waiting folder."""
    for name in ("OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED", "MESH_LINEAGE__TRANSPORT", "MESH_LINEAGE__URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENLINEAGE_URL", "http://127.0.0.1:9")
    settings = MeshSettings(home=tmp_path / "mesh")
    log, seconds = one_run(settings)
    assert seconds < 1.0
    assert len(list(spool_dir(settings).glob("*.json"))) == 2 and "http://127.0.0.1:9" in log.warnings[0]


def test_a_run_with_the_server_down_is_not_slowed_and_its_events_wait_on_disk(tmp_path, silent_server):
    settings = settings_for("http://127.0.0.1:9", tmp_path)  # nothing listens: refused at once
    log, seconds = one_run(settings)
    assert seconds < 1.0  # the client's default retries took about 9 s per event
    kept = sorted(spool_dir(settings).glob("*.json"))
    assert [json.loads(p.read_text())["eventType"] for p in kept] == ["START", "COMPLETE"]
    first, second = log.warnings
    assert first.startswith("OpenLineage event delayed: lineage server http://127.0.0.1:9 did not take the event")
    assert f"kept in {kept[0]}" in first and "or `mesh lineage --flush`" in first
    assert "ConnectionError" in second and f"kept in {kept[1]}, 2 event(s) waiting" in second

    slow = settings_for(silent_server, tmp_path / "slow", timeout_seconds=0.3)
    log, seconds = one_run(slow)
    assert seconds < 1.0  # one timeout for the run: COMPLETE is kept without trying again
    assert len(list(spool_dir(slow).glob("*.json"))) == 2
    assert "ReadTimeout" in log.warnings[0] or "timed out" in log.warnings[0]


def test_when_the_server_is_back_the_next_run_delivers_the_waiting_events_once_in_order(tmp_path):
    served = lineage_server()
    try:
        settings = settings_for(served.url, tmp_path)
        served.down = True  # up, answering 503
        one_run(settings, "orders")
        one_run(settings, "menus")
        assert len(list(spool_dir(settings).glob("*.json"))) == 4 and served.events == []
        served.down = False
        log, _ = one_run(settings, "orders_7_days")
        assert log.warnings == []
        assert [(e["job"]["name"], e["eventType"]) for e in served.events] == [
            ("food_delivery.orders", "START"),
            ("food_delivery.orders", "COMPLETE"),
            ("food_delivery.menus", "START"),
            ("food_delivery.menus", "COMPLETE"),
            ("food_delivery.orders_7_days", "START"),
            ("food_delivery.orders_7_days", "COMPLETE"),
        ]
        assert list(spool_dir(settings).glob("*.json")) == []
    finally:
        served.shutdown()


def test_mesh_lineage_flush_delivers_what_waits(tmp_path, monkeypatch, capsys):
    served = lineage_server()
    monkeypatch.setenv("MESH_HOME", str(tmp_path))
    monkeypatch.setenv("MESH_LINEAGE__TRANSPORT", "http")
    monkeypatch.setenv("MESH_LINEAGE__URL", served.url)
    get_settings.cache_clear()
    try:
        served.down = True
        assert not emit(make_client(get_settings()), build_event("START", sql_run()), Log().warning)
        assert main.main(["lineage", "--flush"]) == 1
        said = " ".join(capsys.readouterr().out.split())
        assert f"1 event(s) still waiting for {served.url}" in said and "HTTPError: 503" in said
        served.down = False
        assert main.main(["lineage", "--flush"]) == 0
        said = " ".join(capsys.readouterr().out.split())
        assert f"delivered 1 waiting event(s) to {served.url}" in said
        assert [e["eventType"] for e in served.events] == ["START"]
        assert main.main(["lineage", "--flush"]) == 0
        assert f"no events waiting for {served.url}" in " ".join(capsys.readouterr().out.split())
        assert len(served.events) == 1
    finally:
        get_settings.cache_clear()
        served.shutdown()


def test_flush_without_a_lineage_server_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MESH_HOME", str(tmp_path))
    monkeypatch.setenv("MESH_LINEAGE__TRANSPORT", "file")
    get_settings.cache_clear()
    try:
        assert main.main(["lineage", "--flush"]) == 2
    finally:
        get_settings.cache_clear()
    assert "events are not sent to a lineage server" in " ".join(capsys.readouterr().out.split())


def test_a_delivery_under_way_elsewhere_is_left_to_finish_and_nothing_is_sent_twice(tmp_path):
    """Two processes emitting at once: while one delivers the waiting events (it holds the folder's lock),
    the other keeps its own event behind them instead of sending the same files again or jumping the queue."""
    served = lineage_server()
    try:
        settings = settings_for(served.url, tmp_path)
        served.down = True
        one_run(settings, "orders")
        served.down = False
        delivering = make_client(settings).transport
        with delivering._lock(wait=True):
            log, _ = one_run(settings, "menus")
        assert served.events == [] and "earlier events still waiting" in log.warnings[0]
        assert delivering.deliver().waiting == 0
    finally:
        served.shutdown()
    assert [(e["job"]["name"], e["eventType"]) for e in served.events] == [
        ("food_delivery.orders", "START"),
        ("food_delivery.orders", "COMPLETE"),
        ("food_delivery.menus", "START"),
        ("food_delivery.menus", "COMPLETE"),
    ]
