"""Compare two Delta tables as Spark jobs: one full outer join on the key and one aggregation over it give every
count and a few example keys per difference; nothing but those numbers and keys comes back to the driver.

Rows are matched on ``key`` (null-safe). Without a key each distinct row is counted on both sides first and the
counts are joined on every column, so a row present twice on one side and once on the other is one row only there.
Examples are chosen in the same aggregation as hashes of the key (the smallest, the largest, one more): at most
:data:`EXAMPLES` per difference, whatever the size of the tables; their keys are then found by a scan of the key
columns alone, filtered on those few hashes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from mesh_assets.model.errors import Refused

EXAMPLES = 3
"""Example keys kept per difference (rows only on one side, each changed column)."""
ONLY_LEFT, ONLY_RIGHT = "only_left", "only_right"


@dataclass(frozen=True)
class PartitionSpan:
    """The partitions compared: ``column`` between ``start`` and ``end`` (inclusive, as the column's literals),
    and of a table partitioned by date and region, only ``regions`` of ``region_column`` when any are named."""

    column: str
    start: str
    end: str
    region_column: str | None = None
    regions: tuple[str, ...] = ()


@dataclass
class SchemaDiff:
    only_left: list[str] = field(default_factory=list)
    only_right: list[str] = field(default_factory=list)
    retyped: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Columns on both sides whose types differ: ``(left type, right type)``; their values are compared as text."""

    @property
    def same(self) -> bool:
        return not (self.only_left or self.only_right or self.retyped)


@dataclass
class TableDiff:
    """How ``right``'s rows differ from ``left``'s."""

    left: str
    right: str
    key: tuple[str, ...]
    """The columns rows are matched on; empty: the whole row."""
    partitions: PartitionSpan | None
    left_rows: int
    right_rows: int
    only_left: int
    only_right: int
    changed: int
    """Keys on both sides with at least one compared column's value different."""
    column_changes: dict[str, int]
    """Per compared column: how many matched keys hold a different value (columns with none included, as 0)."""
    schema: SchemaDiff
    examples: dict[str, list[dict[str, Any]]]
    """Example keys per difference: ``only_left``, ``only_right`` and each changed column; empty when withheld."""
    withheld: str | None = None
    """Why the example keys are not shown (a classified table), else None."""

    @property
    def same(self) -> bool:
        return self.schema.same and not (self.only_left or self.only_right or self.changed)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["key"] = list(self.key)
        span = self.partitions
        if span is not None:  # the region fields only for a table partitioned by region
            out["partitions"] = {"column": span.column, "start": span.start, "end": span.end}
            if span.region_column is not None:
                out["partitions"] |= {"region_column": span.region_column, "regions": list(span.regions)}
        out["schema"]["retyped"] = {c: list(t) for c, t in self.schema.retyped.items()}
        out["same"] = self.same
        return out


def _read(spark: SparkSession, location: str, partitions: PartitionSpan | None) -> DataFrame:
    try:
        df = spark.read.format("delta").load(location)
    except Exception as exc:  # Spark's AnalysisException: not a Delta table, or no such path
        raise Refused(f"{location} is not a Delta table: {type(exc).__name__}") from None
    if partitions is None:
        return df
    if partitions.column not in df.columns:
        raise Refused(f"{location} has no partition column {partitions.column!r}")
    col = F.col(partitions.column)
    df = df.where(col.between(F.lit(partitions.start), F.lit(partitions.end)))
    if partitions.region_column and partitions.regions:
        df = df.where(F.col(partitions.region_column).isin(*partitions.regions))
    return df


def schema_diff(left: DataFrame, right: DataFrame) -> SchemaDiff:
    lt = {f.name: f.dataType.simpleString() for f in left.schema.fields}
    rt = {f.name: f.dataType.simpleString() for f in right.schema.fields}
    return SchemaDiff(
        only_left=[c for c in lt if c not in rt],
        only_right=[c for c in rt if c not in lt],
        retyped={c: (lt[c], rt[c]) for c in lt if c in rt and lt[c] != rt[c]},
    )


def _value(df: DataFrame, column: str, retyped: bool) -> Column:
    return df[column].cast("string") if retyped else df[column]


SCRAMBLE = 0x5DEECE66D2B1A3F7
"""XORed into a key's hash for a third pick, neither the smallest nor the largest."""


def _picks(condition: Column, h: Column) -> list[Column]:
    """The hashes of up to :data:`EXAMPLES` keys where ``condition`` holds, picked in the aggregation itself:
    the smallest, the largest, and the smallest once scrambled. Plain ``min``/``max`` of a long: cheap a row."""
    ranked = F.when(condition, h)
    return [F.min(ranked), F.max(ranked), F.min(ranked.bitwiseXOR(F.lit(SCRAMBLE)))]


def _keys_of(sides: list[tuple[DataFrame, list[Column]]], names: list[str], types: list[Any], hashes: set[int]) -> dict:
    """The keys whose hash is in ``hashes``, by hash: a scan of each side's key columns alone, no join."""
    found: dict[int, dict[str, Any]] = {}
    for df, exprs in sides:
        typed = [e.cast(t).alias(n) for e, t, n in zip(exprs, types, names, strict=True)]
        rows = df.select(*typed).select(F.xxhash64(*names).alias("_h"), F.struct(*names).alias("_k"))
        for row in rows.where(F.col("_h").isin(sorted(hashes))).limit(len(hashes) * 4).collect():
            found.setdefault(row["_h"], row["_k"].asDict(recursive=True))
    return found


def diff_tables(
    spark: SparkSession,
    left: str,
    right: str,
    key: Sequence[str] = (),
    partitions: PartitionSpan | None = None,
    *,
    withheld: str | None = None,
) -> TableDiff:
    """How the Delta table at ``right`` differs from the one at ``left`` over ``partitions`` (every row when
    None), rows matched on ``key`` (the whole row when empty). With ``withheld`` (why: a classified table) no
    key value is returned, only counts and column names."""
    lf, rf = _read(spark, left, partitions), _read(spark, right, partitions)
    schema = schema_diff(lf, rf)
    common = [c for c in lf.columns if c in rf.columns]
    key = tuple(key)
    missing = [k for k in key if k not in common]
    if missing:
        raise Refused(f"key column(s) {', '.join(missing)} not on both sides of the diff")
    if key:
        compared = [c for c in common if c not in key]
        lkeys, rkeys = [F.col(c) for c in key], [F.col(c) for c in key]
        lsel = lf.select(
            *(F.col(c).alias(f"k{i}") for i, c in enumerate(key)),
            *(_value(lf, c, c in schema.retyped).alias(f"l{i}") for i, c in enumerate(compared)),
            F.lit(1).alias("ln"),
        )
        rsel = rf.select(
            *(F.col(c).alias(f"rk{i}") for i, c in enumerate(key)),
            *(_value(rf, c, c in schema.retyped).alias(f"r{i}") for i, c in enumerate(compared)),
            F.lit(1).alias("rn"),
        )
    else:
        compared = []
        lkeys = [_value(lf, c, c in schema.retyped) for c in common]
        rkeys = [_value(rf, c, c in schema.retyped) for c in common]
        lsel = lf.groupBy(*(e.alias(f"k{i}") for i, e in enumerate(lkeys))).agg(F.count(F.lit(1)).alias("ln"))
        rsel = rf.groupBy(*(e.alias(f"rk{i}") for i, e in enumerate(rkeys))).agg(F.count(F.lit(1)).alias("rn"))
    names = list(key) or common
    on = [F.col(f"k{i}").eqNullSafe(F.col(f"rk{i}")) for i in range(len(names))]
    joined = lsel.join(rsel, on=on, how="full_outer")
    ln, rn = F.coalesce(F.col("ln"), F.lit(0)), F.coalesce(F.col("rn"), F.lit(0))
    merged = [F.coalesce(F.col(f"k{i}"), F.col(f"rk{i}")).alias(n) for i, n in enumerate(names)]
    types = [f.dataType for f in joined.select(*merged).schema.fields]
    h = F.xxhash64(*merged)
    both = (ln > 0) & (rn > 0)
    changes = {c: both & ~F.col(f"l{i}").eqNullSafe(F.col(f"r{i}")) for i, c in enumerate(compared)}
    any_change = F.lit(False)
    for cond in changes.values():
        any_change = any_change | cond
    extra_left, extra_right = F.greatest(ln - rn, F.lit(0)), F.greatest(rn - ln, F.lit(0))
    aggs = [
        F.sum(ln).alias("left_rows"),
        F.sum(rn).alias("right_rows"),
        F.sum(extra_left).alias(ONLY_LEFT),
        F.sum(extra_right).alias(ONLY_RIGHT),
        F.count_if(any_change).alias("changed"),
        *(F.count_if(cond).alias(f"c{i}") for i, cond in enumerate(changes.values())),
    ]
    wanted = {ONLY_LEFT: extra_left > 0, ONLY_RIGHT: extra_right > 0}
    if withheld is None:
        wanted |= {f"c{i}": cond for i, cond in enumerate(changes.values())}
        for name, cond in wanted.items():
            aggs += [p.alias(f"x_{name}_{j}") for j, p in enumerate(_picks(cond, h))]
    row = joined.agg(*aggs).collect()[0].asDict(recursive=True)
    examples: dict[str, list[dict[str, Any]]] = {}
    if withheld is None:
        labels = {ONLY_LEFT: ONLY_LEFT, ONLY_RIGHT: ONLY_RIGHT} | {f"c{i}": c for i, c in enumerate(compared)}
        picked = {}
        for name, label in labels.items():
            found = [row[f"x_{name}_0"], row[f"x_{name}_1"], row[f"x_{name}_2"]]
            if found[2] is not None:
                found[2] ^= SCRAMBLE
            picked[label] = [p for i, p in enumerate(found) if p is not None and p not in found[:i]]
        hashes = {p for ps in picked.values() for p in ps}
        if hashes:
            keys = _keys_of([(lf, lkeys), (rf, rkeys)], names, types, hashes)
            for label, ps in picked.items():
                if ps:
                    examples[label] = [{k: _plain(v) for k, v in keys[p].items()} for p in ps if p in keys]
    return TableDiff(
        left=left,
        right=right,
        key=key,
        partitions=partitions,
        left_rows=int(row["left_rows"] or 0),
        right_rows=int(row["right_rows"] or 0),
        only_left=int(row[ONLY_LEFT] or 0),
        only_right=int(row[ONLY_RIGHT] or 0),
        changed=int(row["changed"] or 0),
        column_changes={c: int(row[f"c{i}"] or 0) for i, c in enumerate(compared)},
        schema=schema,
        examples=examples,
        withheld=withheld,
    )


def _plain(value: Any) -> Any:
    """A key value as JSON can hold it (dates and timestamps as ISO text)."""
    return value.isoformat() if hasattr(value, "isoformat") else value
