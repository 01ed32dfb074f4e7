#!/usr/bin/env bash
#
# build-lazyfs.sh: build LazyFS (github.com/dsrhaslab/lazyfs, MIT licence)
# from the vendored tarball into build/lazyfs, once.
#
#   build-lazyfs.sh [BUILD_DIR]      (default: build/lazyfs of the checkout)
#
# LazyFS is a FUSE file system that keeps written data in a cache of its
# own until it is fsynced, and drops what was not fsynced when told to
# (lazyfs::clear-cache): the OS-crash harness of test/crash/ puts a data
# directory on it.  Its library, libpcache, fetches toml11 v3.7.1 and
# spdlog v1.10.0 at configure time; Debian 12 packages exactly those
# versions (libtoml11-dev, libspdlog-dev), so the build is pointed at them
# and never touches the network.  Run as root, missing Debian packages are
# installed (patches/tools/install-deps.sh); otherwise it prints the
# apt-get line and fails.  Prints the path of the lazyfs binary.
#
# Portions Copyright (c) 2026, pgstrata developers
#
# test/crash/build-lazyfs.sh

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
TARBALL=${LAZYFS_TARBALL:-$TOP/../shared/vendor/lazyfs-a47a5ba.tar.gz}
DIR=${1:-$TOP/build/lazyfs}
BIN=$DIR/lazyfs/build/lazyfs
# Bumped whenever this script changes what it builds, so that a build made
# by an older version of it is made again.
STAMP_VERSION=1

# Two test runs (17's and 18's) may start at the same time: one builds.
mkdir -p "$(dirname "$DIR")"
exec 9>"$DIR.lock"
flock 9

if [ -x "$BIN" ] && [ "$(cat "$DIR/.built" 2>/dev/null)" = "$STAMP_VERSION" ]; then
	echo "$BIN"
	exit 0
fi

# Exit status 3: no tarball, which run-checks.sh reports as a skip.
if [ ! -f "$TARBALL" ]; then
	echo "error: LazyFS tarball not found at $TARBALL (set LAZYFS_TARBALL)" >&2
	exit 3
fi

# fuse3 brings fusermount3, which unmounts; the rest is the build.
"$TOP/patches/tools/install-deps.sh" cmake g++ libfuse3-dev fuse3 \
	libtoml11-dev libspdlog-dev >&2


rm -rf "$DIR"
mkdir -p "$DIR"
tar -xzf "$TARBALL" -C "$DIR" --strip-components=1

# libpcache: Debian's toml11 and spdlog instead of FetchContent.  Debian's
# spdlog is built against the system's fmt (SPDLOG_FMT_EXTERNAL), which
# its CMake target spdlog::spdlog carries along.
pc=$DIR/libs/libpcache/CMakeLists.txt
perl -0pi -e '
	s/include\(FetchContent\).*?FetchContent_MakeAvailable\(spdlog\)\s*set_target_properties\(spdlog[^\n]*\n/find_package(toml11 REQUIRED)\nfind_package(spdlog REQUIRED)\n/s
		or die "libpcache: FetchContent block not found\n";
	s/target_link_libraries\(pcache toml11::toml11 spdlog\)/target_link_libraries(pcache toml11::toml11 spdlog::spdlog)/
		or die "libpcache: link line not found\n";
' "$pc"
# lazyfs: the same spdlog, and libpcache by path.
lc=$DIR/lazyfs/CMakeLists.txt
perl -0pi -e '
	s/find_package\(Threads REQUIRED\)/find_package(Threads REQUIRED)\nfind_package(spdlog REQUIRED)/
		or die "lazyfs: find_package(Threads) not found\n";
	s/target_link_libraries\(\$\{CMAKE_PROJECT_NAME\} fuse3 Threads::Threads libpcache.so\)/target_link_libraries(\${CMAKE_PROJECT_NAME} fuse3 Threads::Threads \${CMAKE_CURRENT_SOURCE_DIR}\/..\/libs\/libpcache\/build\/libpcache.so spdlog::spdlog)/
		or die "lazyfs: link line not found\n";
' "$lc"

# One job: the machine is shared, and the build is small.
(cd "$DIR/libs/libpcache" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >&2 &&
	cmake --build build -j 1 >&2)
(cd "$DIR/lazyfs" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
	-DLAZYFS_BUILD_TESTS=OFF >&2 && cmake --build build -j 1 >&2)

[ -x "$BIN" ] || { echo "error: LazyFS build produced no $BIN" >&2; exit 1; }
# Readable by the test user, who runs it.
chmod -R a+rX "$DIR"
echo "$STAMP_VERSION" >"$DIR/.built"
echo "$BIN"
