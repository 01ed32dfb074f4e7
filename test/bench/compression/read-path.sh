#!/usr/bin/env bash
#
# read-path.sh: what the storage manager's read path costs per block, side
# by side for installations that differ in it.
#
#   [INSTALLS="DIR ..."] [SCALE=30] [ROUNDS=8] [REPEAT=15] [SECONDS_PER_RUN=10] \
#       [THREADS=2] test/bench/compression/read-path.sh [OUTPUT.md]
#
# For each installation of INSTALLS (default build/install; give two, the
# first being the reference) one throwaway cluster under
# build/bench/read-path with shared_buffers = 16MB and a pgbench database
# of scale SCALE in a zstd tablespace (its default_tablespace), checkpointed,
# so that every read misses shared buffers and is served from the kernel's
# page cache and decompressed.  Then ROUNDS rounds, the clusters in turn
# (the order rotating each round), each timing:
#
#   single   pg_prewarm(pgbench_accounts, 'read') REPEAT times: every block
#            read alone through smgrread(), the path of a random index probe
#   seqscan  SELECT count(*) FROM pgbench_accounts REPEAT times: vectored
#            reads of up to 16 blocks (io_combine_limit)
#   select   pgbench -S (prepared) with THREADS clients for SECONDS_PER_RUN
#            seconds: transactions per second
#
# Writes markdown to OUTPUT.md (default: stdout): each round's figures, the
# medians, and per installation after the first the ratio to the first,
# round by round and its median (for times, reference / this, so that a
# ratio below 1 is slower for both kinds of figure).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
WORK=$TOP/build/bench/read-path
INSTALLS=${INSTALLS:-$TOP/build/install}
SCALE=${SCALE:-30}
ROUNDS=${ROUNDS:-8}
REPEAT=${REPEAT:-15}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
THREADS=${THREADS:-2}
OUT=${1:-/dev/stdout}

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user "$WORK" "$OUT" "$0"
	exit
fi

mkdir -p "$WORK"
declare -A port_of bin_of
clusters=()
trap bench_stop_clusters EXIT

# make_cluster NAME BIN: a cluster whose pgbench tables are compressed
make_cluster()
{
	local c=$1 bin=$2

	bench_named_cluster "$c" "$bin" "shared_buffers = 16MB
max_wal_size = 4GB
checkpoint_timeout = 1h"
	bench_psql "$c" <<SQL
CREATE EXTENSION pg_prewarm;
CREATE TABLESPACE cts LOCATION '$WORK/$c/cts' WITH (compression = 'zstd');
ALTER DATABASE postgres SET default_tablespace = cts;
SQL
	"$bin/pgbench" -h 127.0.0.1 -p "${port_of[$c]}" -i -q -s "$SCALE" postgres \
		>"$WORK/$c/pgbench-init.log" 2>&1
	bench_psql "$c" <<<'VACUUM ANALYZE; CHECKPOINT;'
}

# seconds NAME SQL: wall seconds of one psql run of SQL on cluster NAME
seconds()
{
	local start end
	start=$(date +%s.%N)
	bench_psql "$1" <<<"$2" >/dev/null
	end=$(date +%s.%N)
	awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }'
}

i=0
for inst in $INSTALLS; do
	i=$((i + 1))
	make_cluster "i$i" "$inst/bin"
done

declare -A fig
n=${#clusters[@]}
for round in $(seq 1 "$ROUNDS"); do
	for k in $(seq 0 $((n - 1))); do
		c=${clusters[$(((k + round - 1) % n))]}
		fig[$c,single,$round]=$(seconds "$c" "SELECT sum(pg_prewarm('pgbench_accounts', 'read')) FROM generate_series(1, $REPEAT)")
		fig[$c,seqscan,$round]=$(seconds "$c" "$(for r in $(seq 1 "$REPEAT"); do echo 'SELECT count(*) FROM pgbench_accounts;'; done)")
		fig[$c,select,$round]=$("${bin_of[$c]}/pgbench" -n -S -M prepared -c "$THREADS" -j "$THREADS" \
			-h 127.0.0.1 -p "${port_of[$c]}" -T "$SECONDS_PER_RUN" postgres 2>/dev/null |
			sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	done
done

# ratio KIND A B: reference / this for times, this / reference for tps
ratio()
{
	if [ "$1" = select ]; then
		awk -v a="$2" -v b="$3" 'BEGIN { printf "%.3f", b / a }'
	else
		awk -v a="$2" -v b="$3" 'BEGIN { printf "%.3f", a / b }'
	fi
}

{
	echo "# The read path of compressed storage, side by side"
	echo
	echo "\`INSTALLS=\"$INSTALLS\" SCALE=$SCALE ROUNDS=$ROUNDS REPEAT=$REPEAT SECONDS_PER_RUN=$SECONDS_PER_RUN THREADS=$THREADS test/bench/compression/read-path.sh\`, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -sr)"
	echo
	# relpages: the size functions report a compressed fork's physical bytes
	blocks=$(bench_psql i1 <<<"SELECT relpages FROM pg_class WHERE relname = 'pgbench_accounts'")
	physical=$(bench_psql i1 <<<"SELECT pg_size_pretty(pg_relation_size('pgbench_accounts'))")
	echo "pgbench_accounts: $blocks blocks ($physical on disk, compressed); single and seqscan read $((blocks * REPEAT)) blocks per run (seconds), select is tps."
	echo
	i=0
	for inst in $INSTALLS; do
		i=$((i + 1))
		echo "## installation $i: ${inst#$TOP/} ($("$inst/bin/postgres" --version))"
		echo
		echo "| round | single (s) | seqscan (s) | select (tps) |$([ $i -gt 1 ] && echo ' single ratio | seqscan ratio | select ratio |')"
		echo "| ---: | ---: | ---: | ---: |$([ $i -gt 1 ] && echo ' ---: | ---: | ---: |')"
		for round in $(seq 1 "$ROUNDS"); do
			line="| $round"
			for kind in single seqscan select; do
				line="$line | ${fig[i$i,$kind,$round]}"
			done
			if [ $i -gt 1 ]; then
				for kind in single seqscan select; do
					line="$line | $(ratio $kind "${fig[i1,$kind,$round]}" "${fig[i$i,$kind,$round]}")"
				done
			fi
			echo "$line |"
		done
		line="| median"
		for kind in single seqscan select; do
			line="$line | $(median $(for r in $(seq 1 "$ROUNDS"); do echo "${fig[i$i,$kind,$r]}"; done))"
		done
		if [ $i -gt 1 ]; then
			for kind in single seqscan select; do
				line="$line | $(median $(for r in $(seq 1 "$ROUNDS"); do ratio $kind "${fig[i1,$kind,$r]}" "${fig[i$i,$kind,$r]}"; echo; done))"
			done
		fi
		echo "$line |"
		echo
	done
} >"$OUT"
