"""The step's dbt models and tests as SQL: one in-process ``dbt compile`` of the selection with the run's window.

dbt stays the compiler (Jinja, ``ref``/``source``, ``is_incremental()``, generic tests); Mesh runs the SQL
it returns on its own session, so the rows can be staged and tested before anything is published. Only
models Mesh knows how to publish get this far: ``incremental`` with ``replace_where`` on one ``partition_by``
column, ``incremental`` with ``merge`` and a ``unique_key``, or ``table``; anything else is refused before a row
is computed.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator
from sqlglot import exp

from mesh_assets.compat import DBT_UNIQUE_ID_METADATA_KEY as UNIQUE_ID
from mesh_assets.dbt.nodes import model_kind, partition_column
from mesh_assets.dbt.runner import InProcessDbtResult, invoke_dbt, selection_for
from mesh_assets.dbt.set_aside import compile_setting_aside
from mesh_assets.graph.revisions import REVISION_LENGTH
from mesh_assets.model.kinds import Kind, Partitions

#: dbt's generic tests that count failing rows: a row failing on some partitions' rows also fails on the
#: whole range's, so a range without failing rows has none in any of its partitions.
ROW_COUNTING_TESTS = frozenset({"not_null", "unique", "accepted_values", "relationships"})


@dataclass(frozen=True)
class DbtTest:
    """A dbt test as a query returning failing rows, with dbt's rules for turning them into a verdict."""

    check: dg.AssetCheckKey
    sql: str
    blocking: bool
    severity: str
    fail_calc: str
    warn_if: str
    error_if: str
    row_counting: bool
    """Whether passing on a range implies passing on each partition of it (see ``ROW_COUNTING_TESTS``)."""


@dataclass(frozen=True)
class DbtModel:
    """A model of the step: its compiled SELECT (None when only its tests run) and how it is published."""

    unique_id: str
    key: dg.AssetKey
    sql: str | None
    materialized: str
    partition_column: str | None
    relation: tuple[str | None, str]
    """The relation dbt's SQL reads the model as (``analytics.stg_orders``), which its tests get swapped."""
    parents: tuple[str, ...]
    """Models of this step it reads."""
    tests: tuple[DbtTest, ...]
    revision: str | None = None
    """The model's revision: dbt's checksum of its SQL file, shortened as a product's revision is."""
    kind: Kind = field(default_factory=Partitions)
    """How its rows become the table (:func:`~mesh_assets.dbt.nodes.model_kind`)."""

    @property
    def ref(self) -> str:
        return ".".join(self.key.path)

    @property
    def partitioned(self) -> bool:
        """Its rows belong to the run's days (its ``partition_by`` column), tested and published per day."""
        return self.materialized == "incremental" and self.partition_column is not None


def _refuse(model: str, why: str) -> dg.Failure:
    return dg.Failure(description=f"dbt model {model}: {why}; nothing was run")


def relation_of(node: dict[str, Any], key: dg.AssetKey) -> tuple[str | None, str]:
    """The relation dbt's SQL names the model by, which must be the ``<domain>.<table>`` Mesh publishes."""
    name = node.get("relation_name")
    table = exp.to_table(name, dialect="spark") if name else None
    if table is None or (table.db, table.name) != tuple(key.path):
        raise _refuse(
            node["unique_id"],
            f"its relation {name} is not {'.'.join(key.path)}, the table Mesh publishes it as "
            "(set its schema to its domain)",
        )
    return table.db or None, table.name


def check_publishable(node: dict[str, Any]) -> Kind:
    """The kind ``node`` is published as; a model Mesh cannot publish is refused before anything runs."""
    try:
        return model_kind(node["config"])
    except ValueError as exc:
        raise _refuse(node["unique_id"], str(exc)) from None


def _test(node: dict[str, Any], check: dg.AssetCheckKey, blocking: bool) -> DbtTest:
    config, meta = node["config"], node.get("test_metadata") or {}
    fail_calc = str(config.get("fail_calc") or "count(*)")
    return DbtTest(
        check=check,
        sql=node["compiled_code"],
        blocking=blocking,
        severity=str(config.get("severity") or "error").lower(),
        fail_calc=fail_calc,
        warn_if=str(config.get("warn_if") or "!= 0"),
        error_if=str(config.get("error_if") or "!= 0"),
        row_counting=meta.get("name") in ROW_COUNTING_TESTS and not meta.get("namespace") and fail_calc == "count(*)",
    )


def window_env(window: dict[str, str]) -> dict[str, str]:
    """The run's window as the environment ``mesh_window`` reads (``{"min_date", "max_date"}`` in): unlike
    ``--vars``, a new value does not make dbt parse the whole project again (its partial parsing survives)."""
    return {"MESH_DBT_MIN_DATE": window["min_date"], "MESH_DBT_MAX_DATE": window["max_date"]}


def compile_step(
    context: dg.AssetExecutionContext,
    manifest: dict[str, Any],
    translator: DagsterDbtTranslator,
    *,
    window: dict[str, str],
    full_refresh: bool,
    dbt_dirs: tuple[Path, Path],
    target_path: Path,
    env: dict[str, str],
) -> list[DbtModel]:
    """The models the step builds, or whose selected tests it runs, in dbt's order, compiled for ``window``."""
    assets_def = context.assets_def
    keys = {assets_def.specs_by_key[k].metadata[UNIQUE_ID]: k for k in context.selected_asset_keys}
    tests: dict[str, tuple[str, dg.AssetCheckKey, bool]] = {}
    for check in context.selected_asset_check_keys:
        spec = assets_def.get_spec_for_check_key(check)
        model_id = assets_def.specs_by_key[check.asset_key].metadata[UNIQUE_ID]
        tests[spec.metadata[UNIQUE_ID]] = (model_id, check, spec.blocking)
    args = ["compile", *selection_for(context, manifest, translator)]

    def compile_in(folder: Path) -> InProcessDbtResult:
        return invoke_dbt(
            [*args, "--full-refresh"] if full_refresh else args,
            project_dir=folder,
            profiles_dir=folder if dbt_dirs[1] == dbt_dirs[0] else dbt_dirs[1],
            target="session",
            target_path=target_path,
            env={**env, **window_env(window)},
            log=context.log,
        )

    own = {manifest["nodes"][uid]["original_file_path"] for uid in keys}
    target_path.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target_path, prefix="mesh-compile-") as scratch:
        result, left_out = compile_setting_aside(
            dbt_dirs[0], own, Path(scratch), compile_in, lambda r: None if r.success else str(r.exception or "")
        )
    for aside in left_out:  # another domain's model broken since the manifest was prepared
        context.log.warning(f"dbt could not parse {aside.file}, left out of this compile: {aside.message}")
    missing = sorted(uid for uid in [*keys, *tests] if uid not in result.nodes)
    if not result.success or missing:
        raise dg.Failure(
            description=f"dbt compile failed: {result.exception or ', '.join(missing) + ' not compiled'}",
            metadata={"errors": dg.MetadataValue.text("\n".join(result.errors())[-5000:])},
        )
    built = {uid: result.nodes[uid].to_dict(omit_none=False) for uid in keys}
    kinds = {uid: check_publishable(node) for uid, node in built.items()}
    # A model whose tests run without it (a checks-only selection) is read as published, as the manifest has it.
    props = {**{model_id: manifest["nodes"][model_id] for model_id, _, _ in tests.values()}, **built}
    model_keys = {**{model_id: check.asset_key for model_id, check, _ in tests.values()}, **keys}
    parents = {uid: sorted(set(node["depends_on"]["nodes"]) & set(built)) for uid, node in built.items()}
    out = []
    for uid in TopologicalSorter({uid: parents.get(uid, []) for uid in sorted(props)}).static_order():
        node, key = props[uid], model_keys[uid]
        out.append(
            DbtModel(
                unique_id=uid,
                key=key,
                sql=node["compiled_code"] if uid in built else None,
                materialized=str(node["config"].get("materialized")),
                partition_column=partition_column(node["config"]),
                relation=relation_of(node, key),
                parents=tuple(parents.get(uid, [])),
                tests=tuple(
                    _test(result.nodes[test_id].to_dict(omit_none=False), check, blocking)
                    for test_id, (model_id, check, blocking) in sorted(tests.items())
                    if model_id == uid
                ),
                revision=(node.get("checksum") or {}).get("checksum", "")[:REVISION_LENGTH] or None,
                kind=kinds.get(uid, Partitions()),  # a model only tested is not committed
            )
        )
    return out
