#!/usr/bin/env bash
#
# codec-ab.sh: the storage manager's codec of two commits side by side, on
# the same relation files: what a change to the transforms or the codec
# does to the CPU per page (and, as a check, to nothing else).
#
#   test/bench/compression/codec-ab.sh OLD-COMMIT [LABEL=]FILE... [> OUTPUT.md]
#
# Builds test/bench/compression/page_codec.c twice against the installed
# server (make first): with the format layer of OLD-COMMIT (a temporary git
# worktree) and with that of the working tree, then runs the two builds on
# each file alternately, ROUNDS times (default 5), the order rotating each
# round.  page_codec reports per page the CPU microseconds of compressing
# and of decoding, without and with the shuffle or split, and with a
# dictionary trained per segment (where one pays; see page_codec.c); reported
# are the medians of each build and new / old.  The ratios both builds
# report must be equal when the change keeps the stored bytes (they are
# printed too).
#
# The files are plain relation files (for example a table's
# pg_relation_filepath() in a cluster of plain storage, or the corpus of
# corpus.sh).  Environment: ROUNDS (5), LEVEL (zstd level, 1).

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
ROUNDS=${ROUNDS:-5}
LEVEL=${LEVEL:-1}
[ $# -ge 2 ] || { echo "usage: $0 OLD-COMMIT FILE..." >&2; exit 2; }
OLD=$1
shift

WORK=$(mktemp -d)
trap 'git -C "$TOP" worktree remove --force "$WORK/old-tree" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
git -C "$TOP" worktree add --detach "$WORK/old-tree" "$OLD" >/dev/null 2>&1
mkdir -p "$WORK/old" "$WORK/new"
# build_page_codec takes the sources of the format layer from $TOP
(
	PCS_FORMAT_SOURCES=${PCS_FORMAT_SOURCES//$TOP/$WORK/old-tree}
	TOP=$WORK/old-tree
	build_page_codec "$WORK/old"
)
build_page_codec "$WORK/new"

echo "## codec-ab.sh, $(date -u '+%Y-%m-%d %H:%M') UTC"
echo
echo "- command: \`ROUNDS=$ROUNDS LEVEL=$LEVEL test/bench/compression/codec-ab.sh $OLD ...\`"
echo "- old: $(git -C "$TOP" log -1 --format='%h %s' "$OLD" | cut -c1-100)"
echo "- new: the working tree at $(git -C "$TOP" log -1 --format=%h HEAD)$(git -C "$TOP" diff --quiet HEAD -- src || echo ', with changes')"
echo "- machine: $(nproc) CPUs, $(uname -r); load average at start $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "CPU microseconds per page, medians of $ROUNDS runs each (page_codec.c):"
echo "compress and decode, with plain zstd, with the codec's transforms and"
echo "with a dictionary per segment (the ratio with the dictionary last)."
echo
echo "| file | pages | ratio plain / codec / dictionary | build | compress zstd | compress codec | compress dictionary | decode zstd | decode codec | decode dictionary |"
echo "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for arg in "$@"; do
	f=${arg#*=}
	label=$(basename "$f")
	[ "$f" = "$arg" ] || label=${arg%%=*}
	declare -A cz=() cc=() cdict=() dz=() dc=() ddict=() ratio=()
	for ((r = 0; r < ROUNDS; r++)); do
		if ((r % 2 == 0)); then order="old new"; else order="new old"; fi
		for b in $order; do
			# pages, ratio without, with, compress without, with, decode
			# without, with, ratio with a dictionary, whole file, compress
			# and decode with a dictionary
			read -r pages rz rc c0 c1 d0 d1 rd _ c2 d2 _ < <("$WORK/$b/page_codec" "$LEVEL" "$f")
			cz[$b]="${cz[$b]:-} $c0"
			cc[$b]="${cc[$b]:-} $c1"
			cdict[$b]="${cdict[$b]:-} $c2"
			dz[$b]="${dz[$b]:-} $d0"
			dc[$b]="${dc[$b]:-} $d1"
			ddict[$b]="${ddict[$b]:-} $d2"
			ratio[$b]="$rz / $rc / $rd"
		done
	done
	for b in old new; do
		# shellcheck disable=SC2086
		echo "| $label | $pages | ${ratio[$b]} | $b | $(median ${cz[$b]}) | $(median ${cc[$b]}) | $(median ${cdict[$b]}) | $(median ${dz[$b]}) | $(median ${dc[$b]}) | $(median ${ddict[$b]}) |"
	done
	row="| | | | new / old |"
	for col in cz cc cdict dz dc ddict; do
		declare -n m=$col
		# shellcheck disable=SC2086
		row="$row $(awk -v a="$(median ${m[new]})" -v b="$(median ${m[old]})" 'BEGIN {if (b > 0) printf "%.2f", a / b; else printf "-"}') |"
		unset -n m
	done
	echo "$row"
	unset cz cc cdict dz dc ddict ratio
done
echo
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
