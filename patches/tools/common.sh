# common.sh: helpers shared by the scripts in patches/tools (sourced, not run).
#
# Sets TOP (the repository), reads patches/UPSTREAM (or the file named by
# PGSTRATA_UPSTREAM, which the tests use) into PG_* variables and defines the
# locations every script agrees on.

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# The major release to build, PGSTRATA_PG (make PG=...): 17, the default,
# has its series in patches/ and builds in build/; 18 has a series of its
# own in patches/18/ and builds in build/18/, so that both coexist.  The
# new files of src/ and contrib/ are shared.  PATCH_DIR_REL is the series'
# directory relative to TOP.
PGSTRATA_PG=${PGSTRATA_PG:-17}
case "$PGSTRATA_PG" in
	17)
		PATCH_DIR_REL=patches
		OTHER_PATCH_DIR_REL=patches/18
		DEFAULT_BUILD_DIR=$TOP/build
		;;
	18)
		PATCH_DIR_REL=patches/18
		OTHER_PATCH_DIR_REL=patches
		DEFAULT_BUILD_DIR=$TOP/build/18
		;;
	*)
		echo "error: PGSTRATA_PG=$PGSTRATA_PG: the series exists for PostgreSQL 17 and 18 only" >&2
		exit 1
		;;
esac
PATCH_DIR=$TOP/$PATCH_DIR_REL
# The other series: a change has one number in both (patch_name).
OTHER_PATCH_DIR=$TOP/$OTHER_PATCH_DIR_REL

# The pinned release: "NAME = value" lines, shared with the Makefile.
while IFS='=' read -r key value; do
	key=$(echo "$key" | tr -d '[:space:]')
	case "$key" in
		PG_*) printf -v "$key" '%s' "$(echo "$value" | sed 's/^ *//; s/ *$//')" ;;
	esac
done < <(grep -v '^#' "${PGSTRATA_UPSTREAM:-$PATCH_DIR/UPSTREAM}")

BUILD_DIR=${BUILD_DIR:-$DEFAULT_BUILD_DIR}
TREE=${TREE:-$BUILD_DIR/postgresql}		# patched source, a git work tree
APPLY=$BUILD_DIR/.apply					# scratch work tree of the same repository
# The build flavour: empty for the release build, "cassert" for the second,
# assert-enabled build that `make check` runs the suites in too.  Each flavour
# has its own build directory, installation and test logs.
FLAVOUR_SUFFIX=${PGSTRATA_FLAVOUR:+-$PGSTRATA_FLAVOUR}
PG_OBJ=$BUILD_DIR/obj$FLAVOUR_SUFFIX
PG_INSTALL=$BUILD_DIR/install$FLAVOUR_SUFFIX
# The tarball cache: per user, or system-wide for root, whose home other
# users cannot read (the tests run as an unprivileged user and read it).
if [ "$(id -u)" = 0 ]; then
	CACHE_DIR=${PGSTRATA_CACHE:-/var/cache/pgstrata}
else
	CACHE_DIR=${PGSTRATA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pgstrata}
fi

# Fixed identity and dates make the commits of the tree reproducible, so the
# same inputs always give the same commit ids.
export GIT_AUTHOR_NAME="pgstrata build"
export GIT_AUTHOR_EMAIL="build@pgstrata.invalid"
export GIT_COMMITTER_NAME="pgstrata build"
export GIT_COMMITTER_EMAIL="build@pgstrata.invalid"
FIXED_DATE="2000-01-01T00:00:00Z"

# The author of every patch of both series: the project, not a person or a
# tool (tree.sh check refuses any other).
PATCH_AUTHOR="pgstrata developers <hackers@pgstrata.invalid>"

# die MESSAGE: print one line on stderr and stop.
die()
{
	echo "error: $*" >&2
	exit 1
}

# note MESSAGE: progress on stderr, so stdout stays machine-readable.
note()
{
	echo "--- $*" >&2
}

# tree_git ARGS: git in the patched tree, whatever the caller's directory.
tree_git()
{
	git -C "$TREE" "$@"
}

# series_patches: the patch files of patches/series, in order, one per line.
series_patches()
{
	grep -v '^\s*\(#\|$\)' "$PATCH_DIR/series" || true
}

# patch_subject FILE: the subject of a format-patch file, unfolded, without
# its "[PATCH]" tag.
patch_subject()
{
	awk '/^Subject: / {
			s = $0; sub(/^Subject: (\[PATCH[^]]*\] )?/, "", s)
			while ((getline line) > 0 && line ~ /^[ \t]/)
				s = s line
			print s; exit
		}' "$1"
}

# patch_number FILE: the number a patch file's name begins with, as a number.
patch_number()
{
	local n
	n=$(basename "$1" | sed -n 's/^\([0-9]\{4\}\)-.*/\1/p')
	[ -n "$n" ] && echo $((10#$n))
}

# new_files: the project's new core files (src/, contrib/), one per line.
new_files()
{
	local d
	for d in src contrib; do
		if [ -d "$TOP/$d" ]; then
			(cd "$TOP" && find "$d" -type f)
		fi
	done | LC_ALL=C sort
}

# input_files: every file the patched tree is made from, one per line.
input_files()
{
	(
		cd "$TOP"
		echo "$PATCH_DIR_REL/UPSTREAM"
		echo "$PATCH_DIR_REL/series"
		series_patches | sed "s|^|$PATCH_DIR_REL/|"
		new_files
	)
}

# inputs_digest: one hash over the names and contents of all input files.
inputs_digest()
{
	(
		cd "$TOP"
		input_files | while read -r f; do
			printf '%s\n' "$f"
			sha256sum <"$f"
		done
	) | sha256sum | cut -d' ' -f1
}
