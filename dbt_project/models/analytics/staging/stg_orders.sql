-- The window's orders from food_delivery, trimmed to what the KPIs need.
SELECT
  id AS order_id,
  city,
  restaurant_id,
  status,
  quantity,
  delivery_minutes,
  p_date
FROM {{ source('food_delivery', 'orders') }}
WHERE {{ mesh_window('p_date') }}
