-- One order with five lines, each referencing a random row of the small,
-- hot parent table (run.sh makes one copy per parent access method,
-- with @AM@ replaced by heap or refdata).
\set p1 random(1, 10)
\set p2 random(1, 10)
\set p3 random(1, 10)
\set p4 random(1, 10)
\set p5 random(1, 10)
BEGIN;
INSERT INTO line_@AM@ (item_id) VALUES (:p1);
INSERT INTO line_@AM@ (item_id) VALUES (:p2);
INSERT INTO line_@AM@ (item_id) VALUES (:p3);
INSERT INTO line_@AM@ (item_id) VALUES (:p4);
INSERT INTO line_@AM@ (item_id) VALUES (:p5);
COMMIT;
