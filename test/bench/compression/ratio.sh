#!/usr/bin/env bash
#
# ratio.sh: compressed tablespaces against plain storage and against the
# per-page zstd ideal, and the cost of loading into them.
#
#   test/bench/compression/ratio.sh [OUTPUT.md]
#
# One throwaway cluster (build/bench/ratio), two databases: "plain" in
# pg_default and "compressed" created in a tablespace WITH (compression =
# 'zstd').  Both get the same data: sysbench oltp_read_only prepare (4 tables
# x 250,000 rows), pgbench -i -s 50, and PostgreSQL's doc/src/sgml files, one
# file per row.  Loads alternate plain / compressed ROUNDS times (default 3;
# the data of the last round is measured).  Then, per relation: the plain
# size, the compressed size (pg_relation_size after CHECKPOINT), and the
# ideal: the sum of the plain relation's pages compressed one by one with
# zstd level 1 (page_ideal.c), also in 128-byte units, as stored.  Then the
# same pages through the storage manager's codec (page_codec.c), with the
# shuffle, for what it gains and costs.
#
# Needs sysbench (installed with apt-get when run as root).  Runs the server
# as the test user when started by root.  Writes the results as markdown to
# OUTPUT.md (default: stdout).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$TOP/build/install/bin
WORK=$TOP/build/bench/ratio
ROUNDS=${ROUNDS:-3}
OUT=${1:-/dev/stdout}

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user "$WORK" "$OUT" "$0" sysbench libzstd-dev liblz4-dev
	exit
fi

mkdir -p "$WORK"
gcc -O2 -o "$WORK/page_ideal" "$TOP/test/bench/compression/page_ideal.c" -lzstd
# page_codec: the storage manager's own codec (the format layer), shuffle included
build_page_codec "$WORK"

bench_cluster "$WORK"
cat >>"$WORK/data/postgresql.conf" <<EOF
shared_buffers = 512MB
checkpoint_timeout = 30min
EOF
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
trap '"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true' EXIT

psql()
{
	"$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -v ON_ERROR_STOP=1 "$@"
}

psql -d postgres -c "CREATE TABLESPACE cts LOCATION '$WORK/cts' WITH (compression = 'zstd')"

# now_ms: wall clock in milliseconds
now_ms()
{
	date +%s%3N
}

# load DB: (re)create DB and fill it; prints "sysbench_ms pgbench_ms docs_ms"
load()
{
	local db=$1 t0 t1 t2 t3 ts=""

	[ "$db" = compressed ] && ts="TABLESPACE cts"
	psql -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db $ts"
	t0=$(now_ms)
	sysbench oltp_read_only --db-driver=pgsql --pgsql-host=127.0.0.1 \
		--pgsql-port="$port" --pgsql-user="$(id -un)" --pgsql-db="$db" \
		--tables=4 --table-size=250000 prepare >"$WORK/sysbench-$db.log"
	psql -d "$db" -c CHECKPOINT
	t1=$(now_ms)
	"$BIN/pgbench" -i -q -s 50 -h 127.0.0.1 -p "$port" "$db" >"$WORK/pgbench-$db.log" 2>&1
	psql -d "$db" -c CHECKPOINT
	t2=$(now_ms)
	psql -d "$db" -v dir="$TOP/build/postgresql/doc/src/sgml" <<'EOF'
CREATE TABLE docs (name text PRIMARY KEY, body text);
INSERT INTO docs SELECT f, pg_read_file(:'dir' || '/' || f)
FROM pg_ls_dir(:'dir') AS f WHERE f LIKE '%.sgml';
CHECKPOINT;
EOF
	t3=$(now_ms)
	echo "$((t1 - t0)) $((t2 - t1)) $((t3 - t2))"
}

declare -a sp sc pp pc dp dc
for ((r = 1; r <= ROUNDS; r++)); do
	read -r a b c < <(load plain)
	sp+=("$a"); pp+=("$b"); dp+=("$c")
	read -r a b c < <(load compressed)
	sc+=("$a"); pc+=("$b"); dc+=("$c")
done

# The relations measured, as "label|file path|size"; TOAST relations are
# labelled by their table, since their names differ between databases.
toast="(SELECT reltoastrelid FROM pg_class WHERE relname = 'docs')"
toastidx="(SELECT indexrelid FROM pg_index WHERE indrelid = $toast)"
relations="SELECT label, pg_relation_filepath(oid), pg_relation_size(oid)
FROM (SELECT relname::text AS label, c.oid FROM pg_class c
	  WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'i')
	  UNION ALL SELECT 'docs TOAST', $toast
	  UNION ALL SELECT 'docs TOAST index', $toastidx) AS r
WHERE pg_relation_size(oid) > 0
ORDER BY 3 DESC"

# size_in DB LABEL: pg_relation_size of the relation LABEL names in DB
size_in()
{
	psql -d "$1" -v label="$2" <<EOF
SELECT pg_relation_size(CASE :'label'
	WHEN 'docs TOAST' THEN $toast
	WHEN 'docs TOAST index' THEN $toastidx
	ELSE (SELECT oid FROM pg_class WHERE relname = :'label'
		  AND relnamespace = 'public'::regnamespace) END)
EOF
}

{
	echo "# Compressed tablespaces: ratio and load"
	echo
	echo "- command: \`test/bench/compression/ratio.sh\` (ROUNDS=$ROUNDS)"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "- machine: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $(free -g | awk '/Mem:/ {print $2}') GiB RAM, $(uname -sr)"
	echo "- server: $("$BIN/postgres" --version); shared_buffers 512MB, wal_log_hints on; tablespace WITH (compression = 'zstd'), level 1"
	echo "- data: sysbench 1.0.20 oltp_read_only prepare, 4 tables x 250,000 rows; pgbench -i -s 50; $(ls "$TOP/build/postgresql/doc/src/sgml"/*.sgml | wc -l) files of doc/src/sgml, one per row (TOAST holds them pglz-compressed)"
	echo
	echo "## Size per relation"
	echo
	echo "plain and compressed: pg_relation_size after CHECKPOINT. ideal: the plain"
	echo "relation's pages compressed one by one with zstd level 1, summed; 128 B: the"
	echo "same rounded up to 128-byte units (raw unless a page saves 512 bytes), as"
	echo "stored. Ratios are plain / size."
	echo
	echo "| relation | plain | compressed | ratio | ideal ratio | 128 B ratio | compressed / 128 B |"
	echo "|---|---:|---:|---:|---:|---:|---:|"
	while IFS='|' read -r rel path plain; do
		comp=$(size_in compressed "$rel")
		files=$(ls "$WORK/data/$path" "$WORK/data/$path".[0-9]* 2>/dev/null || true)
		read -r pages raw ideal units _ < <("$WORK/page_ideal" 1 $files)
		awk -v r="$rel" -v p="$plain" -v c="$comp" -v i="$ideal" -v u="$units" 'BEGIN {
			printf "| %s | %.1f MB | %.1f MB | %.2f | %.2f | %.2f | %.2f |\n",
				r, p / 1048576, c / 1048576, p / c, p / i, p / u, c / u }'
	done < <(psql -d plain -F'|' -c "$relations")
	echo
	echo "## The page shuffle and the index split"
	echo
	echo "The plain relation's pages through zstd level 1 as they are, and through"
	echo "the storage manager's codec (page_codec.c: pcs_compress_page(), which"
	echo "shuffles pages with a standard layout first, or splits index pages with"
	echo "posting lists, and pcs_decode_image()); ratios in 128-byte units, CPU"
	echo "microseconds per page on this machine."
	echo
	echo "| relation | pages | ratio as is | shuffled or split | compress us as is | shuffled or split | decode us as is | shuffled or split |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	while IFS='|' read -r rel path plain; do
		files=$(ls "$WORK/data/$path" "$WORK/data/$path".[0-9]* 2>/dev/null || true)
		# (the dictionary and whole-file columns are corpus.sh's)
		read -r pages r0 r1 c0 c1 d0 d1 _ < <("$WORK/page_codec" 1 $files)
		echo "| $rel | $pages | $r0 | $r1 | $c0 | $c1 | $d0 | $d1 |"
	done < <(psql -d plain -F'|' -c "$relations")
	for db in plain compressed; do
		echo
		echo "- pg_database_size($db): $(psql -d postgres -c "SELECT pg_size_pretty(pg_database_size('$db'))")"
	done
	echo
	echo "## Load time (median of $ROUNDS rounds, alternating plain / compressed)"
	echo
	echo "| load | plain ms | compressed ms | compressed / plain |"
	echo "|---|---:|---:|---:|"
	for what in sysbench pgbench docs; do
		case $what in
			sysbench) a=$(median "${sp[@]}"); b=$(median "${sc[@]}"); label="sysbench prepare + CHECKPOINT" ;;
			pgbench) a=$(median "${pp[@]}"); b=$(median "${pc[@]}"); label="pgbench -i -s 50 (COPY, indexes, VACUUM) + CHECKPOINT" ;;
			docs) a=$(median "${dp[@]}"); b=$(median "${dc[@]}"); label="doc/src/sgml INSERT + CHECKPOINT" ;;
		esac
		awk -v l="$label" -v a="$a" -v b="$b" 'BEGIN { printf "| %s | %d | %d | %.2f |\n", l, a, b, b / a }'
	done
	echo
	echo "Raw load times (ms), plain: sysbench ${sp[*]}; pgbench ${pp[*]}; docs ${dp[*]}."
	echo "Compressed: sysbench ${sc[*]}; pgbench ${pc[*]}; docs ${dc[*]}."
} >"$OUT"
