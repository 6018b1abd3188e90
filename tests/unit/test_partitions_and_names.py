"""Partition keys and identifiers: the values that reach paths, SQL and Spark are validated first."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from zones import local_time_zone

from mesh_assets.graph.queries import rewrite_tables
from mesh_assets.model.grain import Grain, PartitionKeyError
from mesh_assets.model.names import check_identifier, split_table_ref
from mesh_assets.model.partitions import PartitionRange
from mesh_assets.model.product import Window
from mesh_assets.storage.writer import replace_predicate


@pytest.mark.parametrize("key", ["2024-02-30", "'; DROP TABLE x", "../x", "2024-2-1", "", "2024-02-01 "])
def test_bad_daily_keys_are_refused(key):
    with pytest.raises(PartitionKeyError, match="invalid daily partition key"):
        Grain.DAILY.parse(key)


def test_good_keys_parse_and_ranges_enumerate():
    rng = PartitionRange.from_keys(Grain.DAILY, "2024-02-27", "2024-03-01")
    assert rng.keys() == ["2024-02-27", "2024-02-28", "2024-02-29", "2024-03-01"]
    assert Grain.HOURLY.parse("2024-02-29-13:00") == datetime(2024, 2, 29, 13, tzinfo=UTC)
    with pytest.raises(PartitionKeyError, match="ends"):
        PartitionRange.from_keys(Grain.DAILY, "2024-03-01", "2024-02-01")


def test_windows_widen_and_convert_kinds():
    day = PartitionRange.from_keys(Grain.DAILY, "2021-06-10", "2021-06-10")
    assert day.widen(Window.model_validate("last_7").lookback).keys()[0] == "2021-06-04"
    hours = day.as_grain(Grain.HOURLY)
    assert len(hours.keys()) == 24 and hours.keys()[-1] == "2021-06-10-23:00"


def test_a_key_names_its_span_of_the_grain_and_a_day_names_24_hours():
    assert Grain.HOURLY.span("2021-06-10") == (datetime(2021, 6, 10, tzinfo=UTC), datetime(2021, 6, 10, 23, tzinfo=UTC))
    assert Grain.HOURLY.span("2021-06-10-05:00") == (datetime(2021, 6, 10, 5, tzinfo=UTC),) * 2
    assert Grain.DAILY.span("2021-06-10") == (datetime(2021, 6, 10, tzinfo=UTC),) * 2
    with pytest.raises(PartitionKeyError, match="invalid daily partition key"):
        Grain.DAILY.span("2021-06-10-05:00")  # an hour does not name a day
    assert Grain.of_partitions(Grain.HOURLY.partitions_def(date(2021, 6, 1))) is Grain.HOURLY
    hours = PartitionRange.from_keys(Grain.HOURLY, "2021-06-10-05:00", "2021-06-11-02:00")
    assert hours.as_grain(Grain.DAILY).keys() == ["2021-06-10", "2021-06-11"]


def test_replace_predicate_uses_typed_literals_only():
    rng = PartitionRange.from_keys(Grain.DAILY, "2021-06-04", "2021-06-06")
    assert replace_predicate("p_date", rng) == "`p_date` >= DATE'2021-06-04' AND `p_date` <= DATE'2021-06-06'"
    with pytest.raises(ValueError, match="invalid identifier"):
        replace_predicate("p_date` OR 1=1 --", rng)


def test_a_day_is_24_utc_hours_in_any_process_zone():
    with local_time_zone("Europe/Madrid"):  # 2023-03-26 has 23 hours there
        hours = PartitionRange.from_keys(Grain.DAILY, "2023-03-26", "2023-03-26").as_grain(Grain.HOURLY)
        assert len(hours.keys()) == 24 and hours.literal(hours.end) == datetime(2023, 3, 26, 23, tzinfo=UTC)
        assert replace_predicate("p_hour", hours) == (
            "`p_hour` >= TIMESTAMP'2023-03-26 00:00:00+00:00' AND `p_hour` <= TIMESTAMP'2023-03-26 23:00:00+00:00'"
        )


@pytest.mark.parametrize("name", ["../x", "a/b", "x; drop table y", "Orders", "1abc", "a b", ""])
def test_bad_identifiers_are_refused(name):
    with pytest.raises(ValueError, match="invalid identifier"):
        check_identifier(name)


def test_table_refs():
    assert split_table_ref("orders", default_domain="food_delivery") == ("food_delivery", "orders")
    assert split_table_ref("central.order_descriptors") == ("central", "order_descriptors")
    with pytest.raises(ValueError):
        split_table_ref("a.b.c")


def test_sql_tables_are_swapped_for_views_by_identifier():
    sql = "SELECT o.id FROM food_delivery.orders AS o JOIN food_delivery.menus m ON m.id = o.menu_id"
    out = rewrite_tables(sql, {("food_delivery", "orders"): "v_orders", ("food_delivery", "menus"): "v_menus"})
    assert "v_orders AS o" in out and "v_menus AS m" in out and "food_delivery" not in out
