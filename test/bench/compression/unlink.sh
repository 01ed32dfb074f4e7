#!/usr/bin/env bash
#
# unlink.sh: what creating and dropping a relation costs while compressed
# segments keep free units.
#
#   [INSTALLS="DIR ..."] [KEEP=2000] [ROUNDS=5] [SECONDS_PER_RUN=10] \
#       test/bench/compression/unlink.sh [OUTPUT.md]
#
# Every unlink of a fork, plain ones too, forgets the free units its
# relation keeps (pcs_forget_fork()).  For each installation of INSTALLS
# (default build/install) two throwaway clusters under build/bench/unlink:
# "none", where no segment keeps free units, and "kept", where KEEP small
# tables of a compressed tablespace have each moved a page (so that KEEP
# segments keep a run each; pgstrata_free_units() shows them).  One client
# runs CREATE TEMP TABLE and DROP TABLE in a transaction (pgbench, a
# temporary table's three forks are unlinked at the end of each) for
# SECONDS_PER_RUN seconds, in every cluster in turn, ROUNDS times.  Writes
# markdown to OUTPUT.md (default: stdout): transactions per second per run,
# the medians and the ratio kept / none per installation.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
WORK=$TOP/build/bench/unlink
INSTALLS=${INSTALLS:-$TOP/build/install}
KEEP=${KEEP:-2000}
ROUNDS=${ROUNDS:-5}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
OUT=${1:-/dev/stdout}

if [ "$(id -u)" = 0 ]; then
	bench_as_test_user "$WORK" "$OUT" "$0"
	exit
fi

mkdir -p "$WORK"
declare -A port_of bin_of
clusters=()
trap bench_stop_clusters EXIT

# make_cluster NAME BIN: a cluster with a compressed tablespace
make_cluster()
{
	bench_named_cluster "$1" "$2"
	bench_psql "$1" <<SQL
CREATE EXTENSION pgstrata;
CREATE TABLESPACE cts LOCATION '$WORK/$1/cts' WITH (compression = 'zstd');
SQL
}

# keep_runs NAME: KEEP tables whose one page moved, so that each keeps a run
keep_runs()
{
	bench_psql "$1" <<SQL
DO \$\$
BEGIN
	FOR i IN 1..$KEEP LOOP
		EXECUTE format('CREATE TABLE k%s (id int, v text) TABLESPACE cts', i);
		EXECUTE format('INSERT INTO k%s VALUES (1, ''x'')', i);
	END LOOP;
END \$\$;
CHECKPOINT;
DO \$\$
BEGIN
	FOR i IN 1..$KEEP LOOP
		EXECUTE format('UPDATE k%s SET v = (SELECT string_agg(md5(g::text || %s), '''') FROM generate_series(1, 40) g)', i, i);
	END LOOP;
END \$\$;
CHECKPOINT;
SQL
}

i=0
for inst in $INSTALLS; do
	i=$((i + 1))
	make_cluster "i${i}_none" "$inst/bin"
	make_cluster "i${i}_kept" "$inst/bin"
	keep_runs "i${i}_kept"
done

printf 'CREATE TEMP TABLE u (a int);\nDROP TABLE u;\n' >"$WORK/unlink.sql"
declare -A tps
for round in $(seq 1 "$ROUNDS"); do
	for c in "${clusters[@]}"; do
		tps[$c,$round]=$("${bin_of[$c]}/pgbench" -n -h 127.0.0.1 -p "${port_of[$c]}" \
			-T "$SECONDS_PER_RUN" -f "$WORK/unlink.sql" postgres 2>/dev/null |
			sed -n 's/^tps = \([0-9.]*\).*/\1/p')
	done
done

{
	echo "# CREATE TEMP TABLE + DROP TABLE while compressed segments keep free units"
	echo
	echo "\`INSTALLS=\"$INSTALLS\" KEEP=$KEEP ROUNDS=$ROUNDS SECONDS_PER_RUN=$SECONDS_PER_RUN test/bench/compression/unlink.sh\`, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, $(uname -sr)"
	echo
	i=0
	for inst in $INSTALLS; do
		i=$((i + 1))
		kept=$("${bin_of[i${i}_kept]}/psql" -X -At -h 127.0.0.1 -p "${port_of[i${i}_kept]}" -d postgres \
			-c 'SELECT kept_runs FROM pgstrata_free_units()')
		echo "## installation $i: ${inst#$TOP/} (runs kept in \"kept\": $kept)"
		echo
		echo "| round | none (tps) | kept (tps) | kept / none |"
		echo "| ---: | ---: | ---: | ---: |"
		for round in $(seq 1 "$ROUNDS"); do
			n=${tps[i${i}_none,$round]}
			k=${tps[i${i}_kept,$round]}
			echo "| $round | $n | $k | $(awk -v k="$k" -v n="$n" 'BEGIN { printf "%.3f", k / n }') |"
		done
		mn=$(median $(for r in $(seq 1 "$ROUNDS"); do echo "${tps[i${i}_none,$r]}"; done))
		mk=$(median $(for r in $(seq 1 "$ROUNDS"); do echo "${tps[i${i}_kept,$r]}"; done))
		echo "| median | $mn | $mk | $(awk -v k="$mk" -v n="$mn" 'BEGIN { printf "%.3f", k / n }') |"
		echo
	done
} >"$OUT"
