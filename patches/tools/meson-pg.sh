#!/usr/bin/env bash
#
# meson-pg.sh: the meson route to the same result as `make install`:
# prepare build/postgresql (tree.sh update), configure it with PostgreSQL's
# own meson build in build/meson with the features the Makefile enables,
# build, and install into build/install.  Called by the top-level meson.build.

set -euo pipefail
. "$(dirname "$0")/common.sh"

# 18 has io_method = io_uring (compressed forks read through it too)
uring=()
if [ "${PGSTRATA_PG:-17}" = 18 ]; then
	uring=(-Dliburing=enabled)
	"$TOP/patches/tools/install-deps.sh" meson ninja-build liburing-dev
else
	"$TOP/patches/tools/install-deps.sh" meson ninja-build
fi
"$TOP/patches/tools/tree.sh" update

MESON_BUILD=$BUILD_DIR/meson
if [ ! -f "$MESON_BUILD/build.ninja" ]; then
	meson setup "$MESON_BUILD" "$TREE" --prefix="$BUILD_DIR/install" \
		--buildtype=debugoptimized -Dlz4=enabled -Dzstd=enabled -Dicu=enabled \
		-Dtap_tests=enabled -Dinjection_points=true "${uring[@]}" >&2
fi
ninja -C "$MESON_BUILD" >&2
# install_test_files puts the test modules (injection_points) in place too.
meson install -C "$MESON_BUILD" --quiet >&2
ninja -C "$MESON_BUILD" install-test-files >&2
"$TOP/patches/tools/install-contrib.sh"
[ -z "${1:-}" ] || touch "$1"
