"""Where one commit publishes and what it is told: the same for every kind of table."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mesh_assets.model.partitions import PartitionRange
from mesh_assets.settings import S3Settings
from mesh_assets.storage.schema import ADDITIVE, SchemaRule


@dataclass(frozen=True)
class Target:
    """One commit's table and rules.

    ``partitions`` is the run's range (None for an unpartitioned output) and ``publish`` the part of it that
    passed its checks (None: all of it); ``counts`` the staged rows per partition key, when the audit has them;
    with ``rows_from_log`` and no counts they are read from the commit's files afterwards."""

    location: str
    name: str
    s3: S3Settings
    partition_column: str | None = None
    partitions: PartitionRange | None = None
    region_column: str | None = None
    """A table partitioned by date and region: its region column (the range holds the region written)."""
    publish: Sequence[datetime] | None = None
    commit_info: Mapping[str, str] = field(default_factory=dict)
    counts: Mapping[str, int] | None = None
    rows_from_log: bool = False
    schema: SchemaRule = ADDITIVE
    properties: Mapping[str, str] = field(default_factory=dict)
    """Table properties the output declares (its change feed), set when the table is created, else before the
    commit when the table lacks them (:func:`~mesh_assets.storage.strategies.merging.declared_properties`)."""

    @property
    def metadata(self) -> str | None:
        """The commit's ``userMetadata``: how Mesh finds its own commit in the table's log."""
        return json.dumps(dict(self.commit_info), sort_keys=True) if self.commit_info else None

    def chosen(self) -> list[datetime]:
        """The partitions this commit publishes (empty when unpartitioned)."""
        if self.partitions is None:
            return []
        return list(self.publish) if self.publish is not None else self.partitions.values()

    def keys(self) -> list[str]:
        """The keys of :meth:`chosen`, in order."""
        assert self.partitions is not None or not self.chosen()
        return sorted(self.partitions.grain.key(v) for v in self.chosen()) if self.partitions else []

    def rows_of_chosen(self, staged: DataFrame) -> DataFrame:
        """``staged`` without the rows of partitions that did not pass (all of it when every one did)."""
        if self.partitions is None or self.partition_column is None or self.publish is None:
            return staged
        literals = [self.partitions.literal(v) for v in self.publish]
        return staged.where(F.col(self.partition_column).isin(literals))
