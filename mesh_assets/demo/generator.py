"""A deterministic, seeded generator of the example mesh's source data.

The same seed and day always give the same rows, so the demo, the tests and the benchmarks see identical
data, and a test can compute what a product should contain without Spark.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta

CITIES = ("barcelona", "madrid", "milan", "lisbon")
DISHES = ("pizza", "ramen", "burger", "salad", "tacos", "curry", "poke", "falafel")
CATEGORIES = ("mains", "sides", "drinks", "desserts")

RAW_ORDERS_SCHEMA = (
    "id long, placed_at timestamp, customer_id long, restaurant_id long, menu_id long, menu_item_id long, "
    "quantity int, discount_id long, courier_id long, city string, picked_up_at timestamp, "
    "delivered_at timestamp, status string, p_date date"
)
MENUS_SCHEMA = "id long, restaurant_id long, name string, city string"
MENU_ITEMS_SCHEMA = "id long, menu_id long, name string, price_cents int"
CATEGORIES_SCHEMA = "id long, menu_id long, menu_item_id long, name string"


@dataclass(frozen=True)
class Catalogue:
    menus: list[tuple]
    menu_items: list[tuple]
    categories: list[tuple]


def catalogue(seed: int = 7, restaurants: int = 12) -> Catalogue:
    """Menus, their items and the items' categories: a slowly changing snapshot."""
    rng = random.Random(f"catalogue:{seed}")
    menus, items, categories = [], [], []
    for r in range(1, restaurants + 1):
        menu_id = 100 + r
        menus.append((menu_id, r, f"menu of restaurant {r}", CITIES[r % len(CITIES)]))
        for i in range(1, rng.randint(3, 6) + 1):
            item_id = menu_id * 100 + i
            items.append((item_id, menu_id, f"{rng.choice(DISHES)} {i}", rng.randint(400, 2400)))
            categories.append((item_id * 10, menu_id, item_id, rng.choice(CATEGORIES)))
    return Catalogue(menus, items, categories)


def raw_orders(day: date, seed: int = 7, per_day: int = 160) -> list[tuple]:
    """One day of the ordering app's export, including the duplicates an at-least-once export produces."""
    cat = catalogue(seed)
    rng = random.Random(f"orders:{seed}:{day.isoformat()}")
    items_by_menu: dict[int, list[int]] = {}
    for item_id, menu_id, _, _ in cat.menu_items:
        items_by_menu.setdefault(menu_id, []).append(item_id)
    start = datetime.combine(day, datetime.min.time())
    rows = []
    count = per_day + rng.randint(-per_day // 8, per_day // 8)
    for n in range(count):
        menu_id, restaurant_id, _, city = rng.choice(cat.menus)
        placed = start + timedelta(seconds=rng.randint(0, 86_399))
        cancelled = rng.random() < 0.05
        picked = None if cancelled else placed + timedelta(minutes=rng.randint(5, 25))
        delivered = None if cancelled else picked + timedelta(minutes=rng.randint(8, 40))
        rows.append((
            int(day.strftime("%Y%m%d")) * 10_000 + n,
            placed,
            rng.randint(1, 5_000),
            restaurant_id,
            menu_id,
            rng.choice(items_by_menu[menu_id]),
            rng.randint(1, 4),
            rng.choice([None, None, None, 11, 12]),
            None if cancelled else rng.randint(1, 300),
            city,
            picked,
            delivered,
            "cancelled" if cancelled else "delivered",
            day,
        ))
    rows += [rows[i] for i in rng.sample(range(len(rows)), k=max(1, len(rows) // 50))]
    return rows


def days(start: date, count: int) -> list[date]:
    return [start + timedelta(days=i) for i in range(count)]
