-- Per restaurant and day: orders placed, delivered and cancelled, and items ordered. A food_delivery model: its
-- folder's config names the domain, and food_delivery's own code location builds it.
SELECT
  restaurant_id,
  city,
  COUNT(*) AS orders,
  COUNT_IF(status = 'delivered') AS delivered_orders,
  COUNT_IF(status = 'cancelled') AS cancelled_orders,
  SUM(quantity) AS items,
  p_date
FROM {{ source('food_delivery', 'orders') }}
WHERE {{ mesh_window('p_date') }}
GROUP BY restaurant_id, city, p_date
