"""Governance of a product reading its own past, and the code versions Dagster compares for staleness."""

from __future__ import annotations

import textwrap
from pathlib import Path

from mesh_assets.graph.discovery import load_all
from mesh_assets.graph.resolve import MeshGraph
from mesh_assets.graph.validate import validate

HEADER = """
from mesh_assets import ExternalTable, Input, Output, Product, chat, previous
p = Product("{name}", owner="o@example.com", contacts=[chat("#o")], start_date="2021-06-01"{extra})
"""


def product(folder: Path, name: str, body: str, extra: str = "") -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(HEADER.format(name=name, extra=extra)) + textwrap.dedent(body))


def domains(tmp_path: Path, **bodies: str) -> Path:
    folder = tmp_path / "domains" / "sales"
    folder.mkdir(parents=True)
    product(folder, "raw", "", extra=', external=[ExternalTable(table="events")]')
    for name, body in bodies.items():
        product(folder, name, body)
    return tmp_path / "domains"


RUNNING = """
@p.transformation(
    Output(table="running"),
    inputs={"e": Input(table="events"), "before": Input(table="running", window=previous(1))},
)
def running(e, before):
    return e
"""


def test_a_product_may_read_its_own_earlier_partitions_and_nothing_else_that_way(tmp_path):
    foreign = """
    @p.transformation(Output(table="copied"), inputs={"e": Input(table="events", window=previous(2))})
    def copied(e):
        return e
    """
    loop = """
    @p.transformation(Output(table="looped"), inputs={"me": Input(table="looped")})
    def looped(me):
        return me
    """
    errors = validate(load_all(domains(tmp_path, running=RUNNING, copied=foreign, looped=loop)))

    messages = sorted(f"{Path(e.file).name}: {e.message}" for e in errors)
    assert messages == [
        "copied.py: window 'previous' reads a table's own past: only sales.copied may use it here, not sales.events",
        "looped.py: dependency cycle: sales.looped -> sales.looped",
    ]


def test_the_code_version_changes_with_the_transformation_and_not_with_a_reload(tmp_path):
    folder = domains(tmp_path, running=RUNNING)
    first = MeshGraph(load_all(folder)).node("sales", "running").table.code_version
    assert first is not None and first == MeshGraph(load_all(folder)).node("sales", "running").table.code_version

    (folder / "sales" / "running.py").write_text(
        (folder / "sales" / "running.py").read_text().replace("return e", "return e.limit(1)")
    )
    assert MeshGraph(load_all(folder)).node("sales", "running").table.code_version != first


def test_the_revision_covers_the_product_and_the_code_version_only_what_computes_rows(tmp_path):
    folder = tmp_path / "sales"
    folder.mkdir()
    spec = folder / "orders.yaml"
    spec.write_text(
        textwrap.dedent(
            """\
            name: orders
            owner: sales@example.com
            contacts: [{kind: chat, value: "#sales"}]
            external: [{table: raw}]
            tables:
              - table: orders
                inputs: [{table: raw}]
                sql: SELECT id FROM sales.raw
            """
        )
    )

    def versions() -> tuple[str | None, str | None]:
        table = MeshGraph(load_all(tmp_path)).get("sales", "orders")
        return table.code_version, table.revision

    code, revision = versions()
    spec.write_text(
        spec.read_text().replace(
            'contacts: [{kind: chat, value: "#sales"}]', 'contacts:\n  - {kind: chat, value: "#sales-data"}'
        )
    )
    assert versions()[0] == code and versions()[1] != revision  # a product field, its input a line lower
    code, revision = versions()
    spec.write_text(spec.read_text().replace("SELECT id", "SELECT id, 1 AS one"))
    assert versions()[0] != code and versions()[1] != revision
