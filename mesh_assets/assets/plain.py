"""Plain Dagster assets kept in a domain's code location beside its Mesh products.

A team that already writes assets the way Dagster's docs show (``@dg.asset`` taking a ``PySparkResource`` or
``LazyPySparkResource`` parameter) keeps them in any Python file of its domain folder. The domain's location
serves them with its products: the same asset graph (they read Mesh tables, and Mesh products read them, by
asset key), the domain's automation sensor, and dagster-pyspark's resource over Mesh's one SparkSession under
the keys Dagster's docs use (``pyspark``, ``lazy_pyspark``), and the domain's lineage: a run of such an asset
sends OpenLineage events as a product's does (:mod:`mesh_assets.lineage.plain`). dagster-pyspark is imported
only by a location with an asset that asks for one of those keys.

A Mesh product reads such an asset's table when the domain declares it as an ``ExternalTable`` (Mesh did not
write it) and the asset writes it where Mesh keeps the table (``MeshPySparkResource.location``): the asset is
then the table's definition, in place of Mesh's spec and observer, and its materializations are what Mesh's
readiness waits for.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType

import dagster as dg

from mesh_assets.graph.resolve import Table
from mesh_assets.model.errors import SpecError, SpecValidationError, relative

PYSPARK_KEYS = frozenset({"pyspark", "lazy_pyspark"})
"""The resource keys Dagster's docs give dagster-pyspark's two resources."""


def plain_definitions(
    modules: Iterable[ModuleType],
) -> tuple[list[dg.AssetsDefinition], list[dg.AssetChecksDefinition]]:
    """The Dagster assets and asset checks the domain's Python files define at module level (Mesh products are
    not among them). Dagster's loaders walk only the files that hold one: over 1,000 product files that hold
    none they cost about 100 ms, the look by each value's type a few."""
    kinds: dict[type, bool] = {}

    def is_definition(value: object) -> bool:
        kind = type(value)
        if kind not in kinds:
            kinds[kind] = issubclass(kind, dg.AssetsDefinition)
        return kinds[kind]

    def holds(value: object) -> bool:
        return any(map(is_definition, value)) if isinstance(value, list | tuple) else is_definition(value)

    chosen = [m for m in modules if any(map(holds, vars(m).values()))]
    if not chosen:
        return [], []
    assets = [
        traced(a)
        for a in dg.load_assets_from_modules(chosen)
        if isinstance(a, dg.AssetsDefinition) and not isinstance(a, dg.AssetChecksDefinition)
    ]
    return assets, list(dg.load_asset_checks_from_modules(chosen))


def traced(asset: dg.AssetsDefinition) -> dg.AssetsDefinition:
    """An asset that asks for dagster-pyspark's resource, with the hooks that close its OpenLineage run (the
    resource opens it: :mod:`mesh_assets.lineage.plain`); any other asset as it is."""
    if not set(asset.required_resource_keys) & PYSPARK_KEYS:
        return asset
    from mesh_assets.lineage.plain import LINEAGE_HOOKS

    return asset.with_hooks(set(LINEAGE_HOOKS))


def pyspark_resources(assets: Iterable[dg.AssetsDefinition]) -> dict[str, object]:
    """Mesh's session as dagster-pyspark's resource, under each of its usual keys a plain asset asks for; its
    asset's runs send OpenLineage events as products' do."""
    wanted = sorted({k for a in assets for k in a.required_resource_keys} & PYSPARK_KEYS)
    if not wanted:
        return {}
    from mesh_assets.lineage.plain import TracedPySparkResource

    return {key: TracedPySparkResource() for key in wanted}


def written_by_plain_assets(external: Iterable[Table], assets: Iterable[dg.AssetsDefinition]) -> list[Table]:
    """The external tables a plain asset of the domain defines (writes): not Mesh's to observe. Their checks
    would run only on an observation, so a check Mesh declares on one is refused: the asset carries its own."""
    keys = {k for a in assets for k in a.keys}
    written = [t for t in external if t.key in keys]
    errors = [
        SpecError(
            relative(t.source_file),
            t.line,
            "checks",
            f"{t.ref} is written by a Dagster asset of {t.domain}'s code location, not observed: Mesh cannot run "
            f"its checks ({', '.join(c.check_name for c in t.checks)}) on it; give the asset its own asset checks",
        )
        for t in written
        if t.checks
    ]
    if errors:
        raise SpecValidationError(errors)
    return written
