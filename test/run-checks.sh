#!/usr/bin/env bash
#
# run-checks.sh: run every test suite of pgstrata against build/install (or,
# with PGSTRATA_FLAVOUR=cassert, the assert-enabled build/install-cassert) and
# end with one summary line, "pgstrata: N passed, N failed, N skipped".  An
# assertion failure in any server the suites start fails the run.
#
# Called by `make check` after the build.  A test is one regression test,
# one isolation spec, one TAP script, or the patch-series check.  Logs go
# to build/check/; a failing suite shows its diffs or log tail.

set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
MAKE=${MAKE:-make}
. "$TOP/test/lib.sh"
LOGDIR=$BUILD_ROOT/check$FLAVOUR_SUFFIX
export PG_CONFIG=$PG_INSTALL/bin/pg_config

passed=0
failed=0
skipped=0
failures=()

small_fs_umount "$LOGDIR/smallfs"
reflink_fs_umount "$LOGDIR/reflinkfs"
if [ "$(id -u)" = 0 ] && [ -d "$LOGDIR/lazyfs" ]; then
	"$TOP/test/crash/lazyfs-service.sh" stop "$LOGDIR/lazyfs"
fi
if [ "$(id -u)" = 0 ] && [ -d "$LOGDIR/faultfs" ]; then
	"$TOP/test/fault/faultfs-service.sh" stop "$LOGDIR/faultfs"
fi
rm -rf "$LOGDIR"
mkdir -p "$LOGDIR"

# suite NAME COMMAND...: run one suite, log it, add up its results.
suite()
{
	local name=$1 log=$LOGDIR/$1.log rc p f s
	shift
	echo "=== $name"
	"$@" >"$log" 2>&1
	rc=$?
	read -r p f s < <(count_results "$log")
	# A suite that failed before reporting any failing test still failed.
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	if [ $((p + f + s)) -eq 0 ]; then
		# a suite that reports nothing has not tested anything
		if [ $rc -eq 0 ]; then p=1; else f=1; fi
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	if [ "$f" -ne 0 ]; then
		failures+=("$name")
		echo "--- $name failed (exit $rc); end of $log:"
		tail -n 40 "$log"
		for d in $(find "$LOGDIR" -name regression.diffs -newer "$log" 2>/dev/null); do
			echo "--- $d:"
			head -n 80 "$d"
		done
	fi
	echo "    $name: $p passed, $f failed, $s skipped"
}

# The pipeline's own tests (test/pipeline: the tarball, its fetch routes,
# the version strings, the patch series, minor-release moves) exercise the
# scripts, not the server's code: they run in the release pass only.
if [ -z "$FLAVOUR_SUFFIX" ]; then
	suite patch-series "$TOP/patches/tools/tree.sh" check
	# The SGML documentation the patches add must stay valid DocBook: a
	# broken entry fails here (xmllint validation, seconds).  XMLLINT is
	# given because a build configured before the docs packages were
	# installed has none; --nonet makes a missing DTD fail, not download.
	suite docs $MAKE -C "$PG_OBJ/doc/src/sgml" check \
		XMLLINT="$(command -v xmllint || echo xmllint) --nonet"
	tap_leave_out=
else
	# The OS-crash harness's short run (test/crash) too: it exercises
	# recovery from the file system's side, which the release passes of
	# 17 and 18 do, and each pass costs a TAP job about 90 s.
	tap_leave_out="pipeline crash"
fi
# The suites run out of tree (PGXS's VPATH support): sources in test/,
# results and temporary instances in build/check/test.
OUT=$LOGDIR/test
testmake()
{
	as_test_user "$OUT" $MAKE -C "$OUT" -f "$TOP/test/Makefile" VPATH="$TOP/test" \
		PG_CONFIG="$PG_CONFIG" "$@"
}

suite regress testmake installcheck-regress
# Run by root, the TAP suite gets a small file system to fill up; a test
# that is given PGSTRATA_SMALLFS fails, rather than skips, when it is not
# usable.  Run by anyone else, those tests skip that part and say so.
# The same for a file system with reflinks (XFS), where file_copy_method =
# clone shares extents instead of copying bytes.
if [ "$(id -u)" = 0 ]; then
	if small_fs_mount "$LOGDIR/smallfs"; then
		export PGSTRATA_SMALLFS=$LOGDIR/smallfs
	else
		export PGSTRATA_SMALLFS="(could not mount a tmpfs at $LOGDIR/smallfs)"
	fi
	if reflink_fs_mount "$LOGDIR/reflinkfs"; then
		export PGSTRATA_REFLINKFS=$LOGDIR/reflinkfs
	else
		export PGSTRATA_REFLINKFS="(could not mount an XFS file system with reflinks at $LOGDIR/reflinkfs)"
	fi
	# The OS-crash harness (test/crash) mounts LazyFS for the test user
	# through a service root runs (/dev/fuse is root's): LazyFS is built
	# once into build/lazyfs (a minute), then each pass starts the
	# service.  A test given PGSTRATA_LAZYFS fails when it cannot use it.
	# Without the vendored tarball (../shared/vendor) it is skipped, and
	# says so.
	# The I/O-error tests (test/fault) mount faultfs the same way, in
	# every pass: they are short (20 s), and an I/O error in an assert
	# build must be an ERROR too.
	if "$TOP/test/fault/faultfs-service.sh" start "$LOGDIR/faultfs" \
		>"$LOGDIR/faultfs-start.log" 2>&1; then
		export PGSTRATA_FAULTFS=$LOGDIR/faultfs
	else
		export PGSTRATA_FAULTFS="(could not build faultfs or start its service: $LOGDIR/faultfs-start.log)"
	fi
	if [ -n "$FLAVOUR_SUFFIX" ]; then
		:	# test/crash is left out of this pass
	else
		"$TOP/test/crash/build-lazyfs.sh" >"$LOGDIR/lazyfs-build.log" 2>&1
		rc=$?
		if [ $rc = 0 ] && "$TOP/test/crash/lazyfs-service.sh" start "$LOGDIR/lazyfs"; then
			export PGSTRATA_LAZYFS=$LOGDIR/lazyfs
		elif [ $rc = 3 ]; then
			export PGSTRATA_LAZYFS_WHY="$(tail -n 1 "$LOGDIR/lazyfs-build.log")"
		else
			export PGSTRATA_LAZYFS="(could not build LazyFS or start its service: $LOGDIR/lazyfs-build.log)"
		fi
	fi
fi
# The TAP scripts run PGSTRATA_TAP_JOBS at a time (default: one per CPU).
# They spend much of their time waiting for servers to start, stop and
# fsync, so two at a time on 2 CPUs took 191 s where one at a time took
# 347 (2026-11-28); each has its own instances, ports and directories.
suite tap testmake prove-installcheck TAP_LEAVE_OUT="$tap_leave_out" \
	PROVE_FLAGS="-j${PGSTRATA_TAP_JOBS:-$(nproc)}"
small_fs_umount "$LOGDIR/smallfs"
reflink_fs_umount "$LOGDIR/reflinkfs"
if [ "$(id -u)" = 0 ]; then
	"$TOP/test/crash/lazyfs-service.sh" stop "$LOGDIR/lazyfs"
	"$TOP/test/fault/faultfs-service.sh" stop "$LOGDIR/faultfs"
fi
# On PostgreSQL 18, pg_upgrade from pgstrata on 17 (test/upgrade): it needs
# 17's release build, build/install, which make PG=18 check-quick and make
# check-all build first.  Release pass only, as the pipeline's tests.
if [ "${PGSTRATA_PG:-17}" = 18 ] && [ -z "$FLAVOUR_SUFFIX" ]; then
	export PGSTRATA_OLD_INSTALL=$TOP/build/install
	suite upgrade-from-17 testmake prove-installcheck PROVE_TESTS="upgrade/*.pl"
fi

# The contrib modules' own suites, the same way: each module's Makefile
# through PGXS (USE_PGXS=1) with VPATH, results and temporary instances
# under build/check/<module>.  Each suite runs alone so that it is logged
# and counted alone; pg_isolation_regress reports like pg_regress.
# contribmake MODULE MAKE-ARGS...
contribmake()
{
	local module=$1
	shift
	as_test_user "$LOGDIR/$module" $MAKE -C "$LOGDIR/$module" \
		-f "$TOP/contrib/$module/Makefile" VPATH="$TOP/contrib/$module" \
		USE_PGXS=1 PG_CONFIG="$PG_CONFIG" "$@"
}

suite pgstrata-regress contribmake pgstrata installcheck \
	EXTRA_REGRESS_OPTS="--temp-instance=$LOGDIR/pgstrata/tmp_check_regress"
suite refdata-regress contribmake refdata installcheck ISOLATION= TAP_TESTS= \
	EXTRA_REGRESS_OPTS="--temp-instance=$LOGDIR/refdata/tmp_check_regress"
suite refdata-isolation contribmake refdata installcheck REGRESS= TAP_TESTS= \
	EXTRA_REGRESS_OPTS="--temp-instance=$LOGDIR/refdata/tmp_check_isolation"
suite refdata-tap contribmake refdata installcheck REGRESS= ISOLATION=

# Upstream's core regression and isolation suites with every relation they
# create stored compressed (pcs_debug_force_compression); the contrib and
# recovery suites too are `make check-upstream-compressed`.  Two to four
# minutes: a temporary installation in build/obj, then the two suites.
suite upstream-compressed env SUITES="regress isolation" PRINT_RESULTS=1 \
	"$TOP/test/upstream/run-upstream-compressed.sh"

# A failed assertion may kill a server a test did not look at (a background
# worker, a standby): any TRAP in any server log of the run fails it.
traps=$(grep -rl --include='*.log' '^TRAP: ' "$LOGDIR" 2>/dev/null)
if [ -n "$traps" ]; then
	failed=$((failed + 1))
	failures+=("assertions")
	echo "--- failed assertions, in:"
	printf '%s\n' $traps
	grep -rh --include='*.log' '^TRAP: ' "$LOGDIR" | sort | uniq -c | head -n 20
fi

echo
if [ -n "${PGSTRATA_T0:-}" ]; then
	echo "wall time of the whole run: $(($(date +%s) - PGSTRATA_T0)) s"
fi
if [ $failed -ne 0 ]; then
	echo "failed suites: ${failures[*]} (logs in $LOGDIR)"
fi
echo "pgstrata: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
