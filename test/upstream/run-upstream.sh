#!/usr/bin/env bash
#
# run-upstream.sh: run upstream PostgreSQL's own suites against the patched
# build: `make check-world` of the build tree, that is the core regression
# and isolation suites, contrib, the PLs, ECPG and every TAP suite
# (src/bin, recovery, subscription, modules).  Suites that need
# PG_TEST_EXTRA (ssl, kerberos, ldap, ...) are skipped by upstream's rules.
#
# Called by `make check-upstream`.  Environment:
#   JOBS          parallel make jobs (default: number of CPUs)
#   TEMP_CONFIG   a postgresql.conf fragment every test instance gets
#                 (upstream's own hook; used to force features on)
#
# Ends with "upstream: N passed, N failed, N skipped" and the wall time.

set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
JOBS=${JOBS:-$(nproc)}
. "$TOP/test/lib.sh"
OBJ=$PG_OBJ
LOGDIR=$BUILD_ROOT/upstream$FLAVOUR_SUFFIX

mkdir -p "$LOGDIR"
log=$LOGDIR/check-world.log
start=$(date +%s)

# The suites write into the build tree; as root, they run as the test user.
if [ "$(id -u)" = 0 ]; then
	ensure_test_user || exit 1
	chown -R "$TEST_USER:" "$OBJ"
fi

# 18's ecpg preprocessor TAP tests run in the source tree and write the C
# files they make next to their inputs there: let the test user write that
# directory, and take the files away afterwards (the tree must stay as the
# series made it).
ecpg_t=$BUILD_ROOT/postgresql/src/interfaces/ecpg/preproc/t
if [ -d "$ecpg_t" ] && [ "$(id -u)" = 0 ]; then
	chown "$TEST_USER:" "$ecpg_t"
fi

echo "--- make check-world -j$JOBS in $OBJ (log: $log)"
as_test_user "$LOGDIR/home" env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS \
	make -C "$OBJ" -k -j"$JOBS" check-world >"$log" 2>&1
rc=$?
elapsed=$(($(date +%s) - start))
[ -d "$ecpg_t" ] && rm -f "$ecpg_t"/*.c

read -r passed failed skipped < <(count_results "$log")
if [ $rc -ne 0 ]; then
	[ "$failed" -ne 0 ] || failed=1
	echo "--- check-world failed (exit $rc); failing tests and diffs:"
	grep -E '^not ok |^Failed [0-9]+/|Dubious|make.*Error' "$log" | head -n 60
	find "$OBJ" -name regression.diffs -newer "$PG_INSTALL" -exec head -n 60 {} \;
fi
echo "upstream check-world wall time: $((elapsed / 60)) min $((elapsed % 60)) s"
echo "upstream: $passed passed, $failed failed, $skipped skipped"
[ $rc -eq 0 ]
