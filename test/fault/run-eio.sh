#!/usr/bin/env bash
#
# run-eio.sh: the I/O-error tests of test/fault (make check-eio).
#
#   run-eio.sh [TEST...]
#
# Runs the TAP tests of test/fault (or the ones named, as paths relative
# to test/) as the test user, against the installation, with the faultfs
# service (faultfs-service.sh) started by root for the length of the run.
# Must run as root: faultfs is a FUSE file system, and /dev/fuse is root's.
# Environment:
#
#   PG_CONFIG    the installation to test (default build/install)
#   EIO_WORK     the work directory (default build/fault): the service in
#                EIO_WORK/faultfs, prove's in EIO_WORK/tap
#
# make check runs the same tests (as root) with the rest of the TAP suite.
#
# Portions Copyright (c) 2026, pgstrata developers
#
# test/fault/run-eio.sh

set -uo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
MAKE=${MAKE:-make}
. "$TOP/test/lib.sh"

PG_CONFIG=${PG_CONFIG:-$PG_INSTALL/bin/pg_config}
WORK=${EIO_WORK:-$BUILD_ROOT/fault}

if [ "$(id -u)" != 0 ]; then
	echo "error: run-eio.sh needs root, to mount faultfs for the test user (/dev/fuse is root's)" >&2
	exit 1
fi
[ -x "$PG_CONFIG" ] || { echo "error: no installation at $PG_CONFIG (make first)" >&2; exit 1; }

tests=${*:-fault/*.pl}
svc=$WORK/faultfs
mkdir -p "$WORK"
ensure_test_user || exit 1
trap '"$TOP/test/fault/faultfs-service.sh" stop "$svc"' EXIT
"$TOP/test/fault/faultfs-service.sh" start "$svc" || exit 1
rm -rf "$WORK/tap"
as_test_user "$WORK/tap" env PGSTRATA_FAULTFS="$svc" \
	$MAKE -s -C "$WORK/tap" -f "$TOP/test/Makefile" VPATH="$TOP/test" \
	PG_CONFIG="$PG_CONFIG" prove-installcheck \
	PROVE_TESTS="$tests" PROVE_FLAGS=-v
