"""The rules a product's fields must pass beyond their types: Dagster's, and those between its checks.

Dagster refuses an owner or a tag it does not accept, and two checks of one asset with one name, only when
a code location builds its definitions; here the same refusals are found at discovery, with the file, line
and field, so ``mesh validate`` and the code location refuse exactly the same specs. Owners and tags are
judged by Dagster itself (an ``AssetSpec`` is built with them), so its rules cannot drift from ours.
"""

from __future__ import annotations

from functools import cache

import dagster as dg

from mesh_assets.graph import yaml_lines
from mesh_assets.graph.governance import classification_errors, lifecycle_errors, tier_errors
from mesh_assets.model.checks import COLUMNS_FIELD, Freshness, SchemaContract, checked_columns
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.product import DataProduct, ExternalTable, Output

OWNER_RULE = "Dagster takes an email address (name@host.tld) or a team name prefixed with 'team:'"


@cache
def _owner_refused(owner: str) -> bool:
    return _dagster_refuses(owners=[owner]) is not None


@cache
def _tag_refused(key: str, value: str) -> str | None:
    return _dagster_refuses(tags={key: value})


def _dagster_refuses(**spec: object) -> str | None:
    try:
        dg.AssetSpec(key="mesh_rule_check", **spec)  # type: ignore[arg-type]
    except dg.DagsterInvalidDefinitionError as exc:
        return str(exc)
    return None


def _table_errors(table: Output | ExternalTable, at: tuple[str | int, ...]) -> list[tuple[tuple, str]]:
    """(location, message) of each clash between ``table``'s checks, and of each check naming a column its
    declared contract does not have."""
    found: list[tuple[tuple, str]] = []
    seen: dict[str, int] = {}
    contract = {c.name for c in table.contract} if table.contract is not None else None
    for j, check in enumerate(table.checks):
        if isinstance(check, Freshness):
            continue
        name = check.check_name
        if name in seen:
            found.append(
                ((*at, "checks", j), f"check name {name!r} is also the name of checks.{seen[name]}; give one a 'name'")
            )
        elif name == SchemaContract().check_name and contract is not None and not isinstance(check, SchemaContract):
            found.append(((*at, "checks", j), f"check name {name!r} is the contract's own check; choose another name"))
        seen.setdefault(name, j)
        for column in checked_columns(check):
            if contract is not None and column not in contract:
                where = (*at, "checks", j, COLUMNS_FIELD[type(check)])
                found.append((where, f"column {column!r} is not in the output's contract"))
    return found


def product_errors(product: DataProduct, lines: yaml_lines.Lines) -> list[SpecError]:
    """Every refusal of ``product`` beyond its types; ``lines`` maps spec locations (YAML terms) to lines."""
    found: list[tuple[tuple, str]] = []
    if _owner_refused(product.owner):
        found.append((("owner",), f"owner {product.owner!r} is refused: {OWNER_RULE}"))
    for key, value in product.tags.items():
        if (problem := _tag_refused(key, value)) is not None:
            found.append((("tags", key), problem))
    for i, t in enumerate(product.transformations):
        found += _table_errors(t.output, ("tables", i))
    for i, ext in enumerate(product.external):
        found += _table_errors(ext, ("external", i))
    found += lifecycle_errors(product) + tier_errors(product) + classification_errors(product)
    file = relative(product.source_file) if found else ""
    return [
        SpecError(file, yaml_lines.line_for(lines, loc) or product.line, ".".join(map(str, loc)), message)
        for loc, message in found
    ]
