#!/usr/bin/env bash
#
# plot-rounds.sh: draw the rounds of an A/B benchmark, one value per round
# and side, from the raw rows its script printed (and its RESULTS file
# keeps), as a PNG with one panel per group of rows.
#
#   test/bench/plot-rounds.sh INPUT PNG TITLE REGEX GROUP SIDE ROUND VALUE YLABEL
#
# INPUT: a file with one row per round and side, fields separated by
# blanks (other lines are skipped); REGEX: an awk pattern the rows match;
# GROUP: the field numbers, comma-separated, that name a panel (rows of one
# thread count, one scenario); SIDE: the field that names the line (heap,
# refdata; default, 0); ROUND, VALUE: the fields of the round number and of
# the value drawn.  The CSV goes next to PNG (PNG's name, .csv) and is drawn
# by plot.sh, x being the round.  A round's two sides ran one after the
# other, so the lines show how far apart rounds are, next to the medians
# that RESULTS.md quotes.
#
# Examples:
#
#   plot-rounds.sh refdata/runs/results-tpcc.md refdata/runs/results-tpcc.png \
#       "TPC-C" '^tpcc ' 1,3 2 4 5 "TPS"
#   plot-rounds.sh bulkio/runs/results-stock.md bulkio/runs/results-stock.png \
#       "load" '^(insert|insert4|copy|copy4|index) ' 1 2 9 3 "seconds"

set -euo pipefail

if [ $# -ne 9 ]; then
	echo "usage: $0 INPUT PNG TITLE REGEX GROUP SIDE ROUND VALUE YLABEL" >&2
	exit 2
fi
input=$1
png=$2
title=$3
regex=$4
group=$5
side=$6
round=$7
value=$8
ylabel=$9
csv=${png%.png}.csv

# the CSV: round, then one column per group and side ("tpcc 8 heap"), and
# the panels for plot.sh, one per group, on the last lines after "#"
awk -v re="$regex" -v g="$group" -v s="$side" -v r="$round" -v v="$value" \
	-v ylabel="$ylabel" '
	$0 ~ re && $r ~ /^[0-9]+$/ && $v ~ /^[0-9.]+$/ {
		n = split(g, gf, ",")
		key = $gf[1]
		for (i = 2; i <= n; i++)
			key = key " " $gf[i]
		# plot.sh reads ":", ",", "=" and "@" in its panels as separators
		gsub(/[:,=@]/, "_", key)
		sd = $s
		gsub(/[:,=@]/, "_", sd)
		col = key " " sd
		if (!(key in seen_group)) { seen_group[key] = 1; groups[++ngroups] = key }
		if (!(col in seen_col)) {
			seen_col[col] = 1; cols[++ncols] = col
			sides[key] = sides[key] (sides[key] == "" ? "" : ",") col ":" sd
		}
		val[$r, col] = $v
		if ($r + 0 > maxround) maxround = $r + 0
	}
	END {
		if (ncols == 0) { print "error: no row matches" > "/dev/stderr"; exit 1 }
		line = "round"
		for (c = 1; c <= ncols; c++)
			line = line "," cols[c]
		print line
		for (i = 1; i <= maxround; i++) {
			line = i
			for (c = 1; c <= ncols; c++)
				line = line "," ((i, cols[c]) in val ? val[i, cols[c]] : "NaN")
			print line
		}
		for (k = 1; k <= ngroups; k++)
			print "#" ylabel ", " groups[k] "=" sides[groups[k]]
	}' "$input" >"$csv.tmp"

grep -v '^#' "$csv.tmp" >"$csv"
mapfile -t panels < <(grep '^#' "$csv.tmp" | cut -c2-)
rm -f "$csv.tmp"
"$(dirname "$0")/plot.sh" "$csv" "$png" "$title" "${panels[@]}"
echo "$png (from $csv)"
