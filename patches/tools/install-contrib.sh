#!/usr/bin/env bash
#
# install-contrib.sh: build the project's contrib modules (contrib/*/) with
# PGXS against the installed server and install them, out of tree, in
# build/contrib<flavour>/<module>.  They need no change to PostgreSQL's contrib lists.

set -euo pipefail
. "$(dirname "$0")/common.sh"

PG_CONFIG=${PG_CONFIG:-$PG_INSTALL/bin/pg_config}
MAKE=${MAKE:-make}

for makefile in "$TOP"/contrib/*/Makefile; do
	[ -f "$makefile" ] || continue
	module=$(basename "$(dirname "$makefile")")
	mkdir -p "$BUILD_DIR/contrib$FLAVOUR_SUFFIX/$module"
	env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS \
		$MAKE -s -C "$BUILD_DIR/contrib$FLAVOUR_SUFFIX/$module" -f "$makefile" \
		VPATH="$TOP/contrib/$module" USE_PGXS=1 PG_CONFIG="$PG_CONFIG" \
		all install >/dev/null
done
