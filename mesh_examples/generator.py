"""A deterministic, seeded generator of the example mesh's source data.

The same seed and day always give the same rows, so the demo, the tests and the benchmarks see identical
data, and a test can compute what a product should contain without Spark. Times are aware UTC datetimes:
Spark receives them as the same instants whatever the process's time zone.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from mesh_assets.model.grain import midnight, utc

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
    start = midnight(day)
    rows = []
    count = per_day + rng.randint(-per_day // 8, per_day // 8)
    for n in range(count):
        menu_id, restaurant_id, _, city = rng.choice(cat.menus)
        placed = start + timedelta(seconds=rng.randint(0, 86_399))
        cancelled = rng.random() < 0.05
        picked = None if cancelled else placed + timedelta(minutes=rng.randint(5, 25))
        delivered = None if cancelled else picked + timedelta(minutes=rng.randint(8, 40))
        rows.append(
            (
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
            )
        )
    rows += [rows[i] for i in rng.sample(range(len(rows)), k=max(1, len(rows) // 50))]
    return rows


def days(start: date, count: int) -> list[date]:
    return [start + timedelta(days=i) for i in range(count)]


# central: the order-event stream every domain's order facts come from ---------------------------------

CITY_CENTRES = {
    "barcelona": (41.3874, 2.1686),
    "madrid": (40.4168, -3.7038),
    "milan": (45.4642, 9.1900),
    "lisbon": (38.7223, -9.1393),
}
STORES = 40

RAW_ORDER_EVENTS_SCHEMA = (
    "event_id long, order_id long, event_type string, event_at timestamp, placed_at timestamp, city string, "
    "customer_id long, store_id long, courier_id long, pickup_lat double, pickup_lon double, "
    "dropoff_lat double, dropoff_lon double, p_hour timestamp"
)


def store_location(store_id: int, seed: int = 7) -> tuple[str, float, float]:
    """A store's city and coordinates: fixed for a seed, so pickups of one store share a point."""
    rng = random.Random(f"store:{seed}:{store_id}")
    city = CITIES[store_id % len(CITIES)]
    lat, lon = CITY_CENTRES[city]
    return city, round(lat + rng.uniform(-0.04, 0.04), 6), round(lon + rng.uniform(-0.05, 0.05), 6)


@lru_cache(maxsize=64)
def order_events(day: date, seed: int = 7, per_day: int = 120) -> tuple[tuple, ...]:
    """Every event of the orders placed on ``day``; late orders' events spill into the next day.

    Events carry the order's payload (city, store, addresses) as the app emits it, so any one event
    describes its order. Event ids are ``order_id * 10 + step``; times within an order strictly increase.
    """
    rng = random.Random(f"order-events:{seed}:{day.isoformat()}")
    start = midnight(day)
    events = []
    for n in range(per_day + rng.randint(-per_day // 8, per_day // 8)):
        order_id = int(day.strftime("%Y%m%d")) * 10_000 + n
        store_id = rng.randint(1, STORES)
        city, pickup_lat, pickup_lon = store_location(store_id, seed)
        dropoff_lat = round(pickup_lat + rng.uniform(-0.03, 0.03), 6)
        dropoff_lon = round(pickup_lon + rng.uniform(-0.03, 0.03), 6)
        placed = start + timedelta(seconds=rng.randint(0, 86_399))
        payload = (placed, city, rng.randint(1, 5_000), store_id)
        where = (pickup_lat, pickup_lon, dropoff_lat, dropoff_lon)
        steps: list[tuple[str, datetime, int | None]] = [("placed", placed, None)]
        if rng.random() < 0.06:
            steps.append(("cancelled", placed + timedelta(minutes=rng.randint(1, 20)), None))
        else:
            courier_id = rng.randint(1, 300)
            picked = placed + timedelta(minutes=rng.randint(5, 30), seconds=rng.randint(0, 59))
            delivered = picked + timedelta(minutes=rng.randint(8, 45), seconds=rng.randint(0, 59))
            steps += [("picked_up", picked, courier_id), ("delivered", delivered, courier_id)]
        for i, (kind, at, courier) in enumerate(steps):
            events.append(
                (
                    order_id * 10 + i,
                    order_id,
                    kind,
                    at,
                    *payload,
                    courier,
                    *where,
                    at.replace(minute=0, second=0, microsecond=0),
                )
            )
    return tuple(events)


def raw_order_events(hour: datetime, seed: int = 7) -> list[tuple]:
    """What ingestion lands for one hour: that hour's events, plus at-least-once duplicates."""
    hour = utc(hour).replace(minute=0, second=0, microsecond=0)
    rows = sorted(
        (e for day in (hour.date() - timedelta(days=1), hour.date()) for e in order_events(day, seed) if e[-1] == hour),
        key=lambda e: (e[3], e[0]),
    )
    rng = random.Random(f"order-events-dup:{seed}:{hour:%Y-%m-%dT%H:%M:%S}")
    return rows + [rows[i] for i in rng.sample(range(len(rows)), k=(len(rows) + 9) // 10)]


def hours(day: date) -> list[datetime]:
    """The 24 hourly partitions of ``day`` (UTC)."""
    start = midnight(day)
    return [start + timedelta(hours=h) for h in range(24)]


# central: the app's events of each region, landed in 15-minute batches -----------------------------------

APP_REGIONS = {"eu": "Europe/Madrid", "latam": "America/Sao_Paulo", "apac": "Asia/Singapore"}
"""The regions whose apps send events, with the time zone their cities' days are counted in."""
REGION_CITIES = {"eu": ("madrid", "barcelona", "milan"), "latam": ("sao_paulo",), "apac": ("singapore",)}
APP_EVENT_TYPES = ("app_opened", "search", "checkout")
BATCH = timedelta(minutes=15)

RAW_APP_EVENTS_SCHEMA = (
    "event_id long, session_id string, region string, city string, event_type string, event_at timestamp, "
    "p_batch timestamp"
)


def raw_app_events(batch: datetime, seed: int = 7) -> list[tuple]:
    """What the regions' ingestion lands for one 15-minute batch (UTC): each region's sessions that started in it
    (none to two, fewer in its local night), each an ``app_opened``, maybe a ``search`` and a ``checkout``, all
    within the batch; plus an at-least-once duplicate now and then. A few rows a batch, as the demo wants."""
    batch = utc(batch).replace(second=0, microsecond=0)
    rng = random.Random(f"app-events:{seed}:{batch:%Y-%m-%dT%H:%M}")
    stamp = int(batch.strftime("%Y%m%d%H%M"))
    rows = []
    for r, (region, zone) in enumerate(APP_REGIONS.items()):
        night = batch.astimezone(ZoneInfo(zone)).hour < 7
        for s in range(rng.randint(0, 1) if night else rng.randint(1, 2)):
            session = f"{region}-{stamp}-{s}"
            city = rng.choice(REGION_CITIES[region])
            at = batch + timedelta(seconds=rng.randint(0, 599))
            kinds = APP_EVENT_TYPES[: rng.choice((1, 2, 2, 3))]
            for k, kind in enumerate(kinds):
                event_id = (stamp * 10 + r) * 100 + s * 10 + k
                rows.append((event_id, session, region, city, kind, at + timedelta(seconds=60 * k), batch))
    if rows and rng.random() < 0.1:
        rows.append(rng.choice(rows))
    return rows


def batches(first: datetime, last: datetime) -> list[datetime]:
    """The 15-minute batches from ``first`` to ``last`` (both included, UTC)."""
    out, at = [], utc(first)
    while at <= utc(last):
        out.append(at)
        at += BATCH
    return out


# growth: Google Search Console's daily export ------------------------------------------------------------

SEARCH_QUERIES = (
    "food delivery",
    "pizza near me",
    "sushi delivery",
    "late night food",
    "grocery delivery",
    "courier jobs",
    "promo code",
    "burger delivery",
)
COUNTRIES = ("es", "it", "pt")
DEVICES = ("mobile", "desktop", "tablet")

GOOGLE_SEARCH_CONSOLE_SCHEMA = (
    "gsc_date date, query string, page string, country string, device string, clicks long, "
    "impressions long, avg_position double, p_date date"
)


def google_search_console(day: date, seed: int = 7) -> list[tuple]:
    """One day of search performance per query, country and device; quiet combinations are absent."""
    rng = random.Random(f"gsc:{seed}:{day.isoformat()}")
    rows = []
    for query in SEARCH_QUERIES:
        page = "/" + query.replace(" ", "-")
        for country in COUNTRIES:
            for device in DEVICES:
                if rng.random() < 0.3:
                    continue
                impressions = rng.randint(20, 5_000)
                clicks = rng.randint(0, impressions // 10)
                position = round(rng.uniform(1, 30), 2)
                rows.append((day, query, page, country, device, clicks, impressions, position, day))
    return rows


CUSTOMER_CHANGES_SCHEMA = "op string, customer_id long, email string, plan string, changed_at timestamp, p_date date"
FIRST_CUSTOMER_DAY = date(2021, 6, 1)


def customer_changes(day: date, seed: int = 7) -> list[tuple]:
    """The accounts app's change export of ``day`` (CDC rows ``op`` I/U/D), as an outside writer lands it: listed
    in no order, with events of the day before that arrived late, some older than what was already exported.

    Day n inserts customers 2n+1 (08:00) and 2n+2 (09:00); upgrades yesterday's first one to ``plus`` (12:00)
    and ``pro`` (14:00); deletes yesterday's second one (10:00); and carries two late events of the day before
    yesterday's: an update of its deleted customer older than the delete (never brings it back), and a
    ``plus`` of its first customer older than its ``pro`` (ignored)."""
    n = (day - FIRST_CUSTOMER_DAY).days
    start = midnight(day)

    def at(days_back: int, hours: float) -> datetime:
        return start - timedelta(days=days_back) + timedelta(hours=hours)

    def email(customer: int) -> str:
        return f"customer{customer}@example.com"

    rows = [("I", 2 * n + 1, email(2 * n + 1), "free", at(0, 8)), ("I", 2 * n + 2, email(2 * n + 2), "free", at(0, 9))]
    if n >= 1:
        first, second = 2 * (n - 1) + 1, 2 * (n - 1) + 2
        rows += [
            ("U", first, email(first), "plus", at(0, 12)),
            ("U", first, email(first), "pro", at(0, 14)),
            ("D", second, None, None, at(0, 10)),
        ]
    if n >= 2:
        first, second = 2 * (n - 2) + 1, 2 * (n - 2) + 2
        rows += [
            ("U", second, email(second), "plus", at(1, 9.5)),  # before its delete at 10:00 yesterday
            ("U", first, email(first), "plus", at(1, 13)),  # before its pro at 14:00 yesterday
        ]
    random.Random(f"customers:{seed}:{day.isoformat()}").shuffle(rows)
    return [(*row, day) for row in rows]


def current_customers(last: date) -> dict[int, tuple[str, str]]:
    """What applying every export up to ``last`` leaves, per customer: (email, plan)."""
    n = (last - FIRST_CUSTOMER_DAY).days
    out = {2 * k + 1: (f"customer{2 * k + 1}@example.com", "pro") for k in range(n)}
    out[2 * n + 1] = (f"customer{2 * n + 1}@example.com", "free")
    out[2 * n + 2] = (f"customer{2 * n + 2}@example.com", "free")
    return out
