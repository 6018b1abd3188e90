"""Shared fixtures: one SparkSession and one isolated Mesh home for the whole test session."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import dagster as dg
import pytest
from last_use import RELEASED_AFTER_LAST_USE
from receiver import json_receiver

ROOT = Path(__file__).resolve().parents[1]
HEAVIEST_FIRST = ("e2e", "slow", "spark")
"""Markers by the time a test costs: servers it starts, then seconds of its own, then the shared SparkSession."""
LONGEST_FIRST = (
    "tests/integration/test_kind_deployment.py",  # with the next two, one deployment (tests/deployment.py):
    "tests/integration/test_daemon_end_to_end.py",  # 34 s to start, then 199 s, 282 s and 112 s of tests,
    "tests/integration/test_backfill_daemon.py",  # 634 s in all on one worker at load 12
    "tests/e2e/test_first_run.py",  # `make demo` over seven days, then the README's commands: 206 s setup
    "tests/e2e/test_operator_ui.py",  # five code servers, a webserver, a daemon, Chromium: 111 s
)
"""The files that took longest in the last whole run (``--durations``, 3 workers), longest first: they start
before every other file, whatever their markers, so that none of them starts last and runs alone at the end."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The :data:`LONGEST_FIRST` files run first, then test files whose tests start servers, then slow files,
    then Spark files, then the rest.

    Under ``--dist loadfile`` (``make test``) each worker takes the next file in this order, so the files that
    take minutes overlap with each other and the many short files fill in at the end, rather than one long
    file starting last and running alone. Tests within a file keep their order.
    """

    def tier(item: pytest.Item) -> int:
        marked = [i for i, name in enumerate(HEAVIEST_FIRST) if item.get_closest_marker(name)]
        return min(marked, default=len(HEAVIEST_FIRST))

    files: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        files[path] = min(files.get(path, len(HEAVIEST_FIRST)), tier(item))
    order = {path: i for i, path in enumerate(files)}
    first = {path: i for i, path in enumerate(LONGEST_FIRST)}

    def rank(item: pytest.Item) -> tuple[int, int, int]:
        path = item.nodeid.split("::", 1)[0]
        return first.get(path, len(first)), files[path], order[path]

    items.sort(key=rank)


SHARING_SESSION_FIXTURES = {
    "local_shop, cluster, s3_endpoint (tests/services/conftest.py)": (
        "tests/services/test_emr_serverless.py",
        "tests/services/test_object_storage.py",
        "tests/services/test_spark_connect.py",
        "tests/services/test_spark_standalone.py",
        "tests/services/test_submit_mode.py",
    ),
    "shared_deployment (tests/integration/conftest.py, tests/deployment.py)": (
        "tests/integration/test_backfill_daemon.py",
        "tests/integration/test_daemon_end_to_end.py",
        "tests/integration/test_kind_deployment.py",
    ),
    "served (tests/unit/conftest.py)": (
        "tests/unit/test_backfill_plan.py",
        "tests/unit/test_change_plan.py",
        "tests/unit/test_schema_changes.py",
    ),
}
"""Test files that share session fixtures starting servers or computing a world, by fixture: under ``make test``
one worker runs each group, so each fixture starts once rather than once on every worker that runs one file."""
TOGETHER = {path: group for group, paths in SHARING_SESSION_FIXTURES.items() for path in paths}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile`` with each group of :data:`SHARING_SESSION_FIXTURES` handed out as one unit, in the
    place of its first file in the collection's order; every other file is a unit of its own, as loadfile makes it."""
    if config.getvalue("dist") != "loadfile":
        return None
    missing = [path for path in [*TOGETHER, *LONGEST_FIRST] if not (ROOT / path).is_file()]
    if missing:
        raise pytest.UsageError(f"SHARING_SESSION_FIXTURES or LONGEST_FIRST names files that do not exist: {missing}")
    from xdist.scheduler import LoadFileScheduling

    class SharedFixturesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return TOGETHER.get(path, path)

    return SharedFixturesTogether(config, log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the last test of the session's order that uses a fixture of :data:`RELEASED_AFTER_LAST_USE`, its
    servers stop (``tests/last_use.py``)."""
    yield
    for name, stack in RELEASED_AFTER_LAST_USE.items():
        if name in item.fixturenames and not (nextitem and name in nextitem.fixturenames):
            later = item.session.items[item.session.items.index(item) + 1 :]
            if not any(name in other.fixturenames for other in later):
                stack.close()


LEFT_IN_THE_CHECKOUT = ("spark-warehouse", "metastore_db", "derby.log")
"""What a Spark driver started in the checkout without Mesh's configuration writes into its working directory
(the default warehouse, Hive's metastore and its log): every driver of the suite writes under its home."""


@pytest.fixture(scope="session", autouse=True)
def checkout_stays_clean() -> Iterator[None]:
    """The suite writes nothing into the checkout: a test that leaves a Spark warehouse there fails the session."""
    before = {name for name in LEFT_IN_THE_CHECKOUT if (ROOT / name).exists()}
    yield
    left = sorted(name for name in LEFT_IN_THE_CHECKOUT if (ROOT / name).exists() and name not in before)
    assert not left, f"the tests wrote {left} into the checkout {ROOT}"


@pytest.fixture(scope="session", autouse=True)
def mesh_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every test writes under a throwaway MESH_HOME; jars still come from the checkout's cache."""
    home = tmp_path_factory.mktemp("mesh-home")
    os.environ["MESH_HOME"] = str(home)
    os.environ["MESH_PROJECT_ROOT"] = str(ROOT)
    os.environ["DAGSTER_HOME"] = str(home / "dagster")
    os.environ.setdefault("MESH_SPARK__JIT", "quick")  # every driver here is short-lived or works on small data
    (home / "dagster").mkdir()
    from mesh_assets.settings import get_settings

    get_settings.cache_clear()
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    yield home


@pytest.fixture(autouse=True)
def fresh_settings() -> Iterator[None]:
    """Settings read by one test are not the next one's: a test that points ``MESH_*`` elsewhere and reads the
    settings leaves them cached in the process after its environment is put back."""
    yield
    from mesh_assets.settings import get_settings

    get_settings.cache_clear()


@pytest.fixture(scope="session")
def spark(mesh_home: Path):
    """The one SparkSession of the test session (JVM start-up is paid once)."""
    from mesh_assets import get_spark
    from mesh_assets.engine.session import stop_spark

    session = get_spark()
    yield session
    stop_spark()


@pytest.fixture
def webhook(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[list[dict], Callable[[str], None]]]:
    """A chat-webhook receiver on 127.0.0.1; ``point(domain)`` routes that domain's alerts to it."""
    received: list[dict] = []
    server = json_receiver(lambda _path, body: received.append(body))

    def point(domain: str) -> None:
        monkeypatch.setenv(f"MESH_ALERT_WEBHOOK_{domain.upper()}", f"http://127.0.0.1:{server.server_port}/hook")

    yield received, point
    server.shutdown()
