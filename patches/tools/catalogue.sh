#!/usr/bin/env bash
#
# catalogue.sh: the table that opens patches/README.md, one row per change
# of both series, in number order, made from the patch files themselves.
#
#   catalogue.sh print    print the table
#   catalogue.sh update   write it into patches/README.md, between its markers
#   catalogue.sh check    fail unless patches/README.md holds the table as
#                         the patches make it now
#
# Every column but "feature" is made from the patches: the subject (17's,
# else 18's), the upstream files they change, the lines of C they add and
# remove (*.c and *.h, 17's patch, else 18's) and which series have the
# change.  The feature is the one thing a patch does not say: it is kept
# from the table as it is, by number, and a new change shows "?" until
# somebody names it (check refuses a "?").

set -euo pipefail
. "$(dirname "$0")/common.sh"

README=$TOP/patches/README.md
BEGIN_MARK='<!-- catalogue: made by patches/tools/catalogue.sh update; edit only the feature column -->'
END_MARK='<!-- catalogue: end -->'

# series_file DIR NUMBER: the patch of DIR's series with that number, if any.
series_file()
{
	local dir=$1 n=$2 p
	for p in $(grep -v '^\s*\(#\|$\)' "$dir/series"); do
		if [ "$(patch_number "$p")" = "$n" ]; then
			echo "$dir/$p"
			return
		fi
	done
}

# features: "number<TAB>feature" for each row of the table as it is now.
features()
{
	sed -n "/^$(printf '%s' "$BEGIN_MARK" | sed 's/[][\/.*^$]/\\&/g')\$/,/^$END_MARK\$/p" "$README" |
		awk -F' \\| ' '/^\| [0-9][0-9][0-9][0-9] / { sub(/^\| /, "", $1); print $1 "\t" $3 }'
}

# upstream_files PATCH: the files it changes, as the last two parts of
# their paths, at most four and a count of the rest.
upstream_files()
{
	git apply --numstat "$1" | awk -F'\t' '
		{
			n = split($3, part, "/")
			name = (n > 1) ? part[n - 1] "/" part[n] : part[n]
			files[++count] = "`" name "`"
		}
		END {
			out = ""
			for (i = 1; i <= count && i <= 4; i++)
				out = out (i > 1 ? ", " : "") files[i]
			if (count > 4)
				out = out " and " (count - 4) " more"
			print out
		}'
}

# c_lines PATCH: "+added -removed" over its *.c and *.h files.
c_lines()
{
	git apply --numstat "$1" | awk -F'\t' '
		$3 ~ /\.[ch]$/ { add += $1; del += $2 }
		END { printf "+%d -%d\n", add, del }'
}

# print_table: the table, as markdown.
print_table()
{
	local n f17 f18 main subject feature on17 on18
	declare -A feature_of=()

	while IFS=$'\t' read -r n feature; do
		feature_of[$((10#$n))]=$feature
	done < <(features)

	echo "| patch | subject | feature | upstream files | C lines | on 17 | on 18 |"
	echo "| --- | --- | --- | --- | ---: | --- | --- |"
	for n in $(
		for p in $(grep -hv '^\s*\(#\|$\)' "$TOP/patches/series" "$TOP/patches/18/series"); do
			patch_number "$p"
		done | sort -n | uniq
	); do
		f17=$(series_file "$TOP/patches" "$n")
		f18=$(series_file "$TOP/patches/18" "$n")
		main=${f17:-$f18}
		subject=$(patch_subject "$main")
		on17=$([ -n "$f17" ] && echo yes || echo "-")
		if [ -z "$f18" ]; then
			on18="-"
		elif [ -n "$f17" ] && [ "$(patch_subject "$f18")" != "$subject" ]; then
			on18="adapted"
		else
			on18="yes"
		fi
		printf '| %04d | %s | %s | %s | %s | %s | %s |\n' "$n" \
			"$(echo "$subject" | sed 's/|/\\|/g')" "${feature_of[$n]:-?}" \
			"$(upstream_files "$main")" "$(c_lines "$main")" "$on17" "$on18"
	done
}

# replace_table FILE TABLE: FILE with the text between the markers replaced.
replace_table()
{
	awk -v begin="$BEGIN_MARK" -v end="$END_MARK" -v table="$2" '
		$0 == begin { print; print table; skip = 1; next }
		$0 == end { skip = 0 }
		!skip { print }' "$1"
}

grep -qxF "$BEGIN_MARK" "$README" && grep -qxF "$END_MARK" "$README" ||
	die "patches/README.md lacks the catalogue's markers"

case "${1:-}" in
	print)
		print_table
		;;
	update)
		table=$(print_table)
		replace_table "$README" "$table" >"$README.new"
		mv "$README.new" "$README"
		;;
	check)
		table=$(print_table)
		if ! replace_table "$README" "$table" | cmp -s - "$README"; then
			replace_table "$README" "$table" | diff -u "$README" - >&2 || true
			die "patches/README.md's table does not match the patches: run patches/tools/catalogue.sh update"
		fi
		if echo "$table" | grep -q ' | ? | '; then
			die "patches/README.md's table has a change without a feature (\"?\"): name it there"
		fi
		echo "patches/README.md's table matches both series"
		;;
	*)
		die "usage: $0 print|update|check"
		;;
esac
