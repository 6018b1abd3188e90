"""The catalog: other domains known from data, bounded spec parsing, and entries that cannot be stale."""

from __future__ import annotations

import os
import time
from pathlib import Path

import dagster as dg
import pytest

from mesh_assets.graph import yaml_lines
from mesh_assets.graph.discovery import load_domain
from mesh_assets.graph.isolate import discover
from mesh_assets.graph.own_domain import load_own_domain
from mesh_assets.graph.resolve import tables_of
from mesh_assets.model.errors import SpecError
from mesh_assets.model.grain import Grain

SPEC = """name: orders
owner: sales@example.com
contacts: [{kind: chat, value: "#sales"}]
external:
  - {table: raw_orders, regions: [eu, us], contract: [{name: id, type: bigint}]}
tables:
  - table: orders
    published: {published}
    partitioning: hourly
    inputs:
      - {table: raw_orders}
    sql: SELECT * FROM sales.raw_orders
    checks:
      - {kind: not_null, columns: [id]}
      - {kind: accepted_values, column: status, values: [new, paid], severity: warn}
"""


def write_domain(root: Path, published: str = "false") -> Path:
    folder = root / "domains" / "sales"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "orders.yaml").write_text(SPEC.replace("{published}", published))
    return folder


def test_an_entry_holds_the_tables_as_discovery_resolves_them(tmp_path: Path) -> None:
    folder = write_domain(tmp_path)
    entry = discover(folder, tmp_path / "home", 60)
    assert entry.errors == ()
    assert entry.tables == tuple(t for p in load_domain(folder).products for t in tables_of(p))
    assert [t.spec for t in entry.tables] == [t.spec for p in load_domain(folder).products for t in tables_of(p)]


def test_a_changed_file_is_a_new_entry_never_a_stale_one(tmp_path: Path) -> None:
    folder = write_domain(tmp_path)
    home = tmp_path / "home"
    assert not discover(folder, home, 60).tables[0].published
    write_domain(tmp_path, published="true")
    assert discover(folder, home, 60).tables[0].published
    assert len(list((home / "catalog").glob("*.json"))) == 2


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    levels = "".join(f"  - &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("name: p\nlaughs:\n  - &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + levels)
    started = time.monotonic()
    with pytest.raises(yaml_lines.SpecRefused, match=r"more than 8 YAML aliases \(\*name\) at line 4"):
        yaml_lines.load(bomb)
    assert time.monotonic() - started < 5


def test_a_few_aliases_are_read(tmp_path: Path) -> None:
    spec = tmp_path / "p.yaml"
    spec.write_text("base: &b {kind: chat, value: '#a'}\ncontacts: [*b, *b]\n")
    data, lines = yaml_lines.load(spec)
    assert data["contacts"] == [{"kind": "chat", "value": "#a"}] * 2 and lines[("contacts",)] == 2


def test_oversized_and_deeply_nested_specs_are_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("description: " + "x" * yaml_lines.MAX_BYTES + "\n")
    with pytest.raises(yaml_lines.SpecRefused, match="a spec may have at most 1,048,576"):
        yaml_lines.load(big)
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 1000 + "]" * 1000 + "\n")
    with pytest.raises(yaml_lines.SpecRefused, match="nested deeper than 32 levels at line 1"):
        yaml_lines.load(deep)


def test_a_refused_spec_is_an_error_of_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = write_domain(tmp_path)
    (folder / "big.yaml").write_text("x" * (yaml_lines.MAX_BYTES + 1))
    monkeypatch.chdir(tmp_path)
    assert load_domain(Path("domains/sales")).errors == [
        SpecError(
            "domains/sales/big.yaml",
            None,
            "",
            "refused: the file is 1,048,577 bytes; a spec may have at most 1,048,576",
        )
    ]


def test_an_unchanged_own_domain_reloads_without_reading_its_specs(tmp_path: Path, monkeypatch) -> None:
    """A location's own domain, as dbt's partial parsing: the validated YAML products are kept for the domain's
    content hash; an unchanged domain is loaded from them (no YAML read, nothing validated or parsed again); a
    changed file is a new hash, read afresh."""
    folder, home = write_domain(tmp_path), tmp_path / "home"
    cold = load_own_domain(folder, home)
    assert (cold.warm, cold.errors) == (False, [])

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a spec was read again")

    with monkeypatch.context() as patched:
        patched.setattr(yaml_lines, "load", refused)
        warm = load_own_domain(folder, home)
    assert (warm.warm, warm.errors) == (True, [])
    assert warm.specs.products == cold.specs.products
    assert warm.specs.products[0].transformations[0].output.partitioning is Grain.HOURLY  # grains stay singletons

    write_domain(tmp_path, published="true")
    changed = load_own_domain(folder, home)
    assert not changed.warm and changed.specs.products[0].transformations[0].output.published


def test_a_domain_with_errors_is_judged_afresh_every_load(tmp_path: Path) -> None:
    folder, home = write_domain(tmp_path), tmp_path / "home"
    (folder / "broken.yaml").write_text("name: broken\nowner: sales@example.com\n")
    first, second = load_own_domain(folder, home), load_own_domain(folder, home)
    assert first.errors and second.errors == first.errors and not second.warm


PLAIN_SPEC = """name: orders
owner: sales@example.com
contacts: [{kind: chat, value: "#sales"}]
external:
  - {table: raw_orders}
tables:
  - table: orders
    inputs: [{table: raw_orders}]
    sql: SELECT id FROM sales.raw_orders
    checks:
      - {kind: not_null, columns: [id]}
"""


def test_the_whole_mesh_reloads_unchanged_domains_from_what_was_kept(tmp_path: Path, monkeypatch) -> None:
    """``mesh_definitions`` (the demo, tests, ``mesh`` commands) loads each domain as its own location does: an
    unchanged domain without reading its specs again, a changed one afresh, so a new error is refused at once."""
    from mesh_assets import mesh_definitions
    from mesh_assets.model.errors import SpecValidationError
    from mesh_assets.settings import get_settings

    monkeypatch.setenv("MESH_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    spec = tmp_path / "domains" / "sales" / "orders.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text(PLAIN_SPEC)
    cold = mesh_definitions(tmp_path / "domains", dbt=False).resolve_asset_graph()

    def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("a spec was read again")

    with monkeypatch.context() as patched:
        patched.setattr(yaml_lines, "load", refused)
        warm = mesh_definitions(tmp_path / "domains", dbt=False).resolve_asset_graph()
    assert warm.get_all_asset_keys() == cold.get_all_asset_keys()
    assert {k.to_user_string() for k in warm.asset_check_keys} == {k.to_user_string() for k in cold.asset_check_keys}

    spec.write_text(PLAIN_SPEC.replace("[id]", "[id, missing]"))
    unknown_column = r"sales/orders\.yaml:11: tables\.0\.checks\.0\.columns: column 'missing'"
    with pytest.raises(SpecValidationError, match=unknown_column):
        mesh_definitions(tmp_path / "domains", dbt=False)


def test_each_table_links_to_the_line_of_its_spec(tmp_path: Path, monkeypatch) -> None:
    """The UI opens a table's spec at its line (Dagster's code references), from an absolute path even when the
    domains folder was given relative to the working directory."""
    from mesh_assets import mesh_definitions
    from mesh_assets.settings import get_settings

    monkeypatch.setenv("MESH_HOME", str(tmp_path / "home"))
    get_settings.cache_clear()
    spec = tmp_path / "domains" / "sales" / "orders.yaml"
    spec.parent.mkdir(parents=True)
    spec.write_text(PLAIN_SPEC)
    monkeypatch.chdir(tmp_path)
    defs = mesh_definitions(Path("domains"), dbt=False)
    metadata = defs.resolve_asset_graph().get(dg.AssetKey(["sales", "orders"])).metadata
    [reference] = metadata["dagster/code_references"].code_references
    assert (reference.file_path, reference.line_number) == (str(spec), 7)


def test_a_domains_key_covers_its_files_and_nothing_that_could_hang_it(tmp_path: Path) -> None:
    """A pipe (which would block a reader), a dangling link, hidden files and ``__pycache__`` are not part of a
    domain's content; a file in a subfolder, or a link to one, is."""
    from mesh_assets.graph.catalog import content_key

    folder = write_domain(tmp_path)
    key = content_key(folder)
    os.mkfifo(folder / "pipe")
    (folder / "dangling.yaml").symlink_to(tmp_path / "missing.yaml")
    (folder / ".hidden.yaml").write_text("x")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "orders.cpython-311.pyc").write_bytes(b"x")
    assert content_key(folder) == key
    (folder / "sql").mkdir()
    (folder / "sql" / "orders.sql").write_text("SELECT 1")
    assert (with_sql := content_key(folder)) != key
    (tmp_path / "shared.sql").write_text("SELECT 2")
    (folder / "shared.sql").symlink_to(tmp_path / "shared.sql")
    assert content_key(folder) != with_sql
