#!/usr/bin/env bash
#
# install-deps.sh: make sure the Debian packages the build and the tests need
# are installed.  As root, missing ones are installed with apt-get; otherwise
# the exact command is printed and the script fails.
#
#   install-deps.sh [EXTRA-PACKAGE ...]

set -euo pipefail

# libxml2-utils and docbook-xml validate the SGML documentation in make check;
# xsltproc and docbook-xsl build it (make -C build/obj/doc/src/sgml html).
# xfsprogs makes the file system with reflinks that make check, as root,
# mounts for the test of file_copy_method = clone (test/lib.sh).
PACKAGES="build-essential bison flex pkg-config ccache git curl ca-certificates bzip2
	libreadline-dev zlib1g-dev liblz4-dev libzstd-dev libicu-dev
	libipc-run-perl libxml2-utils docbook-xml xsltproc docbook-xsl xfsprogs $*"

missing=""
for p in $PACKAGES; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
[ -n "$missing" ] || exit 0

if [ "$(id -u)" != 0 ]; then
	echo "error: missing Debian packages; install them with:" >&2
	echo "  sudo apt-get install -y --no-install-recommends$missing" >&2
	exit 1
fi

echo "--- installing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# An old package list may not know the packages yet: update it once on a miss.
apt-get install -y -q --no-install-recommends $missing >&2 ||
	{ apt-get update -q >&2 && apt-get install -y -q --no-install-recommends $missing >&2; }
