#!/usr/bin/env bash
#
# copy-size.sh: what many small compressed tables take on disk, and in a
# copy that writes holes out, side by side for installations that differ in
# the segment format.
#
#   [INSTALLS="DIR ..."] [N=1000] [ROWS=20] test/bench/compression/copy-size.sh [OUTPUT.md]
#
# For each installation of INSTALLS (default build/install) one throwaway
# cluster under build/bench/copy-size with a plain tablespace and a zstd
# one.  In each tablespace N tables (id int PRIMARY KEY, v text) of ROWS
# rows, then CHECKPOINT.  Then, per tablespace directory (its version
# directory without pgsql_tmp, where the reserve lies, which every backup
# tool leaves out): the apparent size (the files' lengths, what a copy that
# writes every byte writes), the allocated size (st_blocks, what the
# file system holds), and the allocated size of a copy made with
# cp --sparse=never (a restore that writes holes out, as pgBackRest's and
# WAL-G's do).  Writes markdown to OUTPUT.md (default: stdout).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
WORK=$TOP/build/bench/copy-size
INSTALLS=${INSTALLS:-$TOP/build/install}
N=${N:-1000}
ROWS=${ROWS:-20}
OUT=${1:-/dev/stdout}

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user "$WORK" "$OUT" "$0"
	exit
fi

mkdir -p "$WORK"
declare -A port_of bin_of
clusters=()
trap bench_stop_clusters EXIT

# bytes DIR apparent|allocated: the size of the files under DIR, pgsql_tmp left out
bytes()
{
	local flag=--apparent-size
	[ "$2" = allocated ] && flag=
	du -s -B1 $flag --exclude=pgsql_tmp "$1" | cut -f1
}

mib()
{
	awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'
}

{
	echo "# Small compressed tables on disk and copied without holes"
	echo
	echo "\`INSTALLS=\"$INSTALLS\" N=$N ROWS=$ROWS test/bench/compression/copy-size.sh\`, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -sr), $(df -T "$WORK" | awk 'NR == 2 { print $2 }')"
	echo
	echo "$N tables of $ROWS rows with their primary keys, per tablespace; MiB; pgsql_tmp (the reserve) left out."
	echo
	echo "| installation | tablespace | files | apparent | allocated | copied with holes written out |"
	echo "| --- | --- | ---: | ---: | ---: | ---: |"
} >"$OUT"

i=0
for inst in $INSTALLS; do
	i=$((i + 1))
	c=i$i
	bench_named_cluster "$c" "$inst/bin" "compressed_tablespace_reserve = 1MB
max_locks_per_transaction = 256"
	mkdir -p "$WORK/$c/pts"
	bench_psql "$c" <<SQL
CREATE TABLESPACE pts LOCATION '$WORK/$c/pts';
CREATE TABLESPACE cts LOCATION '$WORK/$c/cts' WITH (compression = 'zstd');
SQL
	for ts in pts cts; do
		for b in $(seq 0 100 $((N - 1))); do
			for t in $(seq "$b" $((b + 99 < N - 1 ? b + 99 : N - 1))); do
				echo "CREATE TABLE ${ts}_$t (id int PRIMARY KEY USING INDEX TABLESPACE $ts, v text) TABLESPACE $ts;"
				echo "INSERT INTO ${ts}_$t SELECT g, md5(g::text) FROM generate_series(1, $ROWS) g;"
			done | bench_psql "$c"
		done
	done
	bench_psql "$c" <<<'CHECKPOINT'
	for ts in pts cts; do
		dir=$(echo "$WORK/$c/$ts"/PG_*)
		rm -rf "$WORK/$c/copy-$ts"
		cp -r --sparse=never "$dir" "$WORK/$c/copy-$ts"
		rm -rf "$WORK/$c/copy-$ts/pgsql_tmp"
		sync
		files=$(find "$dir" -path '*/pgsql_tmp' -prune -o -type f -print | wc -l)
		echo "| ${inst#$TOP/} ($("$inst/bin/postgres" --version | awk '{ print $3 }')) | $ts | $files | $(mib "$(bytes "$dir" apparent)") | $(mib "$(bytes "$dir" allocated)") | $(mib "$(bytes "$WORK/$c/copy-$ts" allocated)") |" >>"$OUT"
		rm -rf "$WORK/$c/copy-$ts"
	done
	bench_stop_clusters
	clusters=()
done
