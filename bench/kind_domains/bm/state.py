"""The merge benchmark's table: a current state keyed by ``id`` (rows are given to the publisher directly)."""

from pyspark.sql import DataFrame

from mesh_assets import Merge, Output, Product, chat

state = Product("state", owner="bench@example.com", contacts=[chat("#bench")])


@state.transformation(Output(table="state", partitioning="none", kind=Merge(unique_key="id")))
def build_state() -> DataFrame:
    raise NotImplementedError("the benchmark publishes generated rows")
