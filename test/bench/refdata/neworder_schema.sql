-- neworder_schema.sql: the tables of a TPC-C New-Order, with TPC-C's
-- foreign keys (order_line.ol_i_id -> item among them), filled for
-- :scale warehouses (psql -v scale=N).  Columns New-Order does not touch
-- are left out or shortened; the row counts are TPC-C's: 100,000 items,
-- and per warehouse 10 districts, 30,000 customers, 100,000 stock rows
-- and 30,000 orders (3,000 per district, the last 900 undelivered).
-- neworder.sh loads it once and copies the database.

CREATE TABLE warehouse (
	w_id int PRIMARY KEY,
	w_name text NOT NULL,
	w_tax numeric(4, 4) NOT NULL,
	w_ytd numeric(12, 2) NOT NULL);
CREATE TABLE district (
	d_w_id int NOT NULL REFERENCES warehouse,
	d_id int NOT NULL,
	d_name text NOT NULL,
	d_tax numeric(4, 4) NOT NULL,
	d_ytd numeric(12, 2) NOT NULL,
	d_next_o_id int NOT NULL,
	PRIMARY KEY (d_w_id, d_id));
CREATE TABLE customer (
	c_w_id int NOT NULL,
	c_d_id int NOT NULL,
	c_id int NOT NULL,
	c_last text NOT NULL,
	c_credit char(2) NOT NULL,
	c_discount numeric(4, 4) NOT NULL,
	c_balance numeric(12, 2) NOT NULL,
	c_data text NOT NULL,
	PRIMARY KEY (c_w_id, c_d_id, c_id),
	FOREIGN KEY (c_w_id, c_d_id) REFERENCES district);
CREATE TABLE item (
	i_id int PRIMARY KEY,
	i_im_id int NOT NULL,
	i_name text NOT NULL,
	i_price numeric(5, 2) NOT NULL,
	i_data text NOT NULL);
CREATE TABLE stock (
	s_w_id int NOT NULL REFERENCES warehouse,
	s_i_id int NOT NULL REFERENCES item,
	s_quantity int NOT NULL,
	s_dist_info char(24) NOT NULL,
	s_ytd int NOT NULL,
	s_order_cnt int NOT NULL,
	s_remote_cnt int NOT NULL,
	s_data text NOT NULL,
	PRIMARY KEY (s_w_id, s_i_id));
CREATE TABLE orders (
	o_w_id int NOT NULL,
	o_d_id int NOT NULL,
	o_id int NOT NULL,
	o_c_id int NOT NULL,
	o_entry_d timestamptz NOT NULL,
	o_carrier_id int,
	o_ol_cnt int NOT NULL,
	o_all_local int NOT NULL,
	PRIMARY KEY (o_w_id, o_d_id, o_id),
	FOREIGN KEY (o_w_id, o_d_id, o_c_id) REFERENCES customer);
CREATE TABLE new_order (
	no_w_id int NOT NULL,
	no_d_id int NOT NULL,
	no_o_id int NOT NULL,
	PRIMARY KEY (no_w_id, no_d_id, no_o_id),
	FOREIGN KEY (no_w_id, no_d_id, no_o_id) REFERENCES orders);
CREATE TABLE order_line (
	ol_w_id int NOT NULL,
	ol_d_id int NOT NULL,
	ol_o_id int NOT NULL,
	ol_number int NOT NULL,
	ol_i_id int NOT NULL REFERENCES item,
	ol_supply_w_id int NOT NULL,
	ol_delivery_d timestamptz,
	ol_quantity int NOT NULL,
	ol_amount numeric(6, 2) NOT NULL,
	ol_dist_info char(24) NOT NULL,
	PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number),
	FOREIGN KEY (ol_w_id, ol_d_id, ol_o_id) REFERENCES orders,
	FOREIGN KEY (ol_supply_w_id, ol_i_id) REFERENCES stock);

-- Deterministic contents, so that every load is the same.
SELECT setseed(0.5);
INSERT INTO item
	SELECT i, 1 + (random() * 9999)::int, 'item-' || md5(i::text),
		1 + (random() * 99)::numeric(5, 2), repeat(md5(i::text), 1 + i % 2)
	FROM generate_series(1, 100000) i;
INSERT INTO warehouse
	SELECT w, 'w' || w, (random() * 0.2)::numeric(4, 4), 300000
	FROM generate_series(1, :scale) w;
INSERT INTO district
	SELECT w, d, 'd' || d, (random() * 0.2)::numeric(4, 4), 30000, 3001
	FROM generate_series(1, :scale) w, generate_series(1, 10) d;
INSERT INTO customer
	SELECT w, d, c, 'last-' || (c % 1000), CASE WHEN random() < 0.1 THEN 'BC' ELSE 'GC' END,
		(random() * 0.5)::numeric(4, 4), -10, repeat('x', 300)
	FROM generate_series(1, :scale) w, generate_series(1, 10) d, generate_series(1, 3000) c;
INSERT INTO stock
	SELECT w, i, 10 + (random() * 90)::int, md5(w || ':' || i)::char(24), 0, 0, 0,
		repeat('s', 26 + i % 25)
	FROM generate_series(1, :scale) w, generate_series(1, 100000) i;
INSERT INTO orders
	SELECT w, d, o, 1 + (o * 7) % 3000, now(), CASE WHEN o <= 2100 THEN 1 + o % 10 END, 10, 1
	FROM generate_series(1, :scale) w, generate_series(1, 10) d, generate_series(1, 3000) o;
INSERT INTO new_order
	SELECT w, d, o
	FROM generate_series(1, :scale) w, generate_series(1, 10) d, generate_series(2101, 3000) o;
INSERT INTO order_line
	SELECT w, d, o, n, 1 + (o * 31 + n * 7919) % 100000, w, CASE WHEN o <= 2100 THEN now() END,
		5, CASE WHEN o <= 2100 THEN 0 ELSE (random() * 9999)::numeric(6, 2) END, 'dist-info'
	FROM generate_series(1, :scale) w, generate_series(1, 10) d, generate_series(1, 3000) o,
		generate_series(1, 10) n;
