#!/usr/bin/env bash
#
# corpus.sh: the page codec of compressed tablespaces against plain per-page
# zstd, relation by relation, on data that nobody shaped to suit it.
#
#   test/bench/compression/corpus.sh [OUTPUT.md]
#
# One throwaway cluster (build/bench/corpus), plain storage.  Data sets:
#
# - regression: the database upstream's core regression suite leaves behind
#   (pg_regress installcheck against this cluster): hundreds of tables and
#   indexes of every type, written by other people for other reasons;
# - dss: a decision-support schema in the shape of TPC-H's orders and
#   lineitem (integers, numerics, dates, short fixed strings, a comment of
#   varying length made of words), generated in SQL with a fixed seed;
# - catalog: copies of pg_proc, pg_attribute, pg_description and pg_depend
#   (real catalog rows, of every width);
# - bench: pgbench -i -s 20 and sysbench's oltp tables (2 x 250,000 rows),
#   for the figures the codec must keep.
#
# After CHECKPOINT, each relation's main fork of at least MIN_PAGES pages
# (default 64) goes through page_codec.c at zstd level 1: plain zstd on each
# page in the storage manager's units (128 bytes; 512 before format 3),
# the storage manager's codec (transforms, estimate, zstd) in the same
# units, and the CPU per page of both; then the same with a trained
# dictionary per segment, and zstd on the whole file.  The codec must never
# be worse than plain zstd (the target: within 2%).
#
# Needs sysbench (installed with apt-get when run as root).  Runs the server
# as the test user when started by root.  Writes markdown to
# OUTPUT.md (default: stdout).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/corpus
MIN_PAGES=${MIN_PAGES:-64}
OUT=${1:-/dev/stdout}

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user "$WORK" "$OUT" "$0" sysbench libzstd-dev liblz4-dev
	exit
fi

mkdir -p "$WORK"
build_page_codec "$WORK"

bench_cluster "$WORK"
cat >>"$WORK/data/postgresql.conf" <<EOF
shared_buffers = 512MB
checkpoint_timeout = 30min
polar_bulk_extend_size = 0
EOF
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
trap '"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true' EXIT

psql()
{
	"$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -v ON_ERROR_STOP=1 "$@"
}

# regression: upstream's core suite, run against this cluster
make -s -C "$PG_OBJ/src/test/regress" installcheck \
	EXTRA_REGRESS_OPTS="--host=127.0.0.1 --port=$port" \
	>"$WORK/regress.log" 2>&1 || echo "(some regression tests failed; their data is used all the same)" >&2

# dss and catalog: generated with a fixed seed
psql -d postgres -c "CREATE DATABASE corpus"
psql -d corpus <<'SQL'
SELECT setseed(0.42);
CREATE TABLE words AS
  SELECT row_number() OVER () AS n, w
  FROM unnest(string_to_array(
    'furiously quickly carefully slyly blithely ironic final pending regular '
    'express special bold even silent unusual fluffy daring ruthless idle '
    'busy enticing close quiet deposits requests accounts packages foxes '
    'theodolites instructions pinto beans asymptotes dependencies platelets '
    'excuses ideas dolphins sheaves frays sleep wake haggle nag cajole use '
    'detect integrate affix engage boost poach doze among about above after '
    'along alongside around at atop before behind beneath beside besides', ' ')) w;
CREATE FUNCTION comment_text(maxlen int) RETURNS text LANGUAGE sql AS $$
  SELECT left(string_agg(w, ' '), 10 + (random() * (maxlen - 10))::int)
  FROM (SELECT w FROM words ORDER BY random() LIMIT 12) s
$$;
CREATE TABLE orders (
  o_orderkey bigint, o_custkey int, o_orderstatus char(1),
  o_totalprice numeric(15,2), o_orderdate date, o_orderpriority char(15),
  o_clerk char(15), o_shippriority int, o_comment varchar(79));
INSERT INTO orders
  SELECT g * 4, 1 + (random() * 14999)::int,
         (ARRAY['F','O','P'])[1 + (random() * 2)::int],
         round((random() * 500000)::numeric, 2),
         date '1992-01-01' + (random() * 2400)::int,
         (ARRAY['1-URGENT','2-HIGH','3-MEDIUM','4-NOT SPECIFIED','5-LOW'])[1 + (random() * 4)::int],
         'Clerk#' || lpad((1 + (random() * 999)::int)::text, 9, '0'),
         0, comment_text(79)
  FROM generate_series(1, 150000) g;
CREATE TABLE lineitem (
  l_orderkey bigint, l_partkey int, l_suppkey int, l_linenumber int,
  l_quantity numeric(15,2), l_extendedprice numeric(15,2),
  l_discount numeric(15,2), l_tax numeric(15,2), l_returnflag char(1),
  l_linestatus char(1), l_shipdate date, l_commitdate date,
  l_receiptdate date, l_shipinstruct char(25), l_shipmode char(10),
  l_comment varchar(44));
INSERT INTO lineitem
  SELECT o_orderkey, 1 + (random() * 199999)::int, 1 + (random() * 9999)::int, l,
         1 + (random() * 49)::int, round((random() * 100000)::numeric, 2),
         round((random() * 0.1)::numeric, 2), round((random() * 0.08)::numeric, 2),
         (ARRAY['A','N','R'])[1 + (random() * 2)::int],
         (ARRAY['F','O'])[1 + (random())::int],
         o_orderdate + (1 + random() * 120)::int,
         o_orderdate + (30 + random() * 60)::int,
         o_orderdate + (2 + random() * 150)::int,
         (ARRAY['DELIVER IN PERSON','COLLECT COD','NONE','TAKE BACK RETURN'])[1 + (random() * 3)::int],
         (ARRAY['REG AIR','AIR','RAIL','SHIP','TRUCK','MAIL','FOB'])[1 + (random() * 6)::int],
         comment_text(44)
  FROM orders, generate_series(1, 1 + (random() * 6)::int) l;
CREATE INDEX lineitem_shipdate ON lineitem (l_shipdate);
CREATE INDEX lineitem_orderkey ON lineitem (l_orderkey, l_linenumber);
CREATE INDEX orders_orderdate ON orders (o_orderdate);
CREATE TABLE cat_proc AS SELECT p.* FROM pg_proc p, generate_series(1, 10);
CREATE TABLE cat_attribute AS
  SELECT attrelid, attname, atttypid, attlen, attnum, atttypmod, attndims,
         attbyval, attalign, attstorage, attcompression, attnotnull,
         atthasdef, atthasmissing, attidentity, attgenerated, attisdropped,
         attislocal, attinhcount, attcollation, attstattarget, attacl,
         attoptions, attfdwoptions
  FROM pg_attribute a, generate_series(1, 10);
CREATE TABLE cat_description AS SELECT d.* FROM pg_description d, generate_series(1, 10);
CREATE TABLE cat_depend AS SELECT d.* FROM pg_depend d, generate_series(1, 10);
SQL
"$BIN/pgbench" -q -i -s 20 -h 127.0.0.1 -p "$port" corpus >"$WORK/pgbench.log" 2>&1
sysbench oltp_read_only --db-driver=pgsql --pgsql-host=127.0.0.1 \
	--pgsql-port="$port" --pgsql-user="$(id -un)" --pgsql-db=corpus \
	--tables=2 --table-size=250000 prepare >"$WORK/sysbench.log"
psql -d postgres -c CHECKPOINT

{
	echo "## Corpus: per-page zstd against the storage manager's codec"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); machine: $(nproc) cores, $(uname -r)"
	echo "- command: \`test/bench/compression/corpus.sh\`, zstd level 1, relations of $MIN_PAGES pages and more"
	echo "- ratio: logical size over the size in 128-byte units, the unit of format 3 (a page that does not save 512 bytes is stored raw)"
	echo
	echo "- dictionary: a zstd dictionary per segment trained on 2% of its pages (64 to 1024) as pgstrata_train_dictionary() trains it, its bytes counted, kept only where it pays for itself twice; whole file: zstd at the same level on the relation's file at once, the ceiling per-page compression is measured against"
	echo
	echo "| data set | relation | pages | plain zstd | codec | codec/plain | compress µs/page plain | codec | decode µs/page plain | codec | dictionary | whole file | dictionary/whole | compress µs/page dictionary | decode µs/page dictionary |"
	echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
} >"$WORK/results.md"

# one line per relation: data set, name, files
for db in regression corpus; do
	psql -d "$db" -F ' ' -c "
SELECT CASE WHEN '$db' = 'regression' THEN 'regression'
            WHEN c.relname ~ '^(pgbench|sbtest|k_[0-9])' THEN 'bench'
            WHEN c.relname ~ '^cat_' THEN 'catalog' ELSE 'dss' END,
       c.relname, pg_relation_filepath(c.oid)
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'i', 'm', 't') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_toast' AND c.relpersistence = 'p'
  AND pg_relation_size(c.oid) >= $MIN_PAGES * 8192
ORDER BY 1, pg_relation_size(c.oid) DESC" | while read -r set name path; do
		files=$(ls "$WORK/data/$path" "$WORK/data/$path".[0-9]* 2>/dev/null || true)
		read -r pages r0 r1 c0 c1 d0 d1 rd rw cd dd < <("$WORK/page_codec" 1 $files)
		echo "| $set | $name | $pages | $r0 | $r1 | $(awk -v a="$r1" -v b="$r0" 'BEGIN{printf "%.3f", a/b}') | $c0 | $c1 | $d0 | $d1 | $rd | $rw | $(awk -v a="$rd" -v b="$rw" 'BEGIN{printf "%.3f", a/b}') | $cd | $dd |"
	done
done >>"$WORK/results.md"
cat "$WORK/results.md"
