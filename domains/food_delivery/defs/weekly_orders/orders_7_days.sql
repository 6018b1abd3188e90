SELECT
  o.id AS order_id,
  o.placed_at,
  CAST(o.placed_at AS DATE) AS placed_on,
  o.discount_id,
  m.id AS menu_id,
  m.restaurant_id,
  mi.id AS menu_item_id,
  c.id AS category_id,
  c.name AS category
FROM food_delivery.orders AS o
INNER JOIN food_delivery.menu_items AS mi ON mi.id = o.menu_item_id
INNER JOIN food_delivery.categories AS c ON c.menu_item_id = mi.id
INNER JOIN food_delivery.menus AS m ON m.id = c.menu_id
WHERE o.status = 'delivered'
  AND o.p_date BETWEEN :partition_end - INTERVAL 6 DAYS AND :partition_end
