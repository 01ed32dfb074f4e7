#!/usr/bin/env bash
#
# run-fuzz.sh: build the pcs fuzz target (with its zstd TOAST operations) with libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer, and run it for FUZZ_SECONDS (default 600).
#
#   make fuzz                      (builds the server first, installs clang)
#   FUZZ_SECONDS=60 make fuzz
#
# The run starts from the committed corpus (test/fuzz/corpus) and keeps what
# it finds in build/fuzz/corpus; a crash leaves its input in
# build/fuzz/artifacts/ and makes the script fail.  Replay one input with
# build/fuzz/pcs_fuzz FILE.  The last lines of the log are the summary
# (executions, coverage, corpus size); see test/fuzz/RESULTS.md.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/test/lib.sh"
OUT=$TOP/build/fuzz
PG_CONFIG=${PG_CONFIG:-$TOP/build/install/bin/pg_config}
FUZZ_SECONDS=${FUZZ_SECONDS:-600}
CLANG=${CLANG:-clang}

# clang and its sanitizer runtimes, libFuzzer's among them: in Debian 12 the
# runtimes are libclang-rt-14-dev, which clang only recommends.
if [ "$CLANG" = clang ]; then
	"$TOP/patches/tools/install-deps.sh" clang libclang-rt-14-dev
fi

mkdir -p "$OUT/corpus" "$OUT/artifacts"
cp -n "$TOP"/test/fuzz/corpus/* "$OUT/corpus/"

libs=$(for l in $("$PG_CONFIG" --libs); do case $l in -lzstd | -llz4) echo "$l" ;; esac; done)
echo "--- building $OUT/pcs_fuzz with $("$CLANG" --version | head -n 1)"
# shellcheck disable=SC2086
"$CLANG" -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-Wno-ignored-attributes \
	-I"$TOP/src/include" -I"$("$PG_CONFIG" --includedir-server)" \
	-o "$OUT/pcs_fuzz" \
	"$TOP/test/fuzz/pcs_fuzz.c" $PCS_FORMAT_SOURCES \
	"$TOP/test/fuzz/toast_fuzz.c" $TOAST_FORMAT_SOURCES \
	"$TOP/test/common/pcs_frontend.c" \
	-L"$("$PG_CONFIG" --libdir)" -lpgcommon -lpgport $libs

echo "--- fuzzing for $FUZZ_SECONDS s from $(ls "$OUT/corpus" | wc -l) inputs; log in $OUT/fuzz.log"
rc=0
(cd "$OUT" && ./pcs_fuzz -max_total_time="$FUZZ_SECONDS" -max_len=65536 \
	-print_final_stats=1 -artifact_prefix="$OUT/artifacts/" corpus) \
	>"$OUT/fuzz.log" 2>&1 || rc=$?
grep -E '^#[0-9]+[[:space:]]+(DONE|INITED)|^stat::|SUMMARY|ERROR|Test unit written' "$OUT/fuzz.log" | tail -n 20
echo "--- corpus now $(ls "$OUT/corpus" | wc -l) inputs; crashes: $(ls "$OUT/artifacts" | wc -l)"
exit $rc
