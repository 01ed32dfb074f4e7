#!/usr/bin/env bash
#
# run-crash.sh: the long run of the OS-crash harness (make check-crash).
#
#   run-crash.sh [CYCLES]
#
# Runs test/crash/001_lazyfs_ledger.pl once per mode, as the test user,
# with CYCLES primary crash cycles (default 200) and STANDBY_CYCLES standby
# crash cycles (default CYCLES / 10): the compressed tablespace (zstd) and
# the control, the same load with the tablespace made without compression.
# Must run as root, which builds LazyFS if need be (build/lazyfs) and
# starts the service that mounts it for the test user
# (lazyfs-service.sh).  Environment:
#
#   MODES           compressions to run, in order (default "zstd none")
#   STANDBY_CYCLES  standby cycles per mode (default CYCLES / 10)
#   SEED            the seed of every mode (default: one per mode, printed)
#   FSYNC           on (default) or off: fsync = off must fail the harness
#   SYNC_COMMIT     on (default) or off: synchronous_commit = off must fail
#                   the ledger check (acknowledged commits lost)
#   DROP            1 (default): OS crashes; 0: crashes of the server alone
#                   (what LazyFS holds is fsynced, not dropped), to compare
#   LOAD_SECONDS    longest load before a crash (default 4)
#   PARALLEL=1      run the modes at the same time (default: one by one)
#   CRASH_OUT       where the raw output goes (default build/crash/runs):
#                   one log per mode, and the logs of a failed cycle
#   PG_CONFIG       the installation to test (default build/install)
#   CRASH_WORK      the work directory (default build/crash), its own for
#                   each run that goes on at the same time
#
# Exits non-zero if any mode failed.  The last line of each mode's log says
# how many cycles passed, failed and hung in LazyFS.
#
# Portions Copyright (c) 2026, pgstrata developers
#
# test/crash/run-crash.sh

set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
MAKE=${MAKE:-make}
. "$TOP/test/lib.sh"

CYCLES=${1:-${CYCLES:-200}}
STANDBY_CYCLES=${STANDBY_CYCLES:-$((CYCLES / 10))}
MODES=${MODES:-zstd none}
FSYNC=${FSYNC:-on}
PG_CONFIG=${PG_CONFIG:-$PG_INSTALL/bin/pg_config}
WORK=${CRASH_WORK:-$BUILD_ROOT/crash}
CRASH_OUT=${CRASH_OUT:-$WORK/runs}

if [ "$(id -u)" != 0 ]; then
	echo "error: run-crash.sh needs root, to mount LazyFS for the test user (/dev/fuse is root's)" >&2
	exit 1
fi
[ -x "$PG_CONFIG" ] || { echo "error: no installation at $PG_CONFIG (make first)" >&2; exit 1; }

"$TOP/test/crash/build-lazyfs.sh" >/dev/null || exit 1
mkdir -p "$WORK" "$CRASH_OUT"
svc=$WORK/lazyfs
trap '"$TOP/test/crash/lazyfs-service.sh" stop "$svc"' EXIT
"$TOP/test/crash/lazyfs-service.sh" start "$svc" || exit 1
ensure_test_user
chown "$TEST_USER:" "$CRASH_OUT"

stamp=$(date -u +%Y%m%dT%H%M%SZ)
# run_mode MODE: one run of the harness; its output in CRASH_OUT
run_mode()
{
	local mode=$1 out=$WORK/$1 log
	log=$CRASH_OUT/$stamp-$mode-fsync$FSYNC${SYNC_COMMIT:+-synccommit$SYNC_COMMIT}${DROP:+-drop$DROP}-$CYCLES.log
	rm -rf "$out"
	{
		echo "# $(date -u '+%F %T') UTC: CYCLES=$CYCLES STANDBY_CYCLES=$STANDBY_CYCLES compression=$mode fsync=$FSYNC SEED=${SEED:-(random)} on $(nproc) CPUs, $(. /etc/os-release; echo "$PRETTY_NAME"), $("$PG_CONFIG" --version)"
		as_test_user "$out" env PGSTRATA_LAZYFS="$svc" \
			PGSTRATA_CRASH_CYCLES="$CYCLES" \
			PGSTRATA_CRASH_STANDBY_CYCLES="$STANDBY_CYCLES" \
			PGSTRATA_CRASH_COMPRESSION="$mode" \
			PGSTRATA_CRASH_FSYNC="$FSYNC" \
			${SEED:+PGSTRATA_CRASH_SEED="$SEED"} \
			${LOAD_SECONDS:+PGSTRATA_CRASH_LOAD_SECONDS="$LOAD_SECONDS"} \
			${SYNC_COMMIT:+PGSTRATA_CRASH_SYNC_COMMIT="$SYNC_COMMIT"} \
			${DROP:+PGSTRATA_CRASH_DROP="$DROP"} \
			PGSTRATA_CRASH_KEEP="$CRASH_OUT/$stamp-$mode" \
			$MAKE -s -C "$out" -f "$TOP/test/Makefile" VPATH="$TOP/test" \
			PG_CONFIG="$PG_CONFIG" prove-installcheck \
			PROVE_TESTS=crash/001_lazyfs_ledger.pl PROVE_FLAGS=-v
		echo "# $(date -u '+%F %T') UTC: exit $?"
	} >"$log" 2>&1
	grep -E 'crash harness: seed .*cycles passed' "$log" | tail -n 1
	grep -q '^Result: PASS' "$log"
}

rc=0
if [ "${PARALLEL:-0}" = 1 ]; then
	pids=()
	for m in $MODES; do
		run_mode "$m" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
else
	for m in $MODES; do
		run_mode "$m" || rc=1
	done
fi
echo "logs: $CRASH_OUT/$stamp-*"
exit $rc
