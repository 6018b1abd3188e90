-- Each store's day: orders, takings and refunds of shop.orders, over the run's days.
SELECT
  store_id,
  COUNT(*) AS orders,
  SUM(paid) AS takings,
  COUNT_IF(status = 'refunded') AS refunds,
  p_date
FROM {{ source('shop', 'orders') }}
WHERE {{ mesh_window('p_date') }}
GROUP BY store_id, p_date
