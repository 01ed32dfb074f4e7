#!/usr/bin/env bash
#
# run-upstream-compressed.sh: run upstream PostgreSQL's own suites with every
# relation stored compressed: the core regression suite, the isolation suite,
# the contrib suites and the recovery TAP suite (the last with
# wal_consistency_checking = all).
#
# How compression is forced: the developer option pcs_debug_force_compression
# (patch 0008) makes the storage manager create every new relation fork
# compressed, in every tablespace (pg_default and pg_global included).  Every
# server of the run gets it through TEMP_CONFIG, upstream's hook, with
# full_page_writes and wal_log_hints, which compressed storage needs.  So
# every relation a suite creates is compressed, and so is every relation of
# the databases pg_regress creates (CREATE DATABASE copies the template
# relation by relation into new, compressed, forks); the catalogs initdb
# creates (template0, template1, postgres, and pg_global until a test
# rewrites one) stay plain, because the suites copy one initdb template.
# PCS_FORCE_INITDB=1 gives the option to initdb too
# (PG_TEST_INITDB_EXTRA_OPTS), so that those are compressed as well; that
# costs an initdb per cluster and much disk: initdb copies template1 into
# template0 and postgres file by file, which filled each compressed fork's
# sparse 2 MB map with zeros while segments were made in formats 2 to 4
# (see test/upstream/compressed-differences.md); format 5 has no sparse
# map, and its file's size follows its data.
#
# A run that silently stores nothing compressed fails: the core and isolation
# suites end with a check that reads the first bytes of every relation file
# of their database and of pg_global (test/upstream/compressed/), and the
# data directories the recovery suite leaves are scanned the same way
# (count-compressed.pl): every relation file created after initdb must be
# compressed.
#
# Differences from upstream's results that must remain are listed, with
# their reasons, in test/upstream/compressed-differences.md.  Expected-output
# differences are stored as unified diffs against upstream's expected files,
# test/upstream/compressed/diffs/<suite directory>/<test>.diff; the runner
# applies them to copies of upstream's files under
# build/upstream-compressed/expected/ and points pg_regress there with
# --expecteddir (which falls back to upstream's own file for every other
# test), so exactly those differences are accepted, and a diff that no
# longer applies stops the run.  TAP scripts that cannot run on compressed
# files, or not with wal_consistency_checking, are listed with their class
# and reason in test/upstream/compressed/tap-exceptions.txt: the first are
# left out by name (PROVE_TESTS) and counted as skipped, the second run in a
# second pass without wal_consistency_checking.  A TAP script that damages
# pages at md offsets may instead have an accepted diff,
# compressed/diffs-18/<directory>/t/<script>.diff, which makes it go through
# compressed/pcs_page.c; it runs from a patched copy (see below).
#
# Called by `make check-upstream-compressed`.  Environment:
#   SUITES       which suites (default: "regress isolation contrib recovery")
#   PCS_FORCE    the algorithm: zstd (default) or lz4
#   PCS_FORCE_INITDB  1: initdb's catalogs compressed too (slow, disk-hungry)
#   JOBS         parallel make and prove jobs (default 2)
#   PRINT_RESULTS  1: print every test's result line (for test/run-checks.sh,
#                which counts them)
#
# Ends with "upstream-compressed: N passed, N failed, N skipped" and the wall
# time of each suite and of the whole run.

set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$TOP/test/upstream/compressed
SUITES=${SUITES:-regress isolation contrib recovery}
PCS_FORCE=${PCS_FORCE:-zstd}
PCS_FORCE_INITDB=${PCS_FORCE_INITDB:-0}
JOBS=${JOBS:-2}
. "$TOP/test/lib.sh"
OBJ=$PG_OBJ
LOGDIR=$BUILD_ROOT/upstream-compressed$FLAVOUR_SUFFIX

rm -rf "$LOGDIR"
mkdir -p "$LOGDIR"
start=$(date +%s)
passed=0
failed=0
skipped=0
failures=()

# The suites write into the build tree; as root, they run as the test user.
if [ "$(id -u)" = 0 ]; then
	ensure_test_user || exit 1
	chown -R "$TEST_USER:" "$OBJ"
fi

# What every server of the run gets.  Recovery runs also check every page
# that redo touches against the full-page image the primary logged.
conf=$LOGDIR/temp.conf
cat >"$conf" <<EOF
# written by test/upstream/run-upstream-compressed.sh
pcs_debug_force_compression = $PCS_FORCE
full_page_writes = on
wal_log_hints = on
EOF
recovery_conf=$LOGDIR/temp-recovery.conf
cp "$conf" "$recovery_conf"
echo "wal_consistency_checking = all" >>"$recovery_conf"

# The accepted differences of the release under test: compressed/diffs
# against 17's expected files, compressed/diffs-18 against 18's (ported
# from 17's; compressed-differences.md gives the reasons, the same on both).
case "${PGSTRATA_PG:-17}" in
	17) DIFFS=$HERE/diffs ;;
	*) DIFFS=$HERE/diffs-$PGSTRATA_PG ;;
esac

# overlay NAME SUITE_DIR...: apply the accepted diffs of those suite
# directories to copies of upstream's expected files, into one --expecteddir
# (build/upstream-compressed/expected/NAME), and print its path.  A test name
# must then belong to one directory only (contrib: to one module).
overlay()
{
	local dir=$LOGDIR/expected/$1 d sub t n out
	shift
	mkdir -p "$dir/expected"
	for sub in "$@"; do
		for d in "$DIFFS/$sub"/*.diff; do
			[ -e "$d" ] || continue
			# <test>.diff gives expected/<test>.out, <test>_<N>.diff the
			# alternative expected/<test>_<N>.out, both from upstream's
			# <test>.out; an empty diff keeps upstream's output as one of
			# the alternatives
			out=$(basename "$d" .diff)
			t=$(echo "$out" | sed 's/_[0-9]$//')
			case $sub in
				contrib/*) n=$(ls "$BUILD_ROOT"/postgresql/contrib/*/expected/"$t".out | wc -l) ;;
				*) n=1 ;;
			esac
			if [ "$n" -ne 1 ]; then
				echo "error: $d: $n contrib modules have a test named $t" >&2
				return 2
			fi
			if [ ! -s "$d" ]; then
				cp "$BUILD_ROOT/postgresql/$sub/expected/$t.out" "$dir/expected/$out.out"
			elif ! patch -s -o "$dir/expected/$out.out" \
				"$BUILD_ROOT/postgresql/$sub/expected/$t.out" <"$d"; then
				echo "error: $d does not apply to upstream's $sub/expected/$t.out" >&2
				return 2
			fi
		done
	done
	echo "$dir"
}
regress_expected=$(overlay regress src/test/regress) || exit 2
cp "$HERE/regress/expected/pcs_forced_check.out" "$regress_expected/expected/"
contrib_expected=$(overlay contrib $(cd "$DIFFS" && ls -d contrib/*)) || exit 2

# TAP scripts that damage pages at md offsets and have an accepted diff,
# DIFFS/<directory>/t/<script>.diff, run from a patched copy of upstream's
# script, LOGDIR/tap/<directory>/t/<script>, in which the page goes through
# pcs_page (compressed/pcs_page.c: reads and stores one page of a
# compressed file), built here and found by the scripts as PCS_PAGE.
tap_diffs=$(cd "$DIFFS" && find . -path '*/t/*.pl.diff' | sed 's|^\./||' | sort)
for d in $tap_diffs; do
	dir=${d%/t/*}
	script=t/$(basename "$d" .diff)
	mkdir -p "$LOGDIR/tap/$dir/t"
	if ! patch -s -o "$LOGDIR/tap/$dir/$script" \
		"$BUILD_ROOT/postgresql/$dir/$script" <"$DIFFS/$d"; then
		echo "error: $DIFFS/$d does not apply to upstream's $dir/$script" >&2
		exit 2
	fi
done
if [ -n "$tap_diffs" ] && echo " $SUITES " | grep -qE ' (contrib|recovery) '; then
	export PCS_PAGE=$LOGDIR/pcs_page
	pgc=$PG_INSTALL/bin/pg_config
	# shellcheck disable=SC2046,SC2086
	gcc -O2 $("$pgc" --cppflags) -I"$TOP/src/include" -I"$("$pgc" --includedir-server)" \
		-o "$PCS_PAGE" "$HERE/pcs_page.c" $PCS_FORMAT_SOURCES "$TOP/test/common/pcs_frontend.c" \
		-L"$("$pgc" --libdir)" -lpgcommon -lpgport -lzstd -llz4 || exit 2
fi
chmod -R a+rX "$LOGDIR/expected" "$LOGDIR/tap" "$LOGDIR"/pcs_page 2>/dev/null

# TAP scripts run differently: "DIRECTORY SCRIPT CLASS REASON" lines
skips=$(grep -v '^#' "$HERE/tap-exceptions.txt" | awk '$3 == "skip" { print $1, $2 }')
nowcc=$(grep -v '^#' "$HERE/tap-exceptions.txt" | awk '$3 == "no-wcc" { print $1, $2 }')

# prove_tests DIR: the TAP scripts of DIR (relative to the build tree)
# without the exceptions (the skipped ones count as skipped), the patched
# copies by their absolute paths
skipped_scripts=0
prove_tests()
{
	local f out=()
	for f in "$BUILD_ROOT/postgresql/$1"/t/*.pl; do
		f=t/$(basename "$f")
		printf '%s\n%s\n' "$skips" "$nowcc" | grep -qxF "$1 $f" && continue
		if [ -e "$LOGDIR/tap/$1/$f" ]; then
			out+=("$LOGDIR/tap/$1/$f")
		else
			out+=("$f")
		fi
	done
	echo "${out[*]}"
}
# nowcc_tests DIR: the scripts of DIR to run without wal_consistency_checking
nowcc_tests()
{
	echo "$nowcc" | awk -v d="$1" '$1 == d { printf "%s ", $2 }'
}
# count_skips PREFIX: the scripts left out under directories PREFIX* (those
# the release under test has: a line may name a script of 18 only)
count_skips()
{
	local d s
	while read -r d s; do
		[ -e "$BUILD_ROOT/postgresql/$d/$s" ] &&
			skipped_scripts=$((skipped_scripts + 1))
	done < <(echo "$skips" | grep "^$1")
}

# The proof that the suites stored their relations compressed: one more
# regression test and one more isolation spec, run after upstream's, found by
# pg_regress in its output directory before its input directory.
mkdir -p "$OBJ/src/test/regress/sql" "$OBJ/src/test/isolation/output_iso/specs" \
	"$OBJ/src/test/isolation/output_iso/expected"
cp "$HERE/pcs_forced_check.sql" "$OBJ/src/test/regress/sql/"
cp "$HERE/pcs-forced-check.spec" "$OBJ/src/test/isolation/output_iso/specs/"
cp "$HERE/isolation/expected/pcs-forced-check.out" "$OBJ/src/test/isolation/output_iso/expected/"
[ "$(id -u)" = 0 ] && chown -R "$TEST_USER:" "$OBJ"

initdb_env=()
if [ "$PCS_FORCE_INITDB" = 1 ]; then
	initdb_env=(PG_TEST_INITDB_EXTRA_OPTS="-c pcs_debug_force_compression=$PCS_FORCE")
fi

# pgmake LOG ARGS...: a top-level make in the build tree, as the test user,
# with compression forced.
pgmake()
{
	local log=$1
	shift
	as_test_user "$LOGDIR/home" env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS \
		"${initdb_env[@]}" make "$@" >"$log" 2>&1
}

# scan_data_dirs DIR...: count the relation files of every data directory
# under DIR by their first bytes; fail if none is compressed or any created
# after initdb (all, with PCS_FORCE_INITDB=1) holds data and is not.
scan_data_dirs()
{
	perl "$TOP/test/upstream/count-compressed.pl" \
		$([ "$PCS_FORCE_INITDB" = 1 ] && echo --all) "$@"
}

# suite NAME COMMAND...: run one suite, add up its results.
suite()
{
	local name=$1 log=$LOGDIR/$1.log rc p f s t0=$(date +%s)
	shift
	echo "=== $name"
	"$@"
	rc=$?
	read -r p f s < <(count_results "$log")
	if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	if [ $((p + f + s)) -eq 0 ]; then
		if [ $rc -eq 0 ]; then p=1; else f=1; fi
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	if [ "${PRINT_RESULTS:-0}" = 1 ]; then
		grep -E '^(not )?ok [0-9]+ +[-+] |^t/[^ ]+ \.+ |^Files=' "$log"
	fi
	if [ "$f" -ne 0 ]; then
		failures+=("$name")
		echo "--- $name failed (exit $rc); failing tests (log: $log):"
		grep -E '^not ok |^Failed [0-9]+/|Dubious|make.*Error|could not' "$log" | head -n 40
		find "$OBJ" -name regression.diffs -newer "$conf" -exec head -n 60 {} \;
	fi
	echo "    $name: $p passed, $f failed, $s skipped, $(($(date +%s) - t0)) s"
}

run_install()
{
	# One temporary installation for all suites, with everything check-world
	# installs into it (contrib, test modules).
	pgmake "$LOGDIR/install.log" -C "$OBJ" -s temp-install
}

run_regress()
{
	pgmake "$LOGDIR/regress.log" -C "$OBJ/src/test/regress" check \
		NO_TEMP_INSTALL=1 TEMP_CONFIG="$conf" EXTRA_TESTS=pcs_forced_check \
		EXTRA_REGRESS_OPTS="--expecteddir=$regress_expected"
}

run_isolation()
{
	pgmake "$LOGDIR/isolation.log" -C "$OBJ/src/test/isolation" check \
		NO_TEMP_INSTALL=1 TEMP_CONFIG="$conf" \
		EXTRA_REGRESS_OPTS="pcs-forced-check"
}

run_contrib()
{
	local all skipdirs m rc=0
	# the modules with scripts left out or patched run alone, without them
	# or with the patched copies
	all=$(env -u MAKEFLAGS make -s --no-print-directory -C "$OBJ/contrib" -f Makefile \
		-f <(printf 'print-subdirs:\n\t@echo $(SUBDIRS)\n') print-subdirs)
	skipdirs=$( (echo "$skips" | awk '{ print $1 }'; echo "$tap_diffs" | sed 's|/t/.*||') |
		awk '$1 ~ /^contrib\// { sub(/^contrib\//, "", $1); print $1 }' | sort -u)
	pgmake "$LOGDIR/contrib.log" -C "$OBJ/contrib" -k -j"$JOBS" check \
		NO_TEMP_INSTALL=1 TEMP_CONFIG="$conf" \
		EXTRA_REGRESS_OPTS="--expecteddir=$contrib_expected" \
		SUBDIRS="$(echo $all | tr ' ' '\n' | grep -vxF "$skipdirs" | tr '\n' ' ')" || rc=1
	count_skips contrib/
	for m in $skipdirs; do
		pgmake "$LOGDIR/contrib-$m.log" -C "$OBJ/contrib/$m" check \
			NO_TEMP_INSTALL=1 TEMP_CONFIG="$conf" \
			EXTRA_REGRESS_OPTS="--expecteddir=$contrib_expected" \
			PROVE_TESTS="$(prove_tests "contrib/$m")" || rc=1
		cat "$LOGDIR/contrib-$m.log" >>"$LOGDIR/contrib.log"
	done
	return $rc
}

run_recovery()
{
	local rc=0 scan pass tests tconf
	count_skips src/test/recovery
	# First every script with wal_consistency_checking, then the no-wcc
	# exceptions without it.  PG_TEST_NOCLEAN keeps the data directories for
	# the scan after each pass; PG_TEST_EXTRA turns on 027_stream_regress's
	# own consistency checks, and that test runs the core suite with
	# EXTRA_REGRESS_OPTS.
	: >"$LOGDIR/recovery.log"
	for pass in wcc no-wcc; do
		if [ $pass = wcc ]; then
			tests=$(prove_tests src/test/recovery)
			tconf=$recovery_conf
		else
			tests=$(nowcc_tests src/test/recovery)
			tconf=$conf
		fi
		[ -n "$tests" ] || continue
		rm -rf "$OBJ/src/test/recovery/tmp_check" "$OBJ/src/test/recovery/tmp_check-$pass"
		pgmake "$LOGDIR/recovery-$pass.log" -C "$OBJ/src/test/recovery" check \
			NO_TEMP_INSTALL=1 TEMP_CONFIG="$tconf" PG_TEST_NOCLEAN=1 \
			EXTRA_REGRESS_OPTS="--expecteddir=$regress_expected" \
			PROVE_TESTS="$tests" \
			PG_TEST_EXTRA=wal_consistency_checking PROVE_FLAGS="-j$JOBS" || rc=1
		cat "$LOGDIR/recovery-$pass.log" >>"$LOGDIR/recovery.log"
		scan_data_dirs "$OBJ/src/test/recovery/tmp_check" >"$LOGDIR/recovery-scan-$pass.txt" 2>&1
		scan=$?
		echo "$pass: $(cat "$LOGDIR/recovery-scan-$pass.txt")"
		# each scan counts as one more test of the suite
		if [ $scan -eq 0 ]; then
			echo "ok 1 - relation files of the data directories ($pass) are compressed" >>"$LOGDIR/recovery.log"
		else
			echo "not ok 1 - relation files of the data directories ($pass) are compressed" >>"$LOGDIR/recovery.log"
			rc=1
		fi
		# keep what a failing pass leaves, for a look
		if [ $rc -eq 0 ]; then
			rm -rf "$OBJ/src/test/recovery/tmp_check"
		else
			mv "$OBJ/src/test/recovery/tmp_check" "$OBJ/src/test/recovery/tmp_check-$pass"
		fi
	done
	return $rc
}

echo "--- upstream suites with pcs_debug_force_compression = $PCS_FORCE (logs: $LOGDIR)"
if ! run_install; then
	echo "--- the temporary installation failed; end of $LOGDIR/install.log:"
	tail -n 30 "$LOGDIR/install.log"
	echo "upstream-compressed: 0 passed, 1 failed, 0 skipped"
	exit 1
fi
for s in $SUITES; do
	case $s in
		regress | isolation | contrib | recovery) suite "$s" "run_$s" ;;
		*) echo "unknown suite $s" >&2; exit 2 ;;
	esac
done

# the TAP scripts left out count as skipped
skipped=$((skipped + skipped_scripts))
elapsed=$(($(date +%s) - start))
echo "upstream-compressed wall time: $((elapsed / 60)) min $((elapsed % 60)) s"
[ $failed -eq 0 ] || echo "failed suites: ${failures[*]} (logs in $LOGDIR)"
echo "upstream-compressed: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
