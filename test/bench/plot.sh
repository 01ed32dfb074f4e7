#!/usr/bin/env bash
#
# plot.sh: draw the curves of a benchmark's CSV into a PNG, one panel above
# the other, against the CSV's first column (seconds).
#
#   test/bench/plot.sh CSV PNG TITLE PANEL...
#
# CSV has a header line naming its columns.  Each PANEL is
#
#   YLABEL=COLUMN[:LEGEND],COLUMN[:LEGEND]...[@LIMIT[:LEGEND]]
#
# and draws the named columns; when YLABEL contains "MiB", the values are
# bytes and are drawn in MiB; when it contains "log scale", the y axis is
# logarithmic.  @LIMIT draws a dashed horizontal line there
# (a target).  Needs gnuplot with the pngcairo terminal (the Debian package
# gnuplot-nox; the benchmarks that plot install it when run as root).
#
# Example, the queue benchmark's first panel:
#
#   plot.sh runs/results-queue.csv runs/results-queue.png "queue" \
#       "physical MiB=cts_bytes:compressed,pts_bytes:plain" \
#       "physical / fresh load=cts_over_fresh:compressed@1.15:target"

set -euo pipefail

if [ $# -lt 4 ]; then
	echo "usage: $0 CSV PNG TITLE PANEL..." >&2
	exit 2
fi
csv=$1
png=$2
title=$3
shift 3

if ! command -v gnuplot >/dev/null; then
	echo "error: gnuplot not found; install the Debian package gnuplot-nox" >&2
	exit 1
fi

# gnuplot's strings are in double quotes: keep ours free of them.
gq() { printf '%s' "$1" | tr -d '"\\'; }

xcol=$(head -1 "$csv" | cut -d, -f1)
npanels=$#
{
	echo "set terminal pngcairo size 1000,$((60 + 300 * npanels)) font 'sans,10'"
	echo "set output \"$(gq "$png")\""
	echo "set datafile separator ','"
	echo "set termoption noenhanced"
	echo "set key outside right top"
	echo "set lmargin at screen 0.08"
	echo "set rmargin at screen 0.76"
	echo "set grid"
	echo "set autoscale xfix"
	echo "set multiplot layout $npanels,1 title \"$(gq "$title")\""
	for panel in "$@"; do
		ylabel=${panel%%=*}
		rest=${panel#*=}
		limit=""
		if [ "${rest#*@}" != "$rest" ]; then
			limit=${rest#*@}
			rest=${rest%%@*}
		fi
		scale=1
		case $ylabel in *MiB*) scale=1048576 ;; esac
		echo "set ylabel \"$(gq "$ylabel")\""
		echo "set xlabel \"$(gq "$xcol")\""
		case $ylabel in
			*"log scale"*) echo "set logscale y"; echo "set yrange [*:*]" ;;
			*) echo "unset logscale y"; echo "set yrange [0:*]" ;;
		esac
		plots=""
		IFS=, read -r -a cols <<<"$rest"
		for c in "${cols[@]}"; do
			name=${c%%:*}
			legend=${c#*:}
			plots+="${plots:+, }\"$(gq "$csv")\" using \"$(gq "$xcol")\":(column(\"$(gq "$name")\") / $scale) with linespoints pointsize 0.5 title \"$(gq "$legend")\""
		done
		if [ -n "$limit" ]; then
			lval=${limit%%:*}
			llegend=${limit#*:}
			plots+=", $lval with lines dashtype 2 linecolor rgb 'red' title \"$(gq "$llegend")\""
		fi
		echo "plot $plots"
	done
	echo "unset multiplot"
} | gnuplot
