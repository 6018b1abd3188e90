SELECT store_id, COUNT(*) AS orders, SUM(paid) AS takings, COUNT(DISTINCT customer_id) AS customers
FROM shop.orders
WHERE status = 'delivered' AND p_date BETWEEN :partition_end - INTERVAL 6 DAYS AND :partition_end
GROUP BY store_id
