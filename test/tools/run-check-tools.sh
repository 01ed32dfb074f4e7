#!/usr/bin/env bash
#
# run-check-tools.sh: make check-tools.  Builds pgBackRest and Citus from
# their tarballs (test/tools/build-tools.sh), then runs each tool's workflow
# against compressed tablespaces (test/tools/pgbackrest.sh,
# test/tools/citus.sh), with the servers running as the test user.
#
# Variables (make check-tools VAR=...):
#   PG_CONFIG            the installation under test (default: the project's,
#                        build/install/bin/pg_config, or build/18/install
#                        with PG=18)
#   PGBACKREST_TARBALL   default ../shared/vendor/pgbackrest-2.59.1.tar.gz
#   CITUS_TARBALL        default ../shared/vendor/citus-13.2.2.tar.gz
#   CHECK_TOOLS          which parts: "pgbackrest citus" (the default on 17;
#                        pgbackrest alone on 18, which Citus 13.2 refuses)
#   SCALE, CITUS_ROWS    rows per table of each workload
#   PORT_BASE            first TCP port (default 55430: pgBackRest uses
#                        PORT_BASE to PORT_BASE+3, Citus PORT_BASE+10 to +12)
#
# Everything goes to build/tools/<major>: the builds, a copy of the
# installation Citus is installed into, the clusters (work/), and the
# logs (logs/: one per part and summary.txt).

set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
export TOP
. "$TOP/test/tools/common.sh"

case "${PGSTRATA_PG:-17}" in
	17) default_install=$TOP/build/install ;;
	*) default_install=$TOP/build/$PGSTRATA_PG/install ;;
esac
PG_CONFIG=${PG_CONFIG:-$default_install/bin/pg_config}
VENDOR=$(cd "$TOP/.." && pwd)/shared/vendor
# (passed on as TARBALL_*: pgBackRest reads every PGBACKREST_* variable of
# its environment as an option, and warns about unknown ones)
TARBALL_PGBACKREST=${PGBACKREST_TARBALL:-$VENDOR/pgbackrest-2.59.1.tar.gz}
TARBALL_CITUS=${CITUS_TARBALL:-$VENDOR/citus-13.2.2.tar.gz}
unset PGBACKREST_TARBALL CITUS_TARBALL
[ -x "$PG_CONFIG" ] || { echo "error: $PG_CONFIG: no pg_config (run make first, or name PG_CONFIG=...)" >&2; exit 1; }
major=$("$PG_CONFIG" --version | sed 's/^PostgreSQL \([0-9]*\).*/\1/')
# Citus 13.2 supports PostgreSQL 15 to 17: on 18, pgBackRest only unless
# CHECK_TOOLS says otherwise
skipped=
if [ -z "${CHECK_TOOLS:-}" ]; then
	CHECK_TOOLS="pgbackrest citus"
	if [ "$major" -ge 18 ]; then
		CHECK_TOOLS=pgbackrest
		skipped="citus: skipped (Citus 13.2 builds against PostgreSQL 15 to 17 only; CHECK_TOOLS=citus and CITUS_TARBALL=... to try another release)"
	fi
fi
export CHECK_TOOLS
TOOLS_DIR=$TOP/build/tools/$major
LOGS=$TOOLS_DIR/logs
export PG_CONFIG TARBALL_PGBACKREST TARBALL_CITUS TOOLS_DIR
mkdir -p "$LOGS"

if [ "$(id -u)" = 0 ]; then
	# the test user, as make check makes it (test/lib.sh)
	id "$TEST_USER" >/dev/null 2>&1 ||
		useradd --system --user-group --home-dir /nonexistent --shell /usr/sbin/nologin "$TEST_USER"
fi

t_start=$(now_s)
summary=$LOGS/summary.txt
{
	echo "make check-tools: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "machine: $(nproc) cores, $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -r)"
	echo "PG_CONFIG: $PG_CONFIG ($("$PG_CONFIG" --version))"
	echo "pgBackRest: $TARBALL_PGBACKREST"
	echo "Citus: $TARBALL_CITUS"
} >"$summary"

status=0
t0=$(now_s)
if "$TOP/test/tools/build-tools.sh" >"$LOGS/build.log" 2>&1; then
	echo "build: ok ($(($(now_s) - t0)) s)" >>"$summary"
else
	echo "build: FAILED ($(($(now_s) - t0)) s), see $LOGS/build.log" >>"$summary"
	tail -20 "$LOGS/build.log"
	cat "$summary"
	exit 1
fi
grep -E '^--- (pgBackRest|Citus) built' "$LOGS/build.log" >>"$summary"

# The servers run as the test user, who must reach the copy and write the
# work directory.
export PG_BIN=$TOOLS_DIR/pg/bin PGBR_BIN=$TOOLS_DIR/bin/pgbackrest
mkdir -p "$TOOLS_DIR/work"
[ "$(id -u)" = 0 ] && chown "$TEST_USER:" "$TOOLS_DIR/work"

for part in $CHECK_TOOLS; do
	t0=$(now_s)
	if "$TOP/test/tools/$part.sh" >"$LOGS/$part.log" 2>&1; then
		echo "$part: ok ($(($(now_s) - t0)) s)" >>"$summary"
	else
		echo "$part: FAILED ($(($(now_s) - t0)) s), see $LOGS/$part.log" >>"$summary"
		grep '^FAIL' "$LOGS/$part.log" >>"$summary"
		status=1
	fi
	grep -E '^(RESULT|TIME|SIZE|RATIO-TOTAL|LOAD|PLACEMENT|BACKUP)' "$LOGS/$part.log" | sed 's/^/  /' >>"$summary"
done
[ -z "$skipped" ] || echo "$skipped" >>"$summary"
echo "check-tools: $([ $status = 0 ] && echo passed || echo FAILED) in $(($(now_s) - t_start)) s" >>"$summary"
cat "$summary"
exit $status
