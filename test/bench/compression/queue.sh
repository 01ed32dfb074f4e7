#!/usr/bin/env bash
#
# queue.sh: how a compressed tablespace's size behaves when tables are
# filled and emptied over and over (queue and staging tables), against the
# same tables in a plain tablespace.
#
#   test/bench/compression/queue.sh [OUTPUT.md]
#
# One throwaway cluster (build/bench/queue) with two tablespaces side by
# side: cts WITH (compression = 'zstd') and pts, plain.  Each holds the same
# three tables, with their primary keys, in schema c (compressed) and p
# (plain), and every statement writes the same rows to both twins:
#
#   queue        a job queue: producers insert ROWS rows a cycle in
#                transactions of PRODUCER_BATCH rows; a consumer deletes
#                them oldest first, CONSUMER_BATCH rows a transaction
#                (FOR UPDATE SKIP LOCKED), until the queue is empty
#   stage_del    a staging table loaded with ROWS rows in one statement and
#                emptied with DELETE
#   stage_trunc  the same, emptied with TRUNCATE (a new file each cycle)
#
# The rows are events of mixed content: a jsonb document (event type, ids,
# an amount, one to five line items, a random trace id) and a note of 3 to
# 22 words.  A cycle: fill the three tables, CHECKPOINT every
# CHECKPOINT_EVERY-th cycle (so that the pages are written out, which is
# when a compressed page takes space), empty them, VACUUM queue and
# stage_del.  Autovacuum is on.  Cycles go on for DURATION seconds; every
# SAMPLE seconds the physical bytes of both tablespaces and of every table
# (pg_total_relation_size), the compressed tablespace's logical, stored,
# slack and garbage bytes (the pgstrata extension), and the cycles so far
# are recorded, without forcing a checkpoint.
#
# "Fresh load" is the first fill, after a CHECKPOINT.  Each sample's sizes
# are also given over the fresh-load sizes (the queue-table size target:
# within 1.15x at every point, without VACUUM FULL), and compressed over
# plain.
# At the end: a CHECKPOINT and the sizes with the tables empty, then one
# more fill and CHECKPOINT, the sizes at the same point of the cycle as
# the fresh load.
#
# Output: OUTPUT.md (standard output by default), the raw samples in the
# CSV of the same name (OUTPUT.csv; build/bench/queue/results.csv for
# standard output), and when gnuplot is there (as root, the script installs
# gnuplot-nox) the curves in OUTPUT.png, drawn by test/bench/plot.sh.
#
# Environment: DURATION (1800), SAMPLE (60), ROWS (20000), CHECKPOINT_EVERY
# (1), PRODUCER_BATCH (200), CONSUMER_BATCH (1000).  PLOT_ONLY=1 (with the
# ROWS and CHECKPOINT_EVERY of that run, for the title) only draws
# OUTPUT.png again from OUTPUT.csv.  PGSTRATA_FLAVOUR runs the build of that
# flavour (build/install-FLAVOUR), in build/bench/queue-FLAVOUR, so that two
# builds can run side by side.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
BIN=$PG_INSTALL/bin
WORK=$TOP/build/bench/queue$FLAVOUR_SUFFIX
OUT=${1:-/dev/stdout}
DURATION=${DURATION:-1800}
SAMPLE=${SAMPLE:-60}
ROWS=${ROWS:-20000}
CHECKPOINT_EVERY=${CHECKPOINT_EVERY:-1}
PRODUCER_BATCH=${PRODUCER_BATCH:-200}
CONSUMER_BATCH=${CONSUMER_BATCH:-1000}
export DURATION SAMPLE ROWS CHECKPOINT_EVERY PRODUCER_BATCH CONSUMER_BATCH

# the CSV and PNG next to OUTPUT.md
case $OUT in
	/dev/*) BASE=$WORK/results ;;
	*) BASE=${OUT%.md} ;;
esac
# the names the results will have (root runs the script again as the test
# user, who writes into WORK and may not read the repository's git data)
RESULT_NAME=${RESULT_NAME:-$(basename "$BASE")}
COMMIT=${COMMIT:-$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null || echo unknown)}
export RESULT_NAME COMMIT

# plot: draw BASE.csv into BASE.png
plot()
{
	"$TOP/test/bench/plot.sh" "$BASE.csv" "$BASE.png" \
		"queue.sh: $ROWS rows a cycle, CHECKPOINT every $CHECKPOINT_EVERY cycle(s)" \
		"physical MiB=cts_bytes:compressed tablespace,pts_bytes:plain tablespace,garbage_bytes:compressed garbage" \
		"size / fresh load (log scale)=cts_over_fresh:compressed tablespace,c_queue_over_fresh:compressed queue,c_stage_del_over_fresh:compressed stage_del,pts_over_fresh:plain tablespace@1.15:target 1.15" \
		"compressed / plain (log scale)=cts_over_pts:tablespaces"
}

# PLOT_ONLY=1: draw the PNG again from the CSV of an earlier run
if [ -n "${PLOT_ONLY:-}" ]; then
	plot
	exit
fi

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user_with_plot "$WORK" "$OUT" "$BASE" "$0"
fi

mkdir -p "$WORK"
bench_cluster "$WORK"
rm -rf "$WORK/pts"
mkdir -p "$WORK/pts"
cat >>"$WORK/data/postgresql.conf" <<EOF
shared_buffers = 128MB
checkpoint_timeout = 5min
autovacuum = on
EOF
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
loader=""
stop()
{
	if [ -n "$loader" ]; then
		kill "$loader" 2>/dev/null || true
		wait "$loader" 2>/dev/null || true
	fi
	"$BIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true
}
trap stop EXIT
psql() { "$BIN/psql" -X -q -At -h 127.0.0.1 -p "$port" -v ON_ERROR_STOP=1 "$@" postgres; }

psql -c "CREATE TABLESPACE cts LOCATION '$WORK/cts' WITH (compression = 'zstd')" \
	-c "CREATE TABLESPACE pts LOCATION '$WORK/pts'" \
	-c "CREATE EXTENSION pgstrata"
psql <<EOF
CREATE SEQUENCE event_id;
CREATE TYPE event AS (id bigint, created_at timestamptz, priority smallint,
					  attempts int, kind text, payload jsonb, note text);

-- events(n): n new rows of mixed content, each with the next id
CREATE FUNCTION events(n int) RETURNS SETOF event
LANGUAGE sql VOLATILE AS \$\$
SELECT nextval('event_id'), clock_timestamp(),
	   (random() * 3)::smallint, 0, k.kind,
	   jsonb_build_object(
		   'event', k.kind,
		   'user_id', (random() * 1000000)::int,
		   'account', 'acct-' || (random() * 50000)::int,
		   'amount', round((random() * 500)::numeric, 2),
		   'currency', (ARRAY['EUR', 'USD', 'GBP', 'CHF'])[1 + (random() * 3)::int],
		   'items', (SELECT jsonb_agg(jsonb_build_object(
							'sku', 'SKU-' || lpad((random() * 99999)::int::text, 5, '0'),
							'qty', 1 + (random() * 4)::int,
							'price', round((random() * 100)::numeric, 2)))
					 FROM generate_series(1, 1 + g % 5)),
		   'trace', md5(random()::text)),
	   (SELECT string_agg(w[1 + (random() * (array_length(w, 1) - 1))::int], ' ')
		FROM generate_series(1, 3 + (g * 7) % 20),
			 (SELECT ARRAY['order', 'payment', 'received', 'shipped', 'customer',
						   'retry', 'after', 'timeout', 'from', 'warehouse', 'north',
						   'invoice', 'sent', 'to', 'billing', 'address', 'changed',
						   'refund', 'requested', 'by', 'support', 'ticket', 'closed',
						   'the', 'a', 'of', 'and', 'pending', 'review']) AS ws(w))
FROM generate_series(1, n) AS g,
	 -- "g * 0" makes the subquery depend on the row: one kind per row
	 LATERAL (SELECT (ARRAY['order.created', 'order.paid', 'order.shipped',
							'user.signup', 'email.bounced', 'invoice.sent'])
					 [1 + ((random() * 5)::int + g * 0)] AS kind) AS k
\$\$;

CREATE SCHEMA c;
CREATE SCHEMA p;
CREATE TABLE c.queue (LIKE event) TABLESPACE cts;
CREATE TABLE c.stage_del (LIKE event) TABLESPACE cts;
CREATE TABLE c.stage_trunc (LIKE event) TABLESPACE cts;
CREATE TABLE p.queue (LIKE event) TABLESPACE pts;
CREATE TABLE p.stage_del (LIKE event) TABLESPACE pts;
CREATE TABLE p.stage_trunc (LIKE event) TABLESPACE pts;
ALTER TABLE c.queue ADD PRIMARY KEY (id) USING INDEX TABLESPACE cts;
ALTER TABLE c.stage_del ADD PRIMARY KEY (id) USING INDEX TABLESPACE cts;
ALTER TABLE c.stage_trunc ADD PRIMARY KEY (id) USING INDEX TABLESPACE cts;
ALTER TABLE p.queue ADD PRIMARY KEY (id) USING INDEX TABLESPACE pts;
ALTER TABLE p.stage_del ADD PRIMARY KEY (id) USING INDEX TABLESPACE pts;
ALTER TABLE p.stage_trunc ADD PRIMARY KEY (id) USING INDEX TABLESPACE pts;

-- produce(n, b): n rows into both queues, b rows a transaction
CREATE PROCEDURE produce(n int, b int) LANGUAGE plpgsql AS \$\$
DECLARE
	done int := 0;
BEGIN
	WHILE done < n LOOP
		WITH r AS MATERIALIZED (SELECT * FROM events(least(b, n - done))),
			 i AS (INSERT INTO c.queue SELECT * FROM r)
		INSERT INTO p.queue SELECT * FROM r;
		done := done + b;
		COMMIT;
	END LOOP;
END
\$\$;

-- consume(b): empty both queues, oldest first, b rows a transaction
CREATE PROCEDURE consume(b int) LANGUAGE plpgsql AS \$\$
DECLARE
	n bigint;
BEGIN
	LOOP
		WITH d AS (DELETE FROM c.queue
				   WHERE id IN (SELECT id FROM c.queue ORDER BY id LIMIT b
								FOR UPDATE SKIP LOCKED)
				   RETURNING id)
		DELETE FROM p.queue WHERE id IN (SELECT id FROM d);
		GET DIAGNOSTICS n = ROW_COUNT;
		COMMIT;
		EXIT WHEN n = 0;
	END LOOP;
END
\$\$;

-- stage(n): load n rows into both twins of both staging tables
CREATE PROCEDURE stage(n int) LANGUAGE sql AS \$\$
WITH r AS MATERIALIZED (SELECT * FROM events(n)),
	 a AS (INSERT INTO c.stage_del SELECT * FROM r),
	 b AS (INSERT INTO p.stage_del SELECT * FROM r),
	 t AS (INSERT INTO c.stage_trunc SELECT * FROM r)
INSERT INTO p.stage_trunc SELECT * FROM r;
\$\$;
EOF

fill() { psql -c "CALL produce($ROWS, $PRODUCER_BATCH)" -c "CALL stage($ROWS)"; }
drain()
{
	psql -c "CALL consume($CONSUMER_BATCH)" \
		-c "TRUNCATE c.stage_trunc, p.stage_trunc" \
		-c "DELETE FROM c.stage_del" -c "DELETE FROM p.stage_del" \
		-c "VACUUM c.queue, p.queue, c.stage_del, p.stage_del"
}

# One CSV line of sizes, in bytes, in the order of COLUMNS (the seconds,
# the cycles and the ratios are added by sample()).
SIZE_COLUMNS="cts_bytes,pts_bytes,c_queue_bytes,p_queue_bytes,c_queue_heap_bytes,p_queue_heap_bytes,c_stage_del_bytes,p_stage_del_bytes,c_stage_trunc_bytes,p_stage_trunc_bytes,logical_bytes,stored_bytes,slack_bytes,garbage_bytes,queue_garbage_bytes,stage_del_garbage_bytes,stage_trunc_garbage_bytes"
SIZES="SELECT pg_tablespace_size('cts'), pg_tablespace_size('pts'),
	pg_total_relation_size('c.queue'), pg_total_relation_size('p.queue'),
	pg_relation_size('c.queue'), pg_relation_size('p.queue'),
	pg_total_relation_size('c.stage_del'), pg_total_relation_size('p.stage_del'),
	pg_total_relation_size('c.stage_trunc'), pg_total_relation_size('p.stage_trunc'),
	sum(logical_bytes), sum(stored_bytes), sum(slack_bytes), sum(garbage_bytes),
	coalesce(sum(garbage_bytes) FILTER (WHERE relation::text LIKE 'c.queue%'), 0),
	coalesce(sum(garbage_bytes) FILTER (WHERE relation::text LIKE 'c.stage_del%'), 0),
	coalesce(sum(garbage_bytes) FILTER (WHERE relation::text LIKE 'c.stage_trunc%'), 0)
FROM pgstrata_compression WHERE tablespace = 'cts'"
sizes() { psql -F , -c "$SIZES"; }
cycles() { cat "$WORK/cycles"; }

# The first fill: the fresh-load sizes.
fill
psql -c "CHECKPOINT"
fresh=$(sizes)
echo 1 >"$WORK/cycles"
echo 1 >"$WORK/checkpoints"

# ratio NUM DEN: NUM / DEN to three places, empty when DEN is 0
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b }'; }
IFS=, read -r f_cts f_pts f_cq f_pq _ _ f_cd f_pd f_ct f_pt _ <<<"$fresh"

# sample SECONDS LINE: the CSV line of LINE (sizes()'s output) at SECONDS
sample()
{
	local cts pts cq pq cd pd ct pt
	IFS=, read -r cts pts cq pq _ _ cd pd ct pt _ <<<"$2"
	echo "$1,$(cycles),$2,$(ratio "$cts" "$f_cts"),$(ratio "$pts" "$f_pts"),$(ratio "$cq" "$f_cq"),$(ratio "$pq" "$f_pq"),$(ratio "$cd" "$f_cd"),$(ratio "$ct" "$f_ct"),$(ratio "$cts" "$pts")"
}
{
	echo "seconds,cycles,$SIZE_COLUMNS,cts_over_fresh,pts_over_fresh,c_queue_over_fresh,p_queue_over_fresh,c_stage_del_over_fresh,c_stage_trunc_over_fresh,cts_over_pts"
	sample 0 "$fresh"
} >"$BASE.csv"

# The load: empty what the first fill loaded, then cycles until DURATION.
SECONDS=0
(
	drain
	n=1
	ckpts=1
	while [ "$SECONDS" -lt "$DURATION" ]; do
		n=$((n + 1))
		fill
		if [ $((n % CHECKPOINT_EVERY)) = 0 ]; then
			psql -c "CHECKPOINT"
			ckpts=$((ckpts + 1))
			echo "$ckpts" >"$WORK/checkpoints"
		fi
		drain
		echo "$n" >"$WORK/cycles"
	done
	echo "$SECONDS" >"$WORK/elapsed"
) >"$WORK/load.log" 2>&1 &
loader=$!

# a sample every SAMPLE seconds of the load (checking each second whether
# the load is over, so that the end is not delayed by up to SAMPLE)
next=$SAMPLE
while kill -0 "$loader" 2>/dev/null; do
	sleep 1
	if [ "$SECONDS" -ge "$next" ] && kill -0 "$loader" 2>/dev/null; then
		sample "$SECONDS" "$(sizes)" >>"$BASE.csv"
		next=$((next + SAMPLE))
	fi
done
rc=0
wait "$loader" || rc=$?
loader=""
if [ "$rc" != 0 ]; then
	echo "error: the load failed; see $WORK/load.log" >&2
	cat "$WORK/load.log" >&2
	exit 1
fi
elapsed=$(cat "$WORK/elapsed")

psql -c "CHECKPOINT"
empty=$(sizes)
sample "$elapsed" "$empty" >>"$BASE.csv"
ncycles=$(cycles)
nckpts=$(cat "$WORK/checkpoints")
fill
psql -c "CHECKPOINT"
refill=$(sizes)

# the summary table: one row of sizes in MiB and ratios
mb() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1048576 }'; }
row()
{
	local cts pts cq pq cqh pqh cd pd ct pt log stored slack garb
	IFS=, read -r cts pts cq pq cqh pqh cd pd ct pt log stored slack garb _ <<<"$2"
	echo "| $1 | $(mb "$cts") | $(mb "$pts") | $(ratio "$cts" "$pts") | $(ratio "$cts" "$f_cts") | $(mb "$cq") | $(mb "$pq") | $(mb "$cd") | $(mb "$pd") | $(mb "$ct") | $(mb "$pt") | $(mb "$log") | $(mb "$stored") | $(mb "$slack") | $(mb "$garb") |"
}

# garbage per cycle, and the largest ratios over all samples
IFS=, read -r _ _ _ _ _ _ _ _ _ _ _ _ _ e_garb e_qgarb e_dgarb e_tgarb <<<"$empty"
per_cycle() { awk -v g="$1" -v n="$ncycles" 'BEGIN { printf "%.3f", g / n / 1048576 }'; }
per_ckpt() { awk -v g="$1" -v n="$nckpts" 'BEGIN { printf "%.3f", g / n / 1048576 }'; }
max_of() { awk -F, -v c="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next } $k > m { m = $k } END { printf "%.3f", m }' "$BASE.csv"; }

if command -v gnuplot >/dev/null; then
	plot
	png="![The curves]($RESULT_NAME.png)"
else
	png="(gnuplot was not found: no PNG; test/bench/plot.sh draws it from the CSV)"
fi

{
	echo "# Compressed tablespace under queue and staging tables"
	echo
	echo "- command: \`test/bench/compression/queue.sh\` (DURATION=$DURATION SAMPLE=$SAMPLE ROWS=$ROWS CHECKPOINT_EVERY=$CHECKPOINT_EVERY PRODUCER_BATCH=$PRODUCER_BATCH CONSUMER_BATCH=$CONSUMER_BATCH)"
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); commit $COMMIT"
	echo "- machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, Linux $(uname -r)"
	echo "- server: $("$BIN/postgres" --version); shared_buffers 128MB, checkpoint_timeout 5min, autovacuum on; tablespace cts WITH (compression = 'zstd'), level 1; tablespace pts plain"
	echo "- load: $ncycles cycles in $elapsed s, $nckpts of them with a CHECKPOINT; a cycle fills queue, stage_del and stage_trunc with $ROWS rows each (twins in both tablespaces), CHECKPOINT every $CHECKPOINT_EVERY cycle(s), empties them, VACUUM"
	echo "- raw samples: [$RESULT_NAME.csv]($RESULT_NAME.csv)"
	echo
	echo "Sizes in MiB. cts, pts: pg_tablespace_size of the compressed and the"
	echo "plain tablespace; the tables: pg_total_relation_size (heap, primary key,"
	echo "free space and visibility maps); logical, stored, slack and garbage:"
	echo "pgstrata_compression over cts (garbage: units no block references)."
	echo
	echo "| when | cts | pts | cts / pts | cts / fresh | c.queue | p.queue | c.stage_del | p.stage_del | c.stage_trunc | p.stage_trunc | logical | stored | slack | garbage |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	row "fresh load (first fill, CHECKPOINT)" "$fresh"
	row "end, emptied (CHECKPOINT)" "$empty"
	row "end, filled again (CHECKPOINT)" "$refill"
	echo
	echo "- garbage per cycle: $(per_cycle "$e_garb") MiB ($(mb "$e_garb") MiB after $ncycles cycles); queue $(per_cycle "$e_qgarb") MiB (fresh load $(mb "$f_cq") MiB), stage_del $(per_cycle "$e_dgarb") MiB (fresh load $(mb "$f_cd") MiB), stage_trunc $(per_cycle "$e_tgarb") MiB (fresh load $(mb "$f_ct") MiB)"
	echo "- garbage per CHECKPOINT that wrote the tables full ($nckpts, the fresh load's included): $(per_ckpt "$e_garb") MiB; queue $(per_ckpt "$e_qgarb") MiB, stage_del $(per_ckpt "$e_dgarb") MiB"
	echo "- largest physical / fresh over the samples: compressed tablespace $(max_of cts_over_fresh), compressed queue $(max_of c_queue_over_fresh), compressed stage_del $(max_of c_stage_del_over_fresh), compressed stage_trunc $(max_of c_stage_trunc_over_fresh); plain tablespace $(max_of pts_over_fresh)"
	echo "- the queue-table size target, the compressed tablespace within 1.15x of its fresh-load size at every sample: $(awk -v m="$(max_of cts_over_fresh)" 'BEGIN { print (m <= 1.15) ? "met" : "missed" }') (largest $(max_of cts_over_fresh))"
	echo "- filled again against the fresh load, at the same point of the cycle: compressed $(ratio "${refill%%,*}" "$f_cts"), plain $(IFS=, read -r _ p _ <<<"$refill"; ratio "$p" "$f_pts")"
	echo
	echo "$png"
	echo
	echo "The samples (every $SAMPLE s, no checkpoint forced: they fall anywhere"
	echo "in a cycle):"
	echo
	echo "| seconds | cycles | cts | pts | cts / fresh | cts / pts | c.queue | p.queue | garbage |"
	echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; next }
		function mb(b) { return sprintf("%.2f", b / 1048576) }
		{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $k["seconds"], $k["cycles"],
			mb($k["cts_bytes"]), mb($k["pts_bytes"]), $k["cts_over_fresh"], $k["cts_over_pts"],
			mb($k["c_queue_bytes"]), mb($k["p_queue_bytes"]), mb($k["garbage_bytes"]) }' "$BASE.csv"
} >"$OUT"
