-- tpcc_ro.sql: read-only work on the TPC-C item table (pgbench script for tpcc.sh).
-- The item lookups of a New-Order, then an order's lines joined to their items.
\set w random(1, :scale)
\set d random(1, 10)
\set o random(20, 3000)
\set i1 random(1, 100000)
\set i2 random(1, 100000)
\set i3 random(1, 100000)
\set i4 random(1, 100000)
\set i5 random(1, 100000)
SELECT i_price, i_name, i_data FROM item1 WHERE i_id IN (:i1, :i2, :i3, :i4, :i5);
SELECT count(*), sum(ol_quantity * i_price) FROM order_line1 JOIN item1 ON i_id = ol_i_id
	WHERE ol_w_id = :w AND ol_d_id = :d AND ol_o_id BETWEEN :o - 19 AND :o;
