#!/usr/bin/env bash
#
# check-all.sh: what `make check` (and so CI) runs, after the builds:
#
#   1. the project's suites in the release build (test/run-checks.sh);
#   2. the same suites in the assert-enabled build (build/install-cassert),
#      where a failed assertion in any server fails the run;
#   3. upstream's check-world against the release build
#      (test/upstream/run-upstream.sh); PGSTRATA_SKIP_UPSTREAM=1 leaves it out;
#   4. with PGSTRATA_CHECK_18=1 (make check on 17), the project's suites in
#      PostgreSQL 18's release build (build/18/install, what make PG=18
#      check-quick runs); with PGSTRATA_CHECK_18=all (make check-all), also
#      in 18's assert-enabled build and 18's check-world.
#
# Parts 1-3 run in the major release make chose (PGSTRATA_PG).
#
# Every part runs even when an earlier one failed, so one run shows every
# failure.  Ends with one line per part and the wall time of the whole run.

set -uo pipefail

TOP=$(cd "$(dirname "$0")/.." && pwd)
. "$TOP/test/lib.sh"
results=()
rc=0

# part NAME COMMAND...: run one part, keep its last summary line.
part()
{
	local name=$1 log=$BUILD_ROOT/check-all-$1.log prc
	shift
	echo "##### $name"
	mkdir -p "$BUILD_ROOT"
	"$@" 2>&1 | tee "$log"
	prc=${PIPESTATUS[0]}
	[ "$prc" -eq 0 ] || rc=1
	results+=("$name: $(grep -E '^[a-z-]+: [0-9]+ passed' "$log" | tail -n 1 | sed 's/^[a-z-]*: //') (exit $prc)")
}

part release "$TOP/test/run-checks.sh"
part cassert env PGSTRATA_FLAVOUR=cassert "$TOP/test/run-checks.sh"
if [ "${PGSTRATA_SKIP_UPSTREAM:-}" != 1 ]; then
	part upstream "$TOP/test/upstream/run-upstream.sh"
fi
case "${PGSTRATA_CHECK_18:-}" in
	1)
		part release-18 env PGSTRATA_PG=18 "$TOP/test/run-checks.sh"
		;;
	all)
		part release-18 env PGSTRATA_PG=18 "$TOP/test/run-checks.sh"
		part cassert-18 env PGSTRATA_PG=18 PGSTRATA_FLAVOUR=cassert "$TOP/test/run-checks.sh"
		if [ "${PGSTRATA_SKIP_UPSTREAM:-}" != 1 ]; then
			part upstream-18 env PGSTRATA_PG=18 "$TOP/test/upstream/run-upstream.sh"
		fi
		;;
esac

echo
echo "##### summary"
printf '%s\n' "${results[@]}"
if [ -n "${PGSTRATA_T0:-}" ]; then
	echo "wall time of the whole run: $(($(date +%s) - PGSTRATA_T0)) s"
fi
exit $rc
