"""Which past ranges of a table whose partitions apply in order a run may recompute.

A ``partitions`` table's partition is its rows alone, so any range is recomputed on its own. A ``merge`` table
without ``sequence_by`` is the result of its partitions applied in order: a past one applied again on top of
later ones would put its older values back, so it is recomputed only together with every later applied
partition (replayed in order, one run). A ``history`` table (or ``changes`` kept as history) holds versions that
later partitions closed: only its latest partition may be applied again (its versions are replaced), and an
earlier one only by a rebuild, which replays every partition in order from an empty table.
"""

from __future__ import annotations

from collections.abc import Iterable

from mesh_assets.graph.resolve import Table
from mesh_assets.model.errors import Refused
from mesh_assets.model.kinds import Replay
from mesh_assets.model.partitions import PartitionRange


class OutOfOrder(Refused):
    """A past range of a table applied in order, asked for without what must follow it: nothing is computed."""


def refuse_out_of_order(table: Table, part: PartitionRange | None, applied: Iterable[str], rebuild: bool) -> None:
    """Refuse a run over ``part`` when the table's kind cannot recompute it given the partitions already
    ``applied`` (materialized); a rebuild replays everything and is never refused."""
    kind = table.table_kind
    if part is None or rebuild or kind.replay is Replay.ANY:
        return
    first, last = part.grain.key(part.start), part.grain.key(part.end)
    bound = last if kind.replay is Replay.FORWARD else first
    later = sorted(key for key in applied if key > bound)
    if not later:
        return
    latest, asset = later[-1], table.ref.replace(".", "/", 1)
    span = first if first == last else f"{first}..{last}"
    if kind.replay is Replay.FORWARD:
        raise OutOfOrder(
            f"{table.ref} ({kind.describe()}) applies its partitions in order and {span} comes before its latest "
            f"applied partition {latest}: applied alone it would put older values back over later ones. Nothing "
            f"was computed. Recompute it with every later partition, replayed in order in one run: "
            f"`mesh backfill {asset} --start {first} --end {latest}`"
        )
    raise OutOfOrder(
        f"{table.ref} ({kind.describe()}) keeps versions in order and {span} comes before its latest applied "
        f"partition {latest}, whose versions follow from it. Nothing was computed. Only the latest partition may "
        f"be applied again; to recompute an earlier one, rebuild the table, which replays every partition in "
        f"order: `mesh rebuild {asset}`"
    )
