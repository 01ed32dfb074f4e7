#!/usr/bin/env bash
#
# plot-corpus.sh: draw the newest run of runs/results-corpus.md (corpus.sh's
# raw output) as bars, one group per relation: plain per-page zstd, the storage
# manager's codec, the codec with a trained dictionary, and zstd on the
# whole file, on a logarithmic axis.
#
#   test/bench/compression/plot-corpus.sh [RESULTS.md [PNG]]
#
# Defaults: runs/results-corpus.md and runs/results-corpus.png next to this
# script.
# Needs gnuplot with the pngcairo terminal (Debian: gnuplot-nox).

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
IN=${1:-$HERE/runs/results-corpus.md}
OUT=${2:-$HERE/runs/results-corpus.png}

if ! command -v gnuplot >/dev/null; then
	echo "error: gnuplot not found; install the Debian package gnuplot-nox" >&2
	exit 1
fi

DATA=$(mktemp)
trap 'rm -f "$DATA"' EXIT

# The first table of the file is the newest run; it has the dictionary and
# whole-file columns (15 columns) since 2026-11-24.
awk -F'|' '
	/^\| --- / { intable = 1; next }
	intable && !/^\|/ { exit }
	intable && NF >= 17 {
		name = $3; gsub(/ /, "", name)
		set = $2; gsub(/ /, "", set)
		printf "%s/%s %s %s %s %s\n", set, name, $5 + 0, $6 + 0, $12 + 0, $13 + 0
	}' "$IN" >"$DATA"

if [ ! -s "$DATA" ]; then
	echo "error: no table with dictionary columns in $IN" >&2
	exit 1
fi
n=$(wc -l <"$DATA")

gnuplot <<EOF
set terminal pngcairo noenhanced size $((n * 28 + 200)),700 font ",10"
set output "$OUT"
set title "Compression ratio per relation (newest corpus.sh run; zstd level 1, 128-byte units)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set logscale y 2
set yrange [1:*]
set ylabel "logical size / stored size (log scale)"
set xtics rotate by -60 scale 0 font ",8"
set key top left
set grid ytics
plot "$DATA" using 2:xtic(1) title "plain per-page zstd", \
     "" using 3 title "codec", \
     "" using 4 title "codec + dictionary", \
     "" using 5 title "zstd on the whole file"
EOF
echo "$OUT"
