#!/usr/bin/env bash
#
# install-contrib.sh: build the project's contrib modules (contrib/*/) and
# test modules (test/modules/*/) with PGXS against the installed server and
# install them, out of tree, in build/contrib<flavour>/<module>.  They need
# no change to PostgreSQL's contrib lists.

set -euo pipefail
. "$(dirname "$0")/common.sh"

PG_CONFIG=${PG_CONFIG:-$PG_INSTALL/bin/pg_config}
MAKE=${MAKE:-make}

# test/modules/: modules for the project's tests only (like upstream's
# src/test/modules), installed alongside injection_points.
for makefile in "$TOP"/contrib/*/Makefile "$TOP"/test/modules/*/Makefile; do
	[ -f "$makefile" ] || continue
	srcdir=$(dirname "$makefile")
	module=$(basename "$srcdir")
	mkdir -p "$BUILD_DIR/contrib$FLAVOUR_SUFFIX/$module"
	env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS \
		$MAKE -s -C "$BUILD_DIR/contrib$FLAVOUR_SUFFIX/$module" -f "$makefile" \
		VPATH="$srcdir" USE_PGXS=1 PG_CONFIG="$PG_CONFIG" \
		all install >/dev/null
done
