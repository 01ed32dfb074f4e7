#!/usr/bin/env bash
#
# build-tools.sh: build what make check-tools runs, into build/tools:
#
#   build/tools/pg         a copy of the installation under test (PG_CONFIG's),
#                          into which Citus is installed, so that the
#                          project's own installation stays as its build made it
#   build/tools/bin/pgbackrest
#                          pgBackRest, built with meson against the copy's libpq
#   Citus                  configured and built with plain PGXS
#                          (./configure PG_CONFIG=..., make, make install)
#                          with a PATH that holds no compiler cache
#
# Environment: TOP, PG_CONFIG, TARBALL_PGBACKREST, TARBALL_CITUS, TOOLS_DIR.

set -euo pipefail

: "${TOP:?}" "${PG_CONFIG:?}" "${TARBALL_PGBACKREST:?}" "${TARBALL_CITUS:?}" "${TOOLS_DIR:?}"
JOBS=${JOBS:-2}
[ "$JOBS" -le 2 ] || JOBS=2

for f in "$TARBALL_PGBACKREST" "$TARBALL_CITUS"; do
	[ -f "$f" ] || { echo "error: $f: no such tarball (name one with make check-tools PGBACKREST_TARBALL=... or CITUS_TARBALL=...)" >&2; exit 1; }
done
[ -x "$PG_CONFIG" ] || { echo "error: $PG_CONFIG is not executable (make first, or name PG_CONFIG=...)" >&2; exit 1; }

# The Debian packages: the project's (patches/tools/install-deps.sh) and
# pgBackRest's (meson, OpenSSL, libxml2, libyaml, bzip2).  Citus needs no
# more with --without-libcurl (its usage reports, which need libcurl's
# headers).
"$TOP/patches/tools/install-deps.sh" meson libssl-dev libxml2-dev libyaml-dev libbz2-dev

SRC=$TOOLS_DIR/src
PG=$TOOLS_DIR/pg
mkdir -p "$SRC" "$TOOLS_DIR/bin" "$TOOLS_DIR/obj"

# A fresh copy of the installation: PostgreSQL's installations are
# relocatable (pg_config and the server find their directories from where
# they are).
# Copied again when the installation changed since the last copy.
pgroot=$(cd "$("$PG_CONFIG" --bindir)/.." && pwd)
fresh=0
if [ ! -f "$PG/.copied-from" ] || [ "$(cat "$PG/.copied-from")" != "$pgroot" ] ||
	[ -n "$(find "$pgroot" -newer "$PG/.copied-from" -print -quit)" ]; then
	echo "--- copying the installation $pgroot to $PG"
	rm -rf "$PG"
	cp -a "$pgroot" "$PG"
	echo "$pgroot" >"$PG/.copied-from"
	fresh=1
fi
"$PG/bin/pg_config" --version

# unpack TARBALL: into $SRC, once per tarball; prints the directory
unpack()
{
	local tarball=$1 name
	name=$(tar tzf "$tarball" | head -1 | cut -d/ -f1)
	if [ ! -f "$SRC/$name/.unpacked" ] || [ "$tarball" -nt "$SRC/$name/.unpacked" ]; then
		rm -rf "${SRC:?}/$name"
		tar xzf "$tarball" -C "$SRC"
		touch "$SRC/$name/.unpacked"
	fi
	echo "$SRC/$name"
}

# pgBackRest: meson against the copy's libpq, with the copy's library
# directory as the run path.
t0=$(date +%s)
pgbr_src=$(unpack "$TARBALL_PGBACKREST")
pgbr_obj=$TOOLS_DIR/obj/pgbackrest
echo "--- building pgBackRest ($pgbr_src)"
if [ ! -f "$pgbr_obj/build.ninja" ] || [ "$pgbr_src/.unpacked" -nt "$pgbr_obj/build.ninja" ]; then
	rm -rf "$pgbr_obj"
	PKG_CONFIG_PATH="$PG/lib/pkgconfig" meson setup "$pgbr_obj" "$pgbr_src" \
		-Dc_link_args="-Wl,-rpath,$PG/lib -L$PG/lib" >"$TOOLS_DIR/obj/pgbackrest-setup.log" 2>&1 ||
		{ tail -30 "$TOOLS_DIR/obj/pgbackrest-setup.log"; exit 1; }
fi
ninja -C "$pgbr_obj" -j "$JOBS" >"$TOOLS_DIR/obj/pgbackrest-build.log" 2>&1 ||
	{ tail -30 "$TOOLS_DIR/obj/pgbackrest-build.log"; exit 1; }
cp "$pgbr_obj/src/pgbackrest" "$TOOLS_DIR/bin/pgbackrest"
"$TOOLS_DIR/bin/pgbackrest" version
echo "--- pgBackRest built in $(($(date +%s) - t0)) s; libpq: $(ldd "$TOOLS_DIR/bin/pgbackrest" | awk '/libpq/ {print $3}')"

case " ${CHECK_TOOLS:-citus} " in
*" citus "*) ;;
*) echo "--- Citus not built (CHECK_TOOLS=$CHECK_TOOLS)"; exit 0 ;;
esac

# Citus: plain PGXS, as a user builds it.  PATH without any compiler
# cache directory: the compiler is the one pg_config reports.
t0=$(date +%s)
citus_src=$(unpack "$TARBALL_CITUS")
NOCACHE_PATH=$(echo "$PATH" | tr : '\n' | grep -v ccache | paste -sd:)
pg_cc=$("$PG/bin/pg_config" --cc)
echo "--- building Citus ($citus_src) with plain PGXS; pg_config --cc: $pg_cc; PATH=$NOCACHE_PATH"
case "$pg_cc" in *ccache*) echo "error: pg_config --cc reports a compiler cache: $pg_cc" >&2; exit 1 ;; esac
citus_log=$TOOLS_DIR/obj/citus-build.log
(
	cd "$citus_src"
	export PATH=$NOCACHE_PATH
	unset CC CFLAGS CPPFLAGS LDFLAGS
	if [ ! -f config.status ] || [ "$fresh" = 1 ]; then
		make clean >/dev/null 2>&1 || true
		./configure PG_CONFIG="$PG/bin/pg_config" --without-libcurl
	fi
	make -j"$JOBS" PG_CONFIG="$PG/bin/pg_config"
	make install PG_CONFIG="$PG/bin/pg_config"
) >"$citus_log" 2>&1 || { tail -40 "$citus_log"; exit 1; }
# the compiles the log shows ran the compiler pg_config names, not a cache
ncc=$(grep -cE "^$pg_cc " "$citus_log" || true)
if grep -q ccache "$citus_log"; then
	echo "error: the Citus build went through a compiler cache" >&2
	exit 1
fi
[ -f "$("$PG/bin/pg_config" --pkglibdir)/citus.so" ] || { echo "error: citus.so was not installed" >&2; exit 1; }
echo "--- Citus built and installed in $(($(date +%s) - t0)) s ($ncc files compiled this time, by '$pg_cc', none through ccache)"
