"""Environments: ``mesh apply --env NAME`` builds the working tree's change into a named environment over production's
data, ``mesh env list``, ``mesh env drop NAME`` and ``mesh env ui NAME``.

The changed tables and their readers (as ``mesh plan`` finds them) are computed for a partition range under the
environment's own root and recorded on its own instance; every other table is read in place from production. A
changed table that reads its own past (a ``previous`` window) or applies its partitions as a state (``merge``,
``history``, ``changes``) starts from a Delta shallow clone of production: the clone's log points at production's
files, nothing is copied, and production's table is never written.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass, replace
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import dagster as dg
    from rich.console import Console

    from mesh_assets.change import Side
    from mesh_assets.compat import AssetGraph
    from mesh_assets.storage.environment import Environment

ENV_VARIABLE = "MESH_ENVIRONMENT"


def add_apply_arguments(apply: argparse.ArgumentParser) -> None:
    """``mesh apply``'s environment options; with ``--env`` it builds the environment instead of launching."""
    apply.set_defaults(handler=cmd_apply)
    apply.add_argument("--env", metavar="NAME", help="build the change into environment NAME instead of production")
    apply.add_argument("--from", dest="start", metavar="DAY", help="with --env: the first partition day")
    apply.add_argument("--to", dest="end", metavar="DAY", help="with --env: the last partition day")
    apply.add_argument(
        "--days",
        type=int,
        default=3,
        help="with --env and no --from: the last N days production published (default 3)",
    )
    apply.add_argument(
        "--from-env",
        metavar="NAME",
        help="publish what environment NAME computed with today's code and inputs first, then launch the rest",
    )


def cmd_apply(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.cli import change
    from mesh_assets.cli.commands import persistent_instance

    if args.env and args.from_env:
        console.print("[red]error[/red] --env builds an environment, --from-env promotes one: give one of them")
        return 2
    if args.env:
        with persistent_instance() as instance:
            return build(args, console, instance)
    if args.from_env:
        with persistent_instance() as instance:
            code = promote_from(args, console, instance)
        if code is not None:
            return code
    return change.cmd_apply(args, console)


def promote_from(args: argparse.Namespace, console: Console, instance: dg.DagsterInstance) -> int | None:
    """``mesh apply --from-env NAME``: promote what the environment computed that production would compute the
    same way now; None when ``mesh apply`` should go on to launch the rest, an exit code when it should stop."""
    import dagster as dg

    from mesh_assets.change.promote import Layout, promote
    from mesh_assets.cli.change import plan_and_side_or_say
    from mesh_assets.definitions import mesh_definitions
    from mesh_assets.settings import get_settings
    from mesh_assets.storage.environment import EnvironmentRefused, environments_dir, load
    from mesh_assets.storage.tables import TableRegistry

    settings = get_settings()
    try:
        env = load(environments_dir(settings.home) / args.from_env)
    except EnvironmentRefused as exc:
        console.print(f"[red]error[/red] {exc}", highlight=False)
        return 2
    made = plan_and_side_or_say(args.base, instance, console)
    if made is None:
        return 2
    plan, side, graph = made
    if plan.refused:
        return None  # mesh apply refuses it, and says why
    graph = graph or mesh_definitions().resolve_asset_graph()
    layouts = {
        t.key: Layout(t.grain, t.partition_column, t.region_column if t.regions else None)
        for t in side.graph.tables.values()  # products' tables and dbt models
        if t.grain.partitioned
    }
    own = dg.DagsterInstance.from_config(str(env.dagster_home))
    production = TableRegistry(settings.warehouse_uri, settings.s3)
    done = promote(env, graph, own, instance, production, layouts, dry_run=args.dry_run)
    verb = "would promote" if args.dry_run else "promoted"
    for key, (keys, version) in done.promoted.items():
        at = f" (Delta version {version})" if version is not None else ""
        console.print(f"  {verb} {key.to_user_string()} {', '.join(keys)} from {env.name}{at}", highlight=False)
    for key, left in done.left.items():
        for partition, why in sorted(left.items()):
            console.print(f"  not promoted {key.to_user_string()} {partition}: {why}", highlight=False)
    return None


def add_parsers(sub: argparse._SubParsersAction) -> None:
    add_apply_arguments(sub.choices["apply"])
    env = sub.add_parser(
        "env",
        help="list, drop and open the environments `mesh apply --env NAME` builds",
        description="Environments hold a change's tables computed over production's inputs, under "
        "<home>/envs/<name>, with their own Dagster instance: production is never written.",
    )
    actions = env.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="every environment: its tables and range").set_defaults(handler=cmd_env_list)
    dropping = actions.add_parser("drop", help="delete an environment's own folder (tables, instance) only")
    dropping.add_argument("name")
    dropping.set_defaults(handler=cmd_env_drop)
    ui = actions.add_parser("ui", help="the Dagster UI over the environment's instance, locations env-NAME-<domain>")
    ui.add_argument("name")
    ui.add_argument("--port", type=int, default=3001)
    ui.set_defaults(handler=cmd_env_ui)


def table_location(name: str, domain: str, table: str) -> str:
    """Where ``domain.table`` is read in environment ``name``: its own copy when the environment computes it, else
    production's location (read in place). For ``mesh diff``, which compares the two."""
    from mesh_assets.settings import get_settings
    from mesh_assets.storage.environment import environments_dir, load
    from mesh_assets.storage.tables import TableRegistry

    settings = get_settings()
    env = load(environments_dir(settings.home) / name)
    return TableRegistry(env.production_warehouse, settings.s3, env).location(domain, table)


@dataclass(frozen=True)
class Chosen:
    """The tables an environment computes, in the graph's order, and those started from a clone."""

    keys: list[dg.AssetKey]
    cloned: list[dg.AssetKey]
    left_out: list[str]


def choose(keys: list[dg.AssetKey], graph: AssetGraph, side: Side) -> Chosen:
    """Of the plan's tables, those Mesh computes (products' outputs and dbt models; any other is left out, said
    why), and which need their past."""
    order = {k: i for i, k in enumerate(graph.toposorted_asset_keys)}
    tables = {t.key: t for t in side.graph.tables.values()}
    chosen, cloned, left_out = [], [], []
    for key in sorted(keys, key=order.__getitem__):
        table = tables.get(key)
        if table is None or table.external or key not in order:
            left_out.append(f"{key.to_user_string()}: not a table Mesh computes (neither a product's nor a dbt model)")
            continue
        chosen.append(key)
        own_past = key in graph.get(key).parent_keys
        if own_past or table.table_kind.keyed or table.table_kind.per_partition:
            cloned.append(key)
    return Chosen(chosen, cloned, left_out)


def _range(
    graph: AssetGraph, keys: list[dg.AssetKey], args: argparse.Namespace, production: dg.DagsterInstance
) -> tuple[str, str]:
    """``--from``/``--to``, else the last ``--days`` days up to ``--to`` or to the latest partition production has
    published of the tables (of their inputs, for tables production never published), so the range holds real
    data; the partitions definition's last day (today) only when production has published none."""
    if args.start:
        return args.start, args.end or args.start
    last = args.end or latest_published(graph, keys, production)
    if last is None:
        pdef = next((graph.get(k).partitions_def for k in keys if graph.get(k).partitions_def), None)
        last = pdef.get_last_partition_key() if pdef else None
    end = date.fromisoformat(last[:10] if last else date.today().isoformat())
    return (end - timedelta(days=max(args.days, 1) - 1)).isoformat(), end.isoformat()


def latest_published(graph: AssetGraph, keys: list[dg.AssetKey], production: dg.DagsterInstance) -> str | None:
    """The latest partition key production has materialized of ``keys``, else of their partitioned inputs."""
    for candidates in (keys, sorted({p for k in keys for p in graph.get(k).parent_keys if p not in keys})):
        partitioned = [k for k in candidates if graph.has(k) and graph.get(k).partitions_def is not None]
        found = [p for k in partitioned for p in production.get_materialized_partitions(k)]
        if found:
            return max(found)
    return None


def widened(
    graph: AssetGraph, chosen: Chosen, bounds: dict[dg.AssetKey, dg.PartitionKeyRange]
) -> dict[dg.AssetKey, dg.PartitionKeyRange]:
    """Each computed table's range, reaching back as far as its readers in the environment read it (a ``last(7)``
    reader of the range's first day needs the six days before): a table the environment computes without a clone
    has only the partitions computed there. A cloned table has production's past already."""
    import dagster as dg

    out = dict(bounds)
    for key in reversed(chosen.keys):
        pdef = graph.get(key).partitions_def
        if key in chosen.cloned or key not in out or pdef is None:
            continue
        keys = set(pdef.get_partition_keys_in_range(out[key]))
        for child in graph.get(key).child_keys:
            child_def = graph.get(child).partitions_def
            if child == key or child not in out or child_def is None:
                continue
            subset = child_def.empty_subset().with_partition_keys(child_def.get_partition_keys_in_range(out[child]))
            mapping = graph.get_partition_mapping(child, key)
            found = mapping.get_upstream_mapped_partitions_result_for_partitions(subset, child_def, pdef)
            keys |= set(found.partitions_subset.get_partition_keys())
        ordered = sorted(keys)
        out[key] = dg.PartitionKeyRange(ordered[0], ordered[-1])
    return out


def version_before(
    production: dg.DagsterInstance, key: dg.AssetKey, location: str, start: str, latest: int
) -> int | None:
    """The newest Delta version of production's ``key`` from before it applied the range starting on ``start``:
    the state the range's partitions were applied over. A ``history`` table's commits name the partition each
    applied (the version before the first one at or after ``start`` since the last one before it); another
    table's, the ``delta_version`` its materializations record. ``latest`` when production has not published the
    range, or when one commit published partitions on both sides of ``start`` (a merge over a range: no version
    holds the past alone); None when the table began with the range."""
    import dagster as dg

    from mesh_assets.settings import get_settings
    from mesh_assets.storage.strategies.history import applied_in_log

    applied = applied_in_log(location, get_settings().s3)
    if applied:
        last_before = max((v for v, p in applied if p[:10] < start), default=-1)
        first = next((v for v, p in applied if p[:10] >= start and v > last_before), None)
        return latest if first is None else (first - 1 if first > 0 else None)
    if not any(p[:10] >= start for p in production.get_materialized_partitions(key)):
        return latest
    versions: dict[bool, list[int]] = {True: [], False: []}
    cursor = None
    while True:
        found = production.fetch_materializations(dg.AssetRecordsFilter(asset_key=key), limit=1000, cursor=cursor)
        for record in found.records:
            meta = record.asset_materialization.metadata
            if "delta_version" in meta:
                versions[(record.partition_key or "")[:10] >= start].append(int(meta["delta_version"].value))
        if not found.has_more:
            break
        cursor = found.cursor
    if not versions[True]:
        return latest
    first = min(versions[True])
    if any(v >= first for v in versions[False]):
        return latest
    return first - 1 if first > 0 else None


def _clone(env: Environment, key: dg.AssetKey, location: str, production: dg.DagsterInstance) -> int | None:
    """Start the environment's ``key`` from a shallow clone of production's table as it was before the
    environment's range (:func:`version_before`), so a table applying its partitions in order (``history``) applies
    the range again over the state it followed from; None: no table to clone (the environment creates it)."""
    from mesh_assets.settings import get_settings
    from mesh_assets.storage.delta import path_identifier, version_or_none
    from mesh_assets.storage.resource import get_spark

    latest = version_or_none(location, get_settings().s3)
    if latest is None:
        return None
    version = version_before(production, key, location, env.start, latest) if env.start else latest
    if version is None:
        return None
    target = env.location(*key.path)
    get_spark().sql(
        f"CREATE TABLE {path_identifier(target)} SHALLOW CLONE {path_identifier(location)} VERSION AS OF {version}"
    )
    return version


def write_workspace(env: Environment, domains_dir: Path) -> Path:
    """The environment's Dagster workspace: each domain's code location, named ``env-<name>-<domain>``."""
    import yaml

    from mesh_assets.settings import project_root

    locations = [
        {
            "python_file": {
                "relative_path": str((folder / "definitions.py").resolve()),
                "location_name": f"env-{env.name}-{folder.name}",
                "working_directory": str(project_root()),
            }
        }
        for folder in sorted(domains_dir.iterdir())
        if (folder / "definitions.py").is_file()
    ]
    path = Path(env.root) / "workspace.yaml"
    path.write_text(yaml.safe_dump({"load_from": locations}, sort_keys=False))
    return path


def _start_afresh(home: Path, name: str, console: Console) -> bool:
    """Drop environment ``name`` if it exists, so a build starts clean: its own folder only. False if refused."""
    from mesh_assets.storage.environment import EnvironmentRefused, drop, environments_dir

    try:
        if (environments_dir(home) / name).exists():
            drop(home, name)
    except EnvironmentRefused as exc:
        console.print(f"[red]error[/red] {exc}: nothing built", highlight=False)
        return False
    return True


def build(args: argparse.Namespace, console: Console, production: dg.DagsterInstance) -> int:
    """``mesh apply --env NAME``: plan against ``production``, then compute the plan's tables in the environment."""
    import dagster as dg

    from mesh_assets.backfill.plan import BackfillError, partition_bounds
    from mesh_assets.cli.change import plan_and_side_or_say, print_change_plan
    from mesh_assets.definitions import executable_assets, mesh_definitions
    from mesh_assets.settings import get_settings, scoped_environ
    from mesh_assets.storage.delta import version_or_none
    from mesh_assets.storage.environment import Environment, environments_dir
    from mesh_assets.storage.resource import MeshResource
    from mesh_assets.storage.tables import TableRegistry

    settings = get_settings()
    if settings.environment is not None:
        console.print(f"[red]error[/red] already in environment {settings.environment} ({ENV_VARIABLE}): unset it")
        return 2
    made = plan_and_side_or_say(args.base, production, console)
    if made is None:
        return 2
    plan, side, graph = made
    print_change_plan(plan, console)
    root = environments_dir(settings.home) / args.env
    if graph is None or not plan.recompute:
        # An empty environment still exists, so a CI job's `mesh diff --env` and `mesh env drop` run as scripted.
        if not _start_afresh(settings.home, args.env, console):
            return 2
        empty = Environment(args.env, str(root), settings.warehouse_uri, str(production.root_directory))
        replace(empty, start=args.start, end=args.end or args.start, base=plan.base).save()
        console.print(
            f"Nothing to build: the working tree computes nothing differently (environment {args.env} empty)."
        )
        return 0
    chosen = choose([r.asset.key for r in plan.recompute], graph, side)
    for line in chosen.left_out:
        console.print(f"  left out of the environment: {line}", highlight=False)
    try:
        start, end = _range(graph, chosen.keys, args, production)
        bounds = {k: partition_bounds(pd, start, end) for k in chosen.keys if (pd := graph.get(k).partitions_def)}
    except (BackfillError, ValueError) as exc:
        console.print(f"[red]error[/red] {exc}: nothing built", highlight=False)
        return 2
    bounds = widened(graph, chosen, bounds)
    if not _start_afresh(settings.home, args.env, console):
        return 2
    env = Environment(
        name=args.env,
        root=str(root),
        production_warehouse=settings.warehouse_uri,
        production_dagster_home=str(production.root_directory),
        tables=tuple("/".join(k.path) for k in chosen.keys),
        cloned=tuple("/".join(k.path) for k in chosen.cloned),
        start=start,
        end=end,
        base=plan.base,
    )
    env.save()
    prod = TableRegistry(settings.warehouse_uri, settings.s3)
    clones = {"/".join(k.path): _clone(env, k, prod.location(*k.path), production) for k in chosen.cloned}
    versions = {ref: v for ref, v in clones.items() if v is not None}
    parents = {p for k in chosen.keys for p in graph.get(k).parent_keys if "/".join(p.path) not in env.tables}
    current = {"/".join(p.path): version_or_none(prod.location(*p.path), settings.s3) for p in parents}
    reads = {ref: v for ref, v in current.items() if v is not None}
    env = replace(env, clone_versions=versions, reads=reads)
    env.save()
    write_workspace(env, settings.domains_dir)
    console.print(f"Environment {env.name}: {len(chosen.keys)} table(s), {start}..{end}, under {env.root}")
    failed = 0
    with scoped_environ({ENV_VARIABLE: env.name}):
        get_settings.cache_clear()
        try:
            from mesh_assets.cli.commands import persistent_instance

            with persistent_instance() as instance:
                assets = executable_assets(mesh_definitions())
                resources = {"mesh": MeshResource(), **_dbt_resources(side, chosen.keys)}
                for key in chosen.keys:
                    span = bounds.get(key)
                    tags = {}
                    if span is not None:
                        tags = {"dagster/asset_partition_range_start": span.start}
                        tags["dagster/asset_partition_range_end"] = span.end
                    result = dg.materialize(
                        assets,
                        instance=instance,
                        resources=resources,
                        selection=[key],
                        tags=tags,
                        raise_on_error=False,
                    )
                    done = "built" if result.success else "[red]failed[/red]"
                    failed += not result.success
                    console.print(f"  {done} {key.to_user_string()} (run {result.run_id})", highlight=False)
                    for event in result.all_events if not result.success else []:
                        if event.is_step_failure and event.step_failure_data.error is not None:
                            console.print(f"    {event.step_failure_data.error.message.strip()}", highlight=False)
        finally:
            get_settings.cache_clear()
    console.print(f"Open it: mesh env ui {env.name}   Drop it: mesh env drop {env.name}", highlight=False)
    return 1 if failed else 0


def _dbt_resources(side: Side, keys: list[dg.AssetKey]) -> dict[str, object]:
    """dbt's resource when the environment builds a dbt model (dagster-dbt is imported only then)."""
    from mesh_assets.graph.resolve import TableKind

    models = {t.key for t in side.graph.tables.values() if t.kind is TableKind.DBT}
    if not models.intersection(keys):
        return {}
    from mesh_assets.dbt.assets import DBT_RESOURCE_KEY, dbt_resource

    return {DBT_RESOURCE_KEY: dbt_resource()}


def cmd_env_list(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.settings import get_settings
    from mesh_assets.storage.environment import listed

    envs = listed(get_settings().home)
    if not envs:
        console.print("No environments.")
    for env in envs:
        tables = ", ".join(t.replace("/", ".", 1) for t in env.tables)
        console.print(f"{env.name}: {env.start}..{env.end} against {env.base}: {tables}", highlight=False)
    return 0


def cmd_env_drop(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.settings import get_settings
    from mesh_assets.storage.environment import EnvironmentRefused, drop

    try:
        folder = drop(get_settings().home, args.name)
    except EnvironmentRefused as exc:
        console.print(f"[red]error[/red] {exc}", highlight=False)
        return 2
    console.print(f"Dropped environment {args.name} ({folder}); production was not touched.", highlight=False)
    return 0


def cmd_env_ui(args: argparse.Namespace, console: Console) -> int:
    from mesh_assets.settings import get_settings
    from mesh_assets.storage.environment import EnvironmentRefused, environments_dir, load

    settings = get_settings()
    try:
        env = load(environments_dir(settings.home) / args.name)
    except EnvironmentRefused as exc:
        console.print(f"[red]error[/red] {exc}", highlight=False)
        return 2
    workspace = write_workspace(env, settings.domains_dir)
    env.dagster_home.mkdir(parents=True, exist_ok=True)
    command = [str(Path(sys.executable).with_name("dagster")), "dev", "-w", str(workspace)]
    command += ["-h", "127.0.0.1", "-p", str(args.port)]
    console.print(f"Dagster UI over environment {env.name} on http://127.0.0.1:{args.port}; Ctrl-C stops it")
    variables = {**os.environ, ENV_VARIABLE: env.name, "DAGSTER_HOME": str(env.dagster_home)}
    return subprocess.run(command, env=variables, check=False).returncode
