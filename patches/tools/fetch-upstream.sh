#!/usr/bin/env bash
#
# fetch-upstream.sh: find the pinned PostgreSQL tarball, verify it, print its path.
#
# Places, in order:
#   1. the tarball the user names: PG_TARBALL_FILE=/path/to/postgresql-17.11.tar.bz2
#   2. the local cache ($PGSTRATA_CACHE; /var/cache/pgstrata for root,
#      ~/.cache/pgstrata otherwise)
#   3. Debian's pool: the orig tarball PG_DEBIAN_ORIG by its pool path, under
#      each URI of the system's configured Debian archive.  The pool keeps a
#      version's files after the suite's index has moved on to a newer one.
#   4. apt-get source of the exact pinned version (PG_DEBIAN_SOURCE from suite
#      PG_DEBIAN_SUITE), through a deb-src entry that reuses the same URIs;
#      works while the index still names that version
#   5. the official download (PG_URL)
#
# Whatever the place, the SHA-256 must equal PG_SHA256; a mismatch stops with
# one line naming the file, the expected and the found digest.  When no place
# has the tarball, one line names every place tried.  A verified download is
# stored in the cache so later builds need no network.
#
# For the tests: PGSTRATA_DEBIAN_URIS replaces the URIs read from the apt
# sources, PGSTRATA_APT_LIST the deb-src file this script may add, and
# PGSTRATA_UPSTREAM the release file (see common.sh).  PGSTRATA_OFFLINE=1
# skips every network place.

set -euo pipefail
. "$(dirname "$0")/common.sh"

CURL_OPTS=(-fsSL --connect-timeout 10 --max-time 900)

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
	if [ -n "${PGSTRATA_DEBIAN_URIS:-}" ]; then
		echo "$PGSTRATA_DEBIAN_URIS" | tr ' ' '\n' | grep .
		return 0
	fi
	{
		cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			sed -n 's/^URIs:[[:space:]]*//p' | tr ' ' '\n'
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			sed -n 's/^deb\(-src\)\?[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\3/p'
	} | grep -E '/debian/?$' | sed 's|/*$||' | sort -u
}

# pool_dir SOURCE: the pool directory of a source package, as Debian lays it
# out (lib* packages under their first four letters, others under one).
pool_dir()
{
	case "$1" in
		lib?*) echo "pool/main/${1:0:4}/$1" ;;
		*) echo "pool/main/${1:0:1}/$1" ;;
	esac
}

# from_pool DESTDIR: the orig tarball by its pool path, from the first URI
# that serves it.
from_pool()
{
	local dest=$1 uri url
	command -v curl >/dev/null || return 1
	for uri in $(debian_uris); do
		url=$uri/$(pool_dir "$PG_DEBIAN_SOURCE")/$PG_DEBIAN_ORIG
		tried+=("$url")
		if curl "${CURL_OPTS[@]}" -o "$dest/$PG_TARBALL" "$url" 2>/dev/null; then
			note "downloaded $url"
			return 0
		fi
	done
	return 1
}

# from_apt_source DESTDIR: apt-get source of the exact pinned upstream version,
# whatever its Debian revision.
from_apt_source()
{
	local dest=$1 uris version
	local list=${PGSTRATA_APT_LIST:-/etc/apt/sources.list.d/pgstrata-$PG_DEBIAN_SUITE-src.sources}

	tried+=("apt-get source $PG_DEBIAN_SOURCE=$PG_VERSION-* ($PG_DEBIAN_SUITE)")
	command -v apt-get >/dev/null || return 1
	if [ ! -f "$list" ]; then
		uris=$(debian_uris | paste -sd' ')
		[ -n "$uris" ] || { note "no Debian apt source configured"; return 1; }
		if [ "$(id -u)" != 0 ]; then
			note "to fetch the source with apt-get, run as root:"
			note "  printf 'Types: deb-src\\nURIs: $uris\\nSuites: $PG_DEBIAN_SUITE\\nComponents: main\\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\\n' > $list && apt-get update"
			return 1
		fi
		note "adding deb-src entry for $PG_DEBIAN_SUITE ($list)"
		printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			"$uris" "$PG_DEBIAN_SUITE" >"$list"
		apt-get update -q >&2 || return 1
	fi
	# The index may name several revisions, or only a newer release: take a
	# revision of exactly PG_VERSION, and never whatever is newest.
	version=$(apt-cache showsrc "$PG_DEBIAN_SOURCE" 2>/dev/null |
		sed -n 's/^Version:[[:space:]]*//p' |
		grep -E "^([0-9]+:)?${PG_VERSION//./\\.}-" | sort -V | tail -n 1 || true)
	if [ -z "$version" ]; then
		note "the $PG_DEBIAN_SUITE index names no $PG_DEBIAN_SOURCE $PG_VERSION"
		return 1
	fi
	(cd "$dest" && apt-get source -q --download-only "$PG_DEBIAN_SOURCE=$version" >&2) || return 1
	[ -f "$dest/$PG_DEBIAN_ORIG" ] || { note "$PG_DEBIAN_SOURCE $version has no $PG_DEBIAN_ORIG"; return 1; }
	mv "$dest/$PG_DEBIAN_ORIG" "$dest/$PG_TARBALL"
	note "downloaded $PG_DEBIAN_SOURCE $version with apt-get source"
}

# from_official DESTDIR: the release's own download.
from_official()
{
	local dest=$1
	tried+=("$PG_URL")
	command -v curl >/dev/null || return 1
	curl "${CURL_OPTS[@]}" -o "$dest/$PG_TARBALL" "$PG_URL" 2>/dev/null || return 1
	note "downloaded $PG_URL"
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
tried=("$cached")
if [ -f "$cached" ]; then
	verify "$cached"
	echo "$cached"
	exit 0
fi

mkdir -p "$CACHE_DIR"
tmp=$(mktemp -d "$CACHE_DIR/download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# 3. Debian's pool; 4. apt-get source; 5. the official download.  A place
# that gives a file with another digest stops the search: that is never a
# mirror's hiccup to paper over.
if [ "${PGSTRATA_OFFLINE:-}" = 1 ] ||
	! { from_pool "$tmp" || from_apt_source "$tmp" || from_official "$tmp"; }; then
	[ "${PGSTRATA_OFFLINE:-}" != 1 ] || tried+=("no network place (PGSTRATA_OFFLINE=1)")
	die "cannot obtain $PG_TARBALL; tried: $(printf '%s; ' "${tried[@]}" | sed 's/; $//'); name a copy with PG_TARBALL_FILE=/path"
fi

verify "$tmp/$PG_TARBALL"
mv "$tmp/$PG_TARBALL" "$cached"
echo "$cached"
