"""What a transformation may ask about the run it is part of."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING

from mesh_assets.model.partitions import PartitionRange

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class ProductContext:
    """Handed to a PySpark transformation that declares a ``context`` parameter."""

    spark: SparkSession
    partitions: PartitionRange | None
    log: logging.Logger
    """The run's log: Dagster's, or the Pipes log of a run launched on a cluster (both reach the step's logs)."""
    run_id: str

    @property
    def partition_date(self) -> date | None:
        """The day being computed (the last day of the range for a range-aware transformation)."""
        return self.partitions.end.date() if self.partitions else None

    @property
    def partition_start(self) -> datetime | None:
        """The first partition's start, an aware UTC datetime (exact when handed to Spark in any zone)."""
        return self.partitions.start if self.partitions else None

    @property
    def partition_end(self) -> datetime | None:
        """The last partition's start, an aware UTC datetime."""
        return self.partitions.end if self.partitions else None

    @property
    def starts_at(self) -> datetime | None:
        """The UTC instant the first partition starts at: a region's local midnight for a date-by-region table."""
        return self.partitions.bounds(self.partitions.start)[0] if self.partitions else None

    @property
    def ends_at(self) -> datetime | None:
        """The UTC instant the last partition ends at (excluded): for a region's date, its next local midnight."""
        return self.partitions.bounds(self.partitions.end)[1] if self.partitions else None

    @property
    def region(self) -> str | None:
        """The region computed, for a table partitioned by date and region."""
        return self.partitions.region if self.partitions else None
