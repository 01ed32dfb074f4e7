#!/usr/bin/env bash
#
# fetch-upstream.sh: find the pinned PostgreSQL tarball, verify it, print its path.
#
# Sources, in order:
#   1. the tarball the user names: PG_TARBALL_FILE=/path/to/postgresql-17.11.tar.bz2
#   2. the local cache ($PGSTRATA_CACHE, default ~/.cache/pgstrata)
#   3. the official download (PG_URL in patches/UPSTREAM), when it can be reached
#   4. Debian's source package (PG_DEBIAN_SOURCE from suite PG_DEBIAN_SUITE),
#      through a deb-src entry that reuses the URIs of the system's Debian source
#
# Whatever the source, the SHA-256 must equal PG_SHA256; a mismatch stops with
# one line naming the file, the expected and the found digest.  A verified
# download is stored in the cache so later builds need no network.

set -euo pipefail
. "$(dirname "$0")/common.sh"

# verify FILE: stop unless FILE has the pinned SHA-256.
verify()
{
	local file=$1 found
	found=$(sha256sum "$file" | cut -d' ' -f1)
	if [ "$found" != "$PG_SHA256" ]; then
		die "$file is not $PG_TARBALL: SHA-256 expected $PG_SHA256, found $found"
	fi
}

# debian_uris: the URIs of the configured Debian archive (not security, not
# third-party), from deb822 .sources files or one-line sources.list entries.
debian_uris()
{
	{
		cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			sed -n 's/^URIs:[[:space:]]*//p' | tr ' ' '\n'
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p'
	} | grep -E '/debian/?$' | sort -u
}

# from_debian DESTDIR: download Debian's orig tarball into DESTDIR.
from_debian()
{
	local dest=$1 list=/etc/apt/sources.list.d/pgstrata-$PG_DEBIAN_SUITE-src.sources uris

	command -v apt-get >/dev/null || return 1
	if [ ! -f "$list" ]; then
		uris=$(debian_uris | paste -sd' ')
		[ -n "$uris" ] || { note "no Debian apt source configured"; return 1; }
		if [ "$(id -u)" != 0 ]; then
			note "to fetch the source from Debian, run as root:"
			note "  printf 'Types: deb-src\\nURIs: $uris\\nSuites: $PG_DEBIAN_SUITE\\nComponents: main\\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\\n' > $list && apt-get update"
			return 1
		fi
		note "adding deb-src entry for $PG_DEBIAN_SUITE ($list)"
		printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			"$uris" "$PG_DEBIAN_SUITE" >"$list"
		apt-get update >&2 || return 1
	fi
	(cd "$dest" && apt-get source --download-only "$PG_DEBIAN_SOURCE" >&2) || return 1
	[ -f "$dest/$PG_DEBIAN_ORIG" ] || { note "Debian's $PG_DEBIAN_SOURCE has no $PG_DEBIAN_ORIG"; return 1; }
	mv "$dest/$PG_DEBIAN_ORIG" "$dest/$PG_TARBALL"
}

# 1. A tarball the user names is used as it is, never replaced.
if [ -n "${PG_TARBALL_FILE:-}" ]; then
	[ -f "$PG_TARBALL_FILE" ] || die "PG_TARBALL_FILE=$PG_TARBALL_FILE: no such file"
	verify "$PG_TARBALL_FILE"
	echo "$PG_TARBALL_FILE"
	exit 0
fi

# 2. The cache.
cached=$CACHE_DIR/$PG_TARBALL
if [ -f "$cached" ]; then
	verify "$cached"
	echo "$cached"
	exit 0
fi

mkdir -p "$CACHE_DIR"
tmp=$(mktemp -d "$CACHE_DIR/download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# 3. The official download; 4. Debian.
if [ "${PGSTRATA_OFFLINE:-}" != 1 ] && command -v curl >/dev/null &&
	curl -fsSL --connect-timeout 10 --max-time 600 -o "$tmp/$PG_TARBALL" "$PG_URL" 2>/dev/null; then
	note "downloaded $PG_URL"
elif from_debian "$tmp"; then
	note "downloaded Debian's $PG_DEBIAN_SOURCE source package ($PG_DEBIAN_SUITE)"
else
	die "cannot obtain $PG_TARBALL: name it with PG_TARBALL_FILE=/path or place it in $CACHE_DIR"
fi

verify "$tmp/$PG_TARBALL"
mv "$tmp/$PG_TARBALL" "$cached"
echo "$cached"
