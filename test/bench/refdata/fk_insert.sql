-- One order with five lines, each referencing a random row of the small,
-- hot parent table :parent (pgbench -D parent=item_heap or item_refdata).
\set p1 random(1, 10)
\set p2 random(1, 10)
\set p3 random(1, 10)
\set p4 random(1, 10)
\set p5 random(1, 10)
BEGIN;
INSERT INTO :child (item_id) VALUES (:p1);
INSERT INTO :child (item_id) VALUES (:p2);
INSERT INTO :child (item_id) VALUES (:p3);
INSERT INTO :child (item_id) VALUES (:p4);
INSERT INTO :child (item_id) VALUES (:p5);
COMMIT;
