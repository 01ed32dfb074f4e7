-- Read-only work against the parent: five lookups by key in one
-- transaction, as an order entry screen reads its items (run.sh makes one
-- copy per parent access method, with @AM@ replaced by heap or refdata).
\set p1 random(1, 10)
\set p2 random(1, 10)
\set p3 random(1, 10)
\set p4 random(1, 10)
\set p5 random(1, 10)
BEGIN;
SELECT name FROM item_@AM@ WHERE id = :p1;
SELECT name FROM item_@AM@ WHERE id = :p2;
SELECT name FROM item_@AM@ WHERE id = :p3;
SELECT name FROM item_@AM@ WHERE id = :p4;
SELECT name FROM item_@AM@ WHERE id = :p5;
COMMIT;
