#!/usr/bin/env bash
#
# speed-io-bound.sh: speed.sh's io_bound scenario, on a small-memory server
# with a slow disk emulated with control groups (v1): the server and its page
# cache get RIG_MEMORY_MB of memory, and reads from the root file system's
# device are throttled to RIG_READ_MBPS.  Needs root (to make the groups);
# the server runs as the test user inside them.  The groups are removed at
# the end.
#
#   test/bench/compression/speed-io-bound.sh [OUTPUT.md]
#
# Environment: RIG_MEMORY_MB (256), RIG_READ_MBPS (50), and speed.sh's.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../../.." && pwd)
. "$TOP/test/lib.sh"
OUT=${1:-/dev/stdout}
MEM=${RIG_MEMORY_MB:-256}
MBPS=${RIG_READ_MBPS:-50}
CG=/sys/fs/cgroup

[ "$(id -u)" = 0 ] || { echo "error: run as root: the rig needs control groups" >&2; exit 1; }
trap 'rig_remove pgrig' EXIT
rig_make pgrig "$MEM" "$MBPS" ||
	{ echo "error: no cgroup v1 memory and blkio controllers under $CG" >&2; exit 1; }
dev=$RIG_DEV
sync
echo 1 >/proc/sys/vm/drop_caches

results=$(mktemp)
PGSTRATA_RIG="memory/pgrig blkio/pgrig" \
PGSTRATA_RIG_DESC="$RIG_DESC" \
SCENARIOS=io_bound \
	"$TOP/test/bench/compression/speed.sh" "$results"

# What the groups saw, to show the rig was in force.
{
	cat "$results"
	echo
	echo "Rig counters over the whole run: peak memory $(($(cat "$CG/memory/pgrig/memory.max_usage_in_bytes") / 1048576)) MiB;"
	echo "bytes read through the throttle: $(awk -v d="$dev" '$1 == d && $2 == "Read" {print $3}' "$CG/blkio/pgrig/blkio.throttle.io_service_bytes")."
} >"$OUT"
rm -f "$results"
