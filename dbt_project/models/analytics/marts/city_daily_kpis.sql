-- City-day KPIs: the day's orders and deliveries, and the rolling 7-day delivery time of the city's
-- restaurants (weighted by their delivered orders) from food_delivery.delivery_times_7_days.
WITH daily AS (
  SELECT
    city,
    p_date,
    COUNT(*) AS orders,
    COUNT_IF(status = 'delivered') AS delivered_orders,
    COUNT_IF(status = 'cancelled') AS cancelled_orders,
    SUM(quantity) AS items,
    AVG(CASE WHEN status = 'delivered' THEN delivery_minutes END) AS avg_delivery_minutes
  FROM {{ ref('stg_orders') }}
  WHERE {{ mesh_window('p_date') }}
  GROUP BY city, p_date
),
rolling AS (
  SELECT
    city,
    p_date,
    SUM(delivered_orders) AS delivered_orders_7_days,
    SUM(delivered_orders * avg_delivery_minutes) / SUM(delivered_orders) AS avg_delivery_minutes_7_days
  FROM {{ source('food_delivery', 'delivery_times_7_days') }}
  WHERE {{ mesh_window('p_date') }}
  GROUP BY city, p_date
)
SELECT
  d.city,
  d.orders,
  d.delivered_orders,
  d.cancelled_orders,
  ROUND(d.delivered_orders / d.orders, 4) AS delivery_rate,
  d.items,
  ROUND(d.avg_delivery_minutes, 3) AS avg_delivery_minutes,
  r.delivered_orders_7_days,
  ROUND(r.avg_delivery_minutes_7_days, 3) AS avg_delivery_minutes_7_days,
  d.p_date
FROM daily AS d
LEFT JOIN rolling AS r ON r.city = d.city AND r.p_date = d.p_date
