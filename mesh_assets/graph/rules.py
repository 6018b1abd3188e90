"""The rules a product's fields must pass beyond their types: Dagster's, and those between its checks.

Dagster refuses an owner or a tag it does not accept, and two checks of one asset with one name, only when
a code location builds its definitions; here the same refusals are found at discovery, with the file, line
and field, so ``mesh validate`` and the code location refuse exactly the same specs. A check naming a column
the output does not have fails every run; it is refused wherever the output's columns are known: its declared
contract, or the columns its SQL selects. Owners and tags are
judged by Dagster itself (an ``AssetSpec`` is built with them), so its rules cannot drift from ours.
"""

from __future__ import annotations

from functools import cache

from mesh_assets.graph import yaml_lines
from mesh_assets.graph.governance import classification_errors, lifecycle_errors, tier_errors
from mesh_assets.graph.revisions import sql_text
from mesh_assets.model.checks import COLUMNS_FIELD, Freshness, SchemaContract, checked_columns
from mesh_assets.model.errors import SpecError, relative
from mesh_assets.model.product import DataProduct, ExternalTable, Output, SqlTransformation

OWNER_RULE = "Dagster takes an email address (name@host.tld) or a team name prefixed with 'team:'"


@cache
def _owner_refused(owner: str) -> bool:
    return _dagster_refuses(owners=[owner]) is not None


@cache
def _tag_refused(key: str, value: str) -> str | None:
    return _dagster_refuses(tags={key: value})


def _dagster_refuses(**spec: object) -> str | None:
    import dagster as dg  # only to judge: a submitted run's application loads its domain without Dagster

    try:
        dg.AssetSpec(key="mesh_rule_check", **spec)  # type: ignore[arg-type]
    except dg.DagsterInvalidDefinitionError as exc:
        return str(exc)
    return None


def _columns_of(t: SqlTransformation, product: DataProduct) -> tuple[str, ...] | None:
    """The columns a SQL product's query returns when it names them all (None: a star, or SQL that does not
    parse, which validation reports), with the partition column Mesh adds when the query has none."""
    from mesh_assets.graph.queries import query_columns  # sqlglot: only where SQL is judged

    columns = query_columns(sql_text(t, product))
    return None if columns is None else (*columns, t.output.partition_column)


def _table_errors(
    table: Output | ExternalTable, at: tuple[str | int, ...], selected: tuple[str, ...] | None = None
) -> list[tuple[tuple, str]]:
    """(location, message) of each clash between ``table``'s checks, of each check naming a column the table's
    known schema does not have (its declared contract, else the columns its SQL ``selected``), and of each
    contract column the SQL does not select."""
    found: list[tuple[tuple, str]] = []
    seen: dict[str, int] = {}
    contract = {c.name.lower() for c in table.contract} if table.contract is not None else None
    chosen = {c.lower() for c in selected} if selected is not None else None
    for k, column in enumerate(table.contract or ()):
        if chosen is not None and column.name.lower() not in chosen:
            found.append(((*at, "contract", k), f"contract column {column.name!r} is not selected by the SQL"))
    known, what = (contract, "the output's contract")
    if contract is None:
        known, what = chosen, f"the columns its SQL selects ({', '.join(selected or ())})"
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
            if known is not None and column.lower() not in known:
                where = (*at, "checks", j, COLUMNS_FIELD[type(check)])
                found.append((where, f"column {column!r} is not in {what}"))
    return found


def product_errors(product: DataProduct, lines: yaml_lines.Lines, dagster_rules: bool = True) -> list[SpecError]:
    """Every refusal of ``product`` beyond its types; ``lines`` maps spec locations (YAML terms) to lines.
    Without ``dagster_rules`` its owner and tags are not put to Dagster."""
    found: list[tuple[tuple, str]] = []
    if dagster_rules and _owner_refused(product.owner):
        found.append((("owner",), f"owner {product.owner!r} is refused: {OWNER_RULE}"))
    for key, value in product.tags.items() if dagster_rules else ():
        if (problem := _tag_refused(key, value)) is not None:
            found.append((("tags", key), problem))
    for i, t in enumerate(product.transformations):
        selected = _columns_of(t, product) if isinstance(t, SqlTransformation) else None
        found += _table_errors(t.output, ("tables", i), selected)
    for i, ext in enumerate(product.external):
        found += _table_errors(ext, ("external", i))
    found += lifecycle_errors(product) + tier_errors(product) + classification_errors(product)
    file = relative(product.source_file) if found else ""
    return [
        SpecError(file, yaml_lines.line_for(lines, loc) or product.line, ".".join(map(str, loc)), message)
        for loc, message in found
    ]
