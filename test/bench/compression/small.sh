#!/usr/bin/env bash
#
# small.sh: what small relations cost in a compressed tablespace against a
# plain one.
#
#   test/bench/compression/small.sh [OUTPUT.md]
#
# One throwaway cluster (build/bench/small) with two tablespaces, plain and
# WITH (compression = 'zstd').  In each: an empty table, a one-row table,
# and N (default 1,000) tables of one row with a primary key and a TOAST
# table (id int PRIMARY KEY, v text), sized after a CHECKPOINT, then again
# after a VACUUM (which gives each table a free space map and a visibility
# map).  Sizes are pg_relation_size / pg_total_relation_size, which report
# what the file system allocated to compressed files (st_blocks), so they
# depend on its block size (4 kB on ext4, xfs and tmpfs).  Writes markdown
# to OUTPUT.md (default: stdout).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/small
N=${N:-1000}
OUT=${1:-/dev/stdout}

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user "$WORK" "$OUT" "$0"
	exit
fi

mkdir -p "$WORK"
bench_cluster "$WORK"
mkdir -p "$WORK/pts"
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
trap '"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true' EXIT

psql()
{
	"$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -v ON_ERROR_STOP=1 "$@"
}

psql -d postgres <<SQL
CREATE TABLESPACE cts LOCATION '$WORK/cts' WITH (compression = 'zstd');
CREATE TABLESPACE pts LOCATION '$WORK/pts';
SQL

for ts in pts cts; do
	psql -d postgres <<SQL
CREATE TABLE empty_$ts (a int) TABLESPACE $ts;
CREATE TABLE one_$ts (a int, b text) TABLESPACE $ts;
INSERT INTO one_$ts VALUES (1, 'one');
SQL
	for i in $(seq 1 "$N"); do
		echo "CREATE TABLE k_${ts}_$i (id int PRIMARY KEY USING INDEX TABLESPACE $ts, v text) TABLESPACE $ts;"
		echo "INSERT INTO k_${ts}_$i VALUES ($i, md5('$i'));"
	done | psql -d postgres
done

# sizes STAGE: one markdown row per kind of relation
sizes()
{
	psql -d postgres -F ' | ' <<SQL
SELECT '| $1', k.kind,
	   p.bytes, c.bytes,
	   coalesce(round(c.bytes::numeric / nullif(p.bytes, 0), 2)::text, '-') || ' |'
FROM (VALUES ('empty table', 'empty_', 1), ('one-row table', 'one_', 2),
			 ('$N one-row tables with key and TOAST (total)', 'k_', 3)) k(kind, prefix, ord),
	 LATERAL (SELECT sum(CASE WHEN k.ord = 3 THEN pg_total_relation_size(oid)
							  ELSE pg_relation_size(oid) END) AS bytes
			  FROM pg_class
			  WHERE relname ~ ('^' || k.prefix || CASE WHEN k.ord = 3 THEN 'pts_[0-9]+\$' ELSE 'pts\$' END)) p,
	 LATERAL (SELECT sum(CASE WHEN k.ord = 3 THEN pg_total_relation_size(oid)
							  ELSE pg_relation_size(oid) END) AS bytes
			  FROM pg_class
			  WHERE relname ~ ('^' || k.prefix || CASE WHEN k.ord = 3 THEN 'cts_[0-9]+\$' ELSE 'cts\$' END)) c
ORDER BY k.ord;
SQL
}

{
	echo "Command: test/bench/compression/small.sh (N=$N)"
	echo
	echo "Machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%d GiB", $2 / 1048576}' /proc/meminfo);" \
		"file system of the tablespaces: $(stat -f -c %T "$WORK/cts"), block $(stat -f -c %S "$WORK/cts") bytes;" \
		"$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "| stage | relations | plain bytes | compressed bytes | compressed / plain |"
	echo "|---|---|---:|---:|---:|"
	psql -d postgres -c CHECKPOINT
	sizes "after CHECKPOINT"
	psql -d postgres -c VACUUM -c CHECKPOINT
	sizes "after VACUUM"
} >"$OUT"
