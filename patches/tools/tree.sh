#!/usr/bin/env bash
#
# tree.sh: keep build/postgresql, the patched source tree, in step with
# patches/ and src/ (and contrib/).
#
#   tree.sh update   make or update the tree from the inputs (what `make` runs)
#   tree.sh refresh  write the tree's commits back into patches/, src/, contrib/
#   tree.sh check    fail unless patches/ + src/ + contrib/ reproduce the tree
#   tree.sh reset    discard the tree's own edits and commits, re-apply inputs
#   tree.sh move VERSION [SHA256]
#                    move the series to another minor release of the same
#                    major: rebase the tree's commits onto that release and
#                    write them back (SHA256 defaults to the "served" line of
#                    patches/UPSTREAM for VERSION)
#
# The tree is a git repository with one commit for the pristine release
# (tag "upstream"), one adding the project's new files (src/ and contrib/ of
# this repository, copied to the same paths), then one commit per patch of
# patches/series (patches/18/series for PGSTRATA_PG=18), applied with
# `git am`.  Dates and committer are fixed, so the
# same inputs always give the same commit ids.
#
# Updates are computed in a scratch work tree of the same repository
# (build/.apply) and then checked out in the tree, so only files whose content
# changed get a new mtime and `make` rebuilds only what depends on them.

set -euo pipefail
. "$(dirname "$0")/common.sh"

STATE_DIGEST=$BUILD_DIR/tree.digest
STATE_COMMIT=$BUILD_DIR/tree.commit

# commit_all MESSAGE: commit everything in the current directory, reproducibly.
commit_all()
{
	git add -A -f
	GIT_AUTHOR_DATE=$FIXED_DATE GIT_COMMITTER_DATE=$FIXED_DATE \
		git commit -q --allow-empty --no-verify -m "$1"
}

# create_tree: unpack the verified tarball into a new repository at $TREE.
create_tree()
{
	local tarball
	tarball=$("$TOP/patches/tools/fetch-upstream.sh")
	note "unpacking $(basename "$tarball") into $TREE"
	rm -rf "$TREE" "$APPLY"
	mkdir -p "$TREE"
	tar xjf "$tarball" --strip-components=1 -C "$TREE"
	(
		cd "$TREE"
		git init -q
		git config core.autocrlf false
		git config gc.auto 0
		commit_all "PostgreSQL $PG_VERSION, as released ($PG_TARBALL)"
		git tag -f upstream >/dev/null
	)
}

# produce: build the commit the inputs describe in the scratch work tree,
# print its id.
produce()
{
	local f p

	if [ ! -e "$APPLY/.git" ]; then
		rm -rf "$APPLY"
		tree_git worktree prune
		tree_git worktree add -q --detach "$APPLY" upstream
	fi
	cd "$APPLY"
	git am --abort >/dev/null 2>&1 || true
	git reset -q --hard upstream
	git clean -q -fdx

	# New files only: a file of src/ that upstream already has would silently
	# replace it, and the change would be invisible in the patch series.
	new_files | while read -r f; do
		[ ! -e "$f" ] || die "$f exists upstream: change it with a patch, not with a copy"
	done
	new_files | (cd "$TOP" && tar cf - -T -) | tar xf -
	commit_all "Add the new source files of pgstrata (src/ and contrib/)"

	for p in $(series_patches); do
		[ -f "$PATCH_DIR/$p" ] || die "$PATCH_DIR_REL/series names $p, which does not exist"
		if ! git am -q --committer-date-is-author-date "$PATCH_DIR/$p" >&2; then
			git am --abort >/dev/null 2>&1 || true
			die "$PATCH_DIR_REL/$p does not apply to PostgreSQL $PG_VERSION"
		fi
	done
	git rev-parse HEAD
}

# worktree_tree: the tree id of the work tree as it is, uncommitted edits included.
worktree_tree()
{
	local index
	index=$(mktemp)
	rm -f "$index"
	(
		cd "$TREE"
		export GIT_INDEX_FILE=$index
		git read-tree HEAD
		git add -A
		git write-tree
	)
	rm -f "$index"
}

# tree_is_pristine: true when the tree holds exactly the commit made last time.
tree_is_pristine()
{
	[ -f "$STATE_COMMIT" ] &&
		[ "$(tree_git rev-parse HEAD)" = "$(cat "$STATE_COMMIT")" ] &&
		[ -z "$(tree_git status --porcelain)" ]
}

# record COMMIT: remember what the tree was made from.
record()
{
	echo "$1" >"$STATE_COMMIT"
	inputs_digest >"$STATE_DIGEST"
}

cmd_update()
{
	local digest target
	digest=$(inputs_digest)

	if [ ! -d "$TREE/.git" ]; then
		create_tree
	elif [ -f "$STATE_DIGEST" ] && [ "$(cat "$STATE_DIGEST")" = "$digest" ]; then
		exit 0					# inputs unchanged: build the tree as it is
	elif ! tree_is_pristine; then
		die "patches/ or src/ changed, and $TREE has edits or commits of its own: export them with 'make refresh' or drop them with 'make tree-reset'"
	fi

	note "applying $PATCH_DIR_REL/series"
	target=$(produce)
	if [ "$(tree_git rev-parse HEAD)" != "$target" ]; then
		tree_git checkout -q --detach "$target"
	fi
	record "$target"
	note "$TREE is at $(tree_git describe --always --tags) ($(series_patches | wc -l) patches)"
}

# patch_names DIR: for each patch format-patch wrote into DIR (in order),
# "generated=name": the name it keeps.  A change keeps its number for
# life, and has the same number in both series: a patch whose subject a
# file of this series has (or else, of the other series) takes that file's
# number; a new one takes the next number unused in both series.  Gaps in
# a series are the changes only the other one has.  The rest of the name
# is format-patch's, made from the subject.
patch_names()
{
	local dir=$1 f g subj n max=0 used=" " name
	declare -A by_subject=()

	for f in "$OTHER_PATCH_DIR"/*.patch "$PATCH_DIR"/*.patch; do
		[ -f "$f" ] || continue
		n=$(patch_number "$f")
		[ -n "$n" ] || continue
		by_subject[$(patch_subject "$f")]=$n
		[ "$n" -le "$max" ] || max=$n
	done
	for g in "$dir"/*.patch; do
		[ -f "$g" ] || continue
		subj=$(patch_subject "$g")
		n=${by_subject[$subj]:-}
		case "$used" in *" $n "*) n= ;; esac
		if [ -z "$n" ]; then
			max=$((max + 1))
			n=$max
		fi
		used="$used$n "
		name=$(printf '%04d-%s' "$n" "$(basename "$g" | sed 's/^[0-9]*-//')")
		echo "$(basename "$g")=$name"
	done
}

# check_series: the rules the names and authors of a series keep: every
# patch by PATCH_AUTHOR, numbers rising in series order, and a subject
# that both series have under one number.
check_series()
{
	local p n prev=0 subj other f
	for p in $(series_patches); do
		f=$PATCH_DIR/$p
		grep -qxF "From: $PATCH_AUTHOR" "$f" ||
			die "$PATCH_DIR_REL/$p: the author is not \"$PATCH_AUTHOR\" ($(grep -m1 '^From: ' "$f"))"
		n=$(patch_number "$f")
		[ -n "$n" ] || die "$PATCH_DIR_REL/$p: the name does not begin with a four-digit number"
		[ "$n" -gt "$prev" ] ||
			die "$PATCH_DIR_REL/$p: numbers must rise in series order (after $(printf %04d "$prev"))"
		prev=$n
		subj=$(patch_subject "$f")
		for other in "$OTHER_PATCH_DIR"/*.patch; do
			[ -f "$other" ] || continue
			if [ "$(patch_subject "$other")" = "$subj" ] &&
				[ "$(patch_number "$other")" != "$n" ]; then
				die "$PATCH_DIR_REL/$p and $OTHER_PATCH_DIR_REL/$(basename "$other"): one change, two numbers"
			fi
		done
	done
}

cmd_refresh()
{
	local added paths p out names

	[ -d "$TREE/.git" ] || die "no tree at $TREE: run 'make tree' first"
	[ -z "$(tree_git status --porcelain)" ] ||
		die "$TREE has uncommitted edits: commit them (git commit, or git commit --fixup and git rebase --autosquash) first"
	# Refresh rewrites src/, contrib/ and patches/ from the tree: edits made
	# there since the tree was made would be lost.
	[ -f "$STATE_DIGEST" ] && [ "$(cat "$STATE_DIGEST")" = "$(inputs_digest)" ] ||
		die "patches/, src/ or contrib/ changed since $TREE was made from them, and refresh would overwrite that: run 'make' to apply them to the tree first, or copy them into the tree and commit them there"

	# New files under src/ and contrib/ go back to src/ and contrib/ ...
	added=$(tree_git diff --name-only --no-renames --diff-filter=A upstream HEAD -- src contrib)
	rm -rf "$TOP/src" "$TOP/contrib"
	if [ -n "$added" ]; then
		tree_git archive HEAD -- $added | tar xf - -C "$TOP"
	fi

	# ... every other change becomes one patch per commit, under the name
	# it had (patch_names).
	paths=$(tree_git diff --name-only --no-renames upstream HEAD |
		grep -vxF -f <(printf '%s\n' "$added") || true)
	out=$(mktemp -d)
	if [ -n "$paths" ]; then
		tree_git format-patch --zero-commit --no-signature --no-numbered \
			-o "$out" upstream..HEAD -- $paths >/dev/null
	fi
	names=$(patch_names "$out")
	rm -f "$PATCH_DIR"/*.patch
	{
		echo "# The patch series, applied in this order with git am (see README.md)."
		for p in $names; do
			mv "$out/${p%%=*}" "$PATCH_DIR/${p#*=}"
			echo "${p#*=}"
		done
	} >"$PATCH_DIR/series"
	rmdir "$out"

	# What was written must give back the tree exactly.
	p=$(produce)
	[ "$(tree_git rev-parse "$p^{tree}")" = "$(tree_git rev-parse 'HEAD^{tree}')" ] ||
		die "refresh wrote patches that do not reproduce $TREE (a commit that mixes new files with a change elsewhere under src/?)"
	tree_git checkout -q --detach "$p"
	record "$p"
	"$TOP/patches/tools/catalogue.sh" update
	note "wrote $(series_patches | wc -l) patches and $(echo "$added" | grep -c . || true) new files"
}

cmd_check()
{
	local p want have
	[ -d "$TREE/.git" ] || die "no tree at $TREE: run 'make' first"
	check_series
	p=$(produce)
	want=$(tree_git rev-parse "$p^{tree}")
	have=$(worktree_tree)
	if [ "$want" != "$have" ]; then
		tree_git diff --stat "$want" "$have" >&2
		die "patches/, src/ and contrib/ do not reproduce $TREE (above: what the tree has that they lack); run 'make refresh' to export the tree, or 'make tree-reset' to discard its edits"
	fi
	echo "patches/, src/ and contrib/ reproduce $TREE ($(series_patches | wc -l) patches)"
	"$TOP/patches/tools/catalogue.sh" check
}

cmd_reset()
{
	local target
	[ -d "$TREE/.git" ] || { cmd_update; exit 0; }
	target=$(produce)
	tree_git checkout -q -f --detach "$target"
	tree_git clean -q -fd
	record "$target"
	note "$TREE reset to patches/ and src/"
}

# served_sha256 VERSION: the SHA-256 patches/UPSTREAM lists for VERSION.
served_sha256()
{
	sed -n "s/^# served $(echo "$1" | sed 's/\./\\./g') \([0-9a-f]\{64\}\)\b.*/\1/p" \
		"${PGSTRATA_UPSTREAM:-$PATCH_DIR/UPSTREAM}" | head -n 1
}

# release_file VERSION SHA256 FILE: write patches/UPSTREAM for VERSION into FILE.
release_file()
{
	local v=$1 sha=$2 major=${1%%.*}
	sed -e "s/^PG_VERSION = .*/PG_VERSION = $v/" \
		-e "s/^PG_TARBALL = .*/PG_TARBALL = postgresql-$v.tar.bz2/" \
		-e "s/^PG_SHA256 = .*/PG_SHA256 = $sha/" \
		-e "s|^PG_URL = .*|PG_URL = https://ftp.postgresql.org/pub/source/v$v/postgresql-$v.tar.bz2|" \
		-e "s/^PG_DEBIAN_ORIG = .*/PG_DEBIAN_ORIG = postgresql-${major}_$v.orig.tar.bz2/" \
		"$PATCH_DIR/UPSTREAM" >"$3"
}

# The tree's commits are rebased, not re-applied: git then merges each patch
# three-way against the release it was written for, so context that moved is
# carried over and only real conflicts stop the move.
cmd_move()
{
	local v=${1:-} sha=${2:-} new tarball old_upstream tip target
	[[ "$v" =~ ^[0-9]+\.[0-9]+$ ]] || die "usage: tree.sh move VERSION [SHA256], for example: tree.sh move 17.12"
	[ "${v%%.*}" = "${PG_VERSION%%.*}" ] ||
		die "$v is not a minor release of PostgreSQL ${PG_VERSION%%.*}; another major needs a series of its own"
	[ "$v" != "$PG_VERSION" ] || die "the series is already on $v"
	[ -n "$sha" ] || sha=$(served_sha256 "$v")
	[ -n "$sha" ] ||
		die "$PATCH_DIR_REL/UPSTREAM lists no SHA-256 for $v: give it (from the release's .sha256 file or Debian's .dsc) as tree.sh move $v SHA256"

	# The tree as the current inputs make it: the starting point.
	(cmd_update)
	tree_is_pristine || die "$TREE has edits or commits of its own: 'make refresh' or 'make tree-reset' first"

	new=$BUILD_DIR/UPSTREAM.$v
	release_file "$v" "$sha" "$new"
	tarball=$(PGSTRATA_UPSTREAM=$new "$TOP/patches/tools/fetch-upstream.sh")

	note "rebasing the series from $PG_VERSION onto $v"
	old_upstream=$(tree_git rev-parse upstream)
	tip=$(tree_git rev-parse HEAD)
	(
		cd "$TREE"
		git checkout -q --detach "$old_upstream"
		git rm -rq --cached .
		git clean -q -fdx
		tar xjf "$tarball" --strip-components=1
		git add -A -f
		# A root commit, as create_tree makes for a fresh tree.
		target=$(GIT_AUTHOR_DATE=$FIXED_DATE GIT_COMMITTER_DATE=$FIXED_DATE \
			git commit-tree "$(git write-tree)" -m "PostgreSQL $v, as released (postgresql-$v.tar.bz2)")
		git tag -f upstream "$target" >/dev/null
		git checkout -q -f --detach "$tip"
	)
	cp "$new" "$PATCH_DIR/UPSTREAM"
	rm -f "$new"
	# The tree now stands for the new inputs, so refresh may write them back.
	inputs_digest >"$STATE_DIGEST"
	if ! tree_git -c user.name="$GIT_COMMITTER_NAME" -c user.email="$GIT_COMMITTER_EMAIL" \
		rebase -q --committer-date-is-author-date --onto upstream "$old_upstream" >&2; then
		note "a patch conflicts with $v; $PATCH_DIR_REL/UPSTREAM already names $v"
		die "resolve the conflict in $TREE (git status), 'git rebase --continue' there, then 'make refresh'"
	fi
	cmd_refresh
	note "the series now applies to $v; run 'make check' and 'make check-upstream', then commit patches/"
}

case "${1:-}" in
	update) cmd_update ;;
	move) shift; cmd_move "$@" ;;
	refresh) cmd_refresh ;;
	check) cmd_check ;;
	reset) cmd_reset ;;
	*) die "usage: $0 update|refresh|check|reset" ;;
esac
