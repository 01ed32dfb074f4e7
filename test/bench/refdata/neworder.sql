-- neworder.sql: one TPC-C New-Order transaction as a pgbench script
-- (neworder.sh; -D scale=N).  A random customer of a random district
-- orders ten items chosen with TPC-C's non-uniform random function
-- NURand(8191, 1, 100000), all from the home warehouse; each order line
-- reads its item and is inserted, which runs the foreign-key checks
-- order_line -> item, -> stock and -> orders; the stock rows are updated
-- in one statement, which locks them in key order (as TPC-C drivers sort
-- the items), so that New-Orders do not deadlock on stock.
\set w random(1, :scale)
\set d random(1, 10)
\set c ((random(0, 1023) | random(1, 3000)) + 259) % 3000 + 1
\set i1 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set i2 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set i3 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set i4 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set i5 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set i6 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set i7 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set i8 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set i9 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set i10 ((random(0, 8191) | random(1, 100000)) + 7911) % 100000 + 1
\set q random(1, 10)
BEGIN;
SELECT c_discount, c_last, c_credit, w_tax FROM customer JOIN warehouse ON w_id = c_w_id
	WHERE c_w_id = :w AND c_d_id = :d AND c_id = :c;
UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = :w AND d_id = :d
	RETURNING d_next_o_id - 1 AS o, d_tax \gset
INSERT INTO orders VALUES (:w, :d, :o, :c, now(), NULL, 10, 1);
INSERT INTO new_order VALUES (:w, :d, :o);
UPDATE stock SET s_quantity = CASE WHEN s_quantity >= :q + 10 THEN s_quantity - :q ELSE s_quantity - :q + 91 END,
	s_ytd = s_ytd + :q, s_order_cnt = s_order_cnt + 1
	WHERE s_w_id = :w AND s_i_id IN (:i1, :i2, :i3, :i4, :i5, :i6, :i7, :i8, :i9, :i10);
INSERT INTO order_line SELECT :w, :d, :o, 1, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i1;
INSERT INTO order_line SELECT :w, :d, :o, 2, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i2;
INSERT INTO order_line SELECT :w, :d, :o, 3, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i3;
INSERT INTO order_line SELECT :w, :d, :o, 4, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i4;
INSERT INTO order_line SELECT :w, :d, :o, 5, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i5;
INSERT INTO order_line SELECT :w, :d, :o, 6, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i6;
INSERT INTO order_line SELECT :w, :d, :o, 7, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i7;
INSERT INTO order_line SELECT :w, :d, :o, 8, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i8;
INSERT INTO order_line SELECT :w, :d, :o, 9, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i9;
INSERT INTO order_line SELECT :w, :d, :o, 10, i_id, :w, NULL, :q, :q * i_price, s_dist_info FROM item JOIN stock ON s_i_id = i_id AND s_w_id = :w WHERE i_id = :i10;
COMMIT;
