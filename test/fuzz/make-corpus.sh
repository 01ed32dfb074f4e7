#!/usr/bin/env bash
#
# make-corpus.sh: make the seed corpus of the pcs fuzz target from real
# compressed segment files.
#
#   test/fuzz/make-corpus.sh [OUTDIR]     (default test/fuzz/corpus)
#
# Starts a throwaway cluster from build/install (as the test user when run
# by root), fills two compressed tablespaces (zstd and lz4) with the kinds
# of pages the storage manager meets (text-like heap rows, a btree, random
# bytes that are stored raw, pages that grew and were relocated, a table
# truncated by VACUUM), checkpoints, stops, and cuts the segment files into
# inputs of each operation of pcs_fuzz.c: whole segments cut to their first
# blocks, headers, map entries, page images, and plain pages for the round
# trip.  It also stores zstd TOAST values of both encodings, in line and
# external, and cuts their bytes as the server keeps them (read with
# pageinspect and from the TOAST table) into inputs of the two TOAST
# operations.  Writes only new files; the committed corpus came from this
# script.

set -euo pipefail

TOP=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(realpath -m "${1:-$TOP/test/fuzz/corpus}")
WORK=$TOP/build/fuzz/seedwork
. "$TOP/test/lib.sh"

if [ "${PCS_CORPUS_INNER:-}" != 1 ]; then
	rm -rf "$WORK"
	mkdir -p "$WORK" "$OUT"
	as_test_user "$WORK" env PCS_CORPUS_INNER=1 "$0" "$WORK/out"
	cp -n "$WORK"/out/* "$OUT"/ 2>/dev/null || true
	echo "--- corpus in $OUT: $(ls "$OUT" | wc -l) files"
	exit 0
fi

BIN=$TOP/build/install/bin
mkdir -p "$OUT"
bench_cluster "$WORK"
mkdir -p "$WORK/cts_lz4"
"$BIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
trap '"$BIN/pg_ctl" -D "$WORK/data" -m immediate stop >/dev/null 2>&1 || true' EXIT

"$BIN/psql" -X -q -h 127.0.0.1 -p "$port" -d postgres -v ON_ERROR_STOP=1 <<SQL
CREATE TABLESPACE z LOCATION '$WORK/cts' WITH (compression = 'zstd');
CREATE TABLESPACE l LOCATION '$WORK/cts_lz4' WITH (compression = 'lz4');
CREATE TABLE zt (id int PRIMARY KEY USING INDEX TABLESPACE z, k int, v text) TABLESPACE z;
CREATE TABLE lt (id int PRIMARY KEY USING INDEX TABLESPACE l, k int, v text) TABLESPACE l;
INSERT INTO zt SELECT g, g % 97, repeat(md5(g::text), 1 + g % 4) FROM generate_series(1, 3000) g;
INSERT INTO lt SELECT * FROM zt;
-- pages that grow and move
UPDATE zt SET v = v || repeat('y', 200) WHERE id % 7 = 0;
UPDATE lt SET v = v || repeat('y', 200) WHERE id % 7 = 0;
-- random bytes: stored raw
CREATE TABLE zr (b bytea) TABLESPACE z;
ALTER TABLE zr ALTER b SET STORAGE EXTERNAL;
INSERT INTO zr SELECT decode(string_agg(lpad(to_hex((random() * 255)::int), 2, '0'), ''), 'hex')
	FROM generate_series(1, 24000) g GROUP BY g % 8;
-- truncated by VACUUM
CREATE TABLE zv (id int, v text) TABLESPACE z;
INSERT INTO zv SELECT g, md5(g::text) FROM generate_series(1, 2000) g;
DELETE FROM zv WHERE id > 100;
VACUUM zv;
-- the same rows stored plain, for the round trip
CREATE TABLE pt AS SELECT * FROM zt;
CREATE INDEX pt_k ON pt (k);
CHECKPOINT;
SQL

files=$("$BIN/psql" -X -A -t -h 127.0.0.1 -p "$port" -d postgres -c \
	"SELECT c.relname || ' ' || pg_relation_filepath(c.oid) FROM pg_class c
	 WHERE relname IN ('zt', 'lt', 'zt_pkey', 'lt_pkey', 'zr', 'zv', 'pt', 'pt_k')
	    OR oid = (SELECT reltoastrelid FROM pg_class WHERE relname = 'zr')")

# zstd TOAST values of both encodings, in line and external; each line of
# toast.txt: the value's id, its attribute's bytes as the row holds them
# (a compressed varlena, or an on-disk TOAST pointer), and the bytes of
# its chunks if it is external
"$BIN/psql" -X -q -h 127.0.0.1 -p "$port" -d postgres -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION pageinspect;
CREATE TABLE tz (id int, t text COMPRESSION zstd);
INSERT INTO tz VALUES (1, repeat('pgstrata ', 300));
INSERT INTO tz SELECT 2, string_agg(md5(g::text), ' ') FROM generate_series(1, 70) g;
INSERT INTO tz SELECT 3, string_agg(md5(g::text), ' ') FROM generate_series(1, 400) g;
SET toast_zstd_debug_legacy_encoding = on;
INSERT INTO tz VALUES (4, repeat('pgstrata ', 300));
INSERT INTO tz SELECT 5, string_agg(md5(g::text), ' ') FROM generate_series(1, 70) g;
INSERT INTO tz SELECT 6, string_agg(md5(g::text), ' ') FROM generate_series(1, 400) g;
SQL
"$BIN/psql" -X -A -t -F ' ' -h 127.0.0.1 -p "$port" -d postgres -v ON_ERROR_STOP=1 \
	-o "$WORK/toast.txt" <<'SQL'
SELECT (SELECT string_agg(lpad(to_hex(get_byte(a[1], i)), 2, '0'), '')
		  FROM generate_series(0, length(a[1]) - 1) i),
	   encode(a[2], 'hex')
  FROM (SELECT t_attrs AS a
		  FROM generate_series(0, pg_relation_size('tz') / 8192 - 1) p,
			   heap_page_item_attrs(get_raw_page('tz', p::int), 'tz'::regclass)) r;
SQL
toastrel=$("$BIN/psql" -X -A -t -h 127.0.0.1 -p "$port" -d postgres -c \
	"SELECT reltoastrelid::regclass FROM pg_class WHERE relname = 'tz'")
"$BIN/psql" -X -A -t -F ' ' -h 127.0.0.1 -p "$port" -d postgres -v ON_ERROR_STOP=1 \
	-o "$WORK/chunks.txt" -c \
	"SELECT chunk_id, encode(string_agg(chunk_data, '' ORDER BY chunk_seq), 'hex')
	   FROM $toastrel GROUP BY chunk_id"
"$BIN/pg_ctl" -D "$WORK/data" -w stop >/dev/null
trap - EXIT

# Cut the TOAST values into inputs: operation 5 takes an in-line value from
# va_tcinfo on, operation 6 a TOAST pointer's va_rawsize and va_extinfo and
# the value's chunks (toast_fuzz.c).
perl -e '
use strict;
use warnings;
my ($toast, $chunks, $out) = @ARGV;
sub put
{
	my ($name, $bytes) = @_;
	open my $fh, ">:raw", "$out/$name" or die "$out/$name: $!";
	print $fh $bytes;
	close $fh;
}
my %chunk;
open my $cf, "<", $chunks or die "$chunks: $!";
while (<$cf>)
{
	chomp;
	my ($id, $hex) = split / /;
	$chunk{$id} = pack("H*", $hex) if defined $hex;
}
open my $tf, "<", $toast or die "$toast: $!";
while (<$tf>)
{
	chomp;
	my ($idhex, $hex) = split / /;
	next unless defined $hex;
	my $id = unpack("V", pack("H*", $idhex));
	my $attr = pack("H*", $hex);
	my $enc = $id > 3 ? "legacy" : "extended";
	if (ord($attr) == 1)
	{
		# 1-byte header, tag, then va_rawsize, va_extinfo, va_valueid
		my ($rawsize, $extinfo, $valueid) = unpack("x2 V V V", $attr);
		die "no chunks for value $valueid" unless exists $chunk{$valueid};
		put("toast-external-$enc-$id", chr(6) . pack("V V", $rawsize, $extinfo)
			  . $chunk{$valueid});
	}
	else
	{
		# a 4-byte compressed varlena: drop its length word
		put("toast-$enc-$id", chr(5) . substr($attr, 4));
	}
}
' "$WORK/toast.txt" "$WORK/chunks.txt" "$OUT"

# Cut the files into inputs; the layout is README.pcs's, as
# test/PgStrata/PcsFile.pm knows it.
echo "$files" | perl -I"$TOP/test" -MPgStrata::PcsFile -e '
use strict;
use warnings;
my ($data, $out) = @ARGV;
sub put
{
	my ($name, $bytes) = @_;
	open my $fh, ">:raw", "$out/$name" or die "$out/$name: $!";
	print $fh $bytes;
	close $fh;
}
sub slurp
{
	my ($path) = @_;
	open my $fh, "<:raw", $path or die "$path: $!";
	local $/;
	my $b = <$fh>;
	close $fh;
	return $b;
}
while (my $line = <STDIN>)
{
	chomp $line;
	my ($rel, $path) = split / /, $line;
	$rel = "zr_toast" if $rel =~ /^pg_toast/;
	my $file = slurp("$data/$path");
	if (substr($file, 0, 8) ne PgStrata::PcsFile::MAGIC)
	{
		# a plain file: its pages seed the round trip (algorithm byte,
		# capacity 8192)
		for my $b (0, 1, 5)
		{
			next if length($file) < ($b + 1) * 8192;
			put("roundtrip-$rel-$b", chr(4) . chr($b & 1) . pack("v", 8192)
				  . substr($file, $b * 8192, 8192));
		}
		next;
	}
	# the header as pcs_fuzz.c reads it from an input: the first 48 bytes,
	# then (formats 3 and 4) the four shared words of sectors 1 to 3
	my $h = PgStrata::PcsFile::parse_header(substr($file, 0, 2048));
	my $v3 = $h->{version} >= 3;
	my $header = $v3 ?
	  substr($file, 0, 48) . substr($file, 512, 16) . substr($file, 1024, 8)
	  . substr($file, 1536, 8) : substr($file, 0, 48);
	$header .= "\0" x (512 - length($header));
	my $unit = $h->{unit_size};
	my $area = PgStrata::PcsFile::data_offset($h->{version});
	my $algo = ord(substr($header, 12, 1));
	my $nblocks = $h->{nblocks} // die "$path: unsound block count word";
	$rel = "v$h->{version}-$rel" if $v3;
	put("header-$rel", chr(0) . $header);
	next if $nblocks == 0;
	my @entries;
	for my $b (0 .. $nblocks - 1)
	{
		# format 5: a block whose map page does not exist has an empty entry
		my $at = eval { PgStrata::PcsFile::entry_offset($b, \$file) };
		push @entries, defined $at ? substr($file, $at, 16) : "\0" x 16;
	}
	# segments cut to their first blocks: header with the count lowered,
	# the entries, the data area up to the last unit they use
	for my $k (1, 4)
	{
		next if $k > $nblocks;
		my $end = 0;
		for my $b (0 .. $k - 1)
		{
			my ($first, $stored, $units) = unpack("V v C", $entries[$b]);
			$end = $first + $units if $first + $units > $end;
		}
		next if $end * $unit > 32768;    # keep seeds small
		my $cut = $header;
		for my $copy (0 .. ($v3 ? 1 : 0))
		{
			substr($cut, $v3 ? 64 + 8 * $copy : 40, 8) =
			  PgStrata::PcsFile::nblocks_word($h->{header_crc}, 0, $k, $copy);
		}
		put("segment-$rel-$k", chr(3) . $cut . join("", @entries[0 .. $k - 1])
			  . substr($file, $area, $end * $unit));
	}
	for my $b (grep { $_ < $nblocks } (0, 1, 2, $nblocks - 1))
	{
		my ($first, $stored, $units, $flags) = unpack("V v C C", $entries[$b]);
		# operation byte bit 0x40: the entry is judged with format 2 units
		put("entry-$rel-$b", chr($v3 ? 1 : 0x41)
			  . pack("V V", $b, $first + $units + 1) . $entries[$b]);
		next if $stored == 0;
		put("image-$rel-$b", chr(2) . chr($algo)
			  . substr($file, $area + $unit * $first, $stored));
	}
}
' "$WORK/data" "$1"

# Inputs at the limits of the format, written by hand: each is one step
# past a bound that pcs_entry_check(), pcs_header_check() or
# pcs_nblocks_decode() enforces, with the checksums recomputed by the
# harness (operation byte | 0x80), so that a check that goes missing is
# caught on replay, not only by a fuzzer that happens to find the value
# again; and damaged block count words, as they are (operation byte 0).
perl -I"$TOP/test" -MPgStrata::PcsFile -e '
use strict;
use warnings;
my ($out) = @ARGV;
sub put
{
	my ($name, $bytes) = @_;
	open my $fh, ">:raw", "$out/$name" or die "$out/$name: $!";
	print $fh $bytes;
	close $fh;
}
# entry(first, stored, units, flags): a map entry, checksums left to the harness
sub entry { return pack("V v C C V V", @_, 0, 0); }
my $slot = pack("V V", 5, 1000);    # block 5, 1000 units handed out
# format 2 (512-byte units: operation byte bit 0x40)
put("boundary-entry-v2-stored-over-block", chr(0xC1) . $slot . entry(10, 8193, 17, 1));
put("boundary-entry-v2-units-over-max", chr(0xC1) . $slot . entry(10, 8000, 21, 1));
put("boundary-entry-v2-units-under-stored", chr(0xC1) . $slot . entry(10, 8000, 15, 1));
put("boundary-entry-v2-past-limit", chr(0xC1) . $slot . entry(985, 8000, 16, 1));
put("boundary-entry-v2-raw-short", chr(0xC1) . $slot . entry(10, 8000, 16, 3));
put("boundary-entry-v2-unknown-flag", chr(0xC1) . $slot . entry(10, 8000, 16, 5));
# format 3 (128-byte units)
put("boundary-entry-v3-stored-over-block", chr(0x81) . $slot . entry(10, 8193, 65, 1));
put("boundary-entry-v3-units-over-max", chr(0x81) . $slot . entry(10, 8000, 81, 1));
put("boundary-entry-v3-units-under-stored", chr(0x81) . $slot . entry(10, 8000, 62, 1));
put("boundary-entry-v3-past-limit", chr(0x81) . $slot . entry(937, 8000, 64, 1));
put("boundary-entry-v3-raw-short", chr(0x81) . $slot . entry(10, 8000, 64, 3));
put("boundary-entry-v3-unknown-flag", chr(0x81) . $slot . entry(10, 8000, 64, 5));
put("boundary-entry-v3-dictionary", chr(0x81) . $slot . entry(10, 8000, 64, 0x11));
# header(algorithm, level, flags, nblocks [, version])
sub header { return PgStrata::PcsFile::make_header(@_); }
put("boundary-header-level-over", chr(0x80) . header(1, 20, 0, 0));
put("boundary-header-level-under", chr(0x80) . header(1, 0, 0, 0));
put("boundary-header-flags", chr(0x80) . header(2, 1, 1, 0));
put("boundary-header-flags-unknown", chr(0x80) . header(1, 1, 2, 0));
put("boundary-header-nblocks-over", chr(0x80) . header(1, 1, 0, 131073));
put("boundary-header-algorithm", chr(0x80) . header(3, 1, 0, 0));
put("boundary-header-version-1", chr(0x80) . header(1, 1, 0, 0, 1));
put("boundary-header-v2-units", chr(0x80) . header(1, 1, 0, 0, 2));
put("boundary-header-version-4", chr(0x80) . header(1, 1, 0, 0, 4));
# in an input, format 2 keeps its one block count at 40, format 3 its two
# copies at 64 and 72 (pcs_fuzz.c)
my $h = header(1, 1, 0, 7, 2);
put("boundary-header-nblocks-sound", chr(0) . $h);
substr($h, 40, 1) ^= chr(1);
put("boundary-header-nblocks-flipped", chr(0) . $h);
substr($h, 40, 8) = "\0" x 8;
put("boundary-header-nblocks-zeroed", chr(0) . $h);
$h = header(1, 1, 0, 7);
put("boundary-header-v3-nblocks-sound", chr(0) . $h);
substr($h, 64, 1) ^= chr(1);
put("boundary-header-v3-nblocks-one-copy", chr(0) . $h);
substr($h, 72, 8) = "\0" x 8;
put("boundary-header-v3-nblocks-no-copy", chr(0) . $h);
# format 5: a header, a directory slot and a map page number, then the
# two directory words of the header (pcs_fuzz.c); with operation byte 0x80 the
# harness seals each word that is not zero for the unit its complement
# names: a directory at unit 32 in both copies, one that would end a unit
# past the last, and (as they are) a damaged first copy beside a zeroed one
my $v5 = header(1, 1, 0, 200, 5);
my $slot5 = pack("V V v", ~64 & 0xFFFFFFFF, 0, 1);
put("boundary-header-v5-directory", chr(0x80) . $v5 . $slot5
	  . pack("V V V V", ~32 & 0xFFFFFFFF, 0, ~32 & 0xFFFFFFFF, 0));
put("boundary-header-v5-directory-past-end", chr(0x80) . $v5 . $slot5
	  . pack("V V V V", 31, 0, 31, 0));
put("boundary-header-v5-directory-damaged", chr(0) . $v5 . $slot5
	  . pack("V V V V", 5, 6, 0, 0));
# a segment of one block whose entry claims more than a block of image
put("boundary-segment-stored-over-block", chr(0x83) . header(1, 1, 0, 1, 2)
	  . entry(0, 8193, 17, 1) . ("\x55" x (512 * 20)));
put("boundary-segment-v3-stored-over-block", chr(0x83) . header(1, 1, 0, 1)
	  . entry(0, 8193, 65, 1) . ("\x55" x (128 * 80)));
# dictionaries (operation 7): a zstd header with the dictionaries flag, a
# current word, a number and a record (made sound by the harness), the
# dictionary and an image; raw-content dictionaries of text, one that
# starts with zstd'"'"'s dictionary magic and then garbage, one a byte too
# short and one a byte too long for a record, and a header without the flag
my $words = join(" ", map { ("carefully", "final", "deposits", "detect",
	"slyly", "furiously", "regular", "accounts")[($_ * 7) % 8] } 1 .. 400);
sub dict_input
{
	my ($flags, $number, $dict, $rest) = @_;
	return chr(0x87) . header(1, 1, $flags, 0) . pack("Q", 0) . chr($number)
	  . pack("V V V V", 7, 0, 0, 0) . pack("v", length($dict)) . $dict . $rest;
}
put("dictionary-text", dict_input(1, 1, substr($words, 0, 1024),
	substr($words, 500, 2500)));
put("dictionary-text-number-15", dict_input(1, 14, substr($words, 0, 4096),
	substr($words, 100)));
put("dictionary-magic-garbage", dict_input(1, 2,
	pack("V", 0xEC30A437) . ("\x5a\x01\xff\x00" x 200), substr($words, 0, 3000)));
put("dictionary-too-short", dict_input(1, 3, substr($words, 0, 255), $words));
put("dictionary-too-long", dict_input(1, 3, substr($words x 30, 0, 65537), ""));
put("dictionary-no-flag", dict_input(0, 1, substr($words, 0, 1024), $words));
' "$OUT"

# zstd TOAST values at the limits toast_zstd_parse() and
# toast_zstd_check_pointer() enforce, around one genuine frame: 2000 bytes
# of "pgstrata " compressed by zstd without content size and checksum, as
# zstd_compress_datum() writes it (window descriptor 0x08: 2^11 bytes).
perl -e '
use strict;
use warnings;
my ($out) = @ARGV;
sub put
{
	my ($name, $bytes) = @_;
	open my $fh, ">:raw", "$out/$name" or die "$out/$name: $!";
	print $fh $bytes;
	close $fh;
}
my $frame = pack("H*", "28b52ffd0008850000487067737472617461200100c4f32f47");
# tcinfo(pattern, rawsize): va_tcinfo as a little-endian machine stores it
sub tcinfo { my ($p, $n) = @_; return pack("V", ($p << 30) | $n); }
my $ext = tcinfo(3, 2000) . chr(2) . $frame;
my $leg = tcinfo(2, 2000) . $frame;
put("boundary-toast-sound", chr(5) . $ext);
put("boundary-toast-legacy-sound", chr(5) . $leg);
put("boundary-toast-method-1", chr(5) . tcinfo(3, 2000) . chr(1) . $frame);
put("boundary-toast-method-3", chr(5) . tcinfo(3, 2000) . chr(3) . $frame);
put("boundary-toast-method-255", chr(5) . tcinfo(3, 2000) . chr(255) . $frame);
put("boundary-toast-truncated", chr(5) . tcinfo(3, 2000));
put("boundary-toast-short-tcinfo", chr(5) . "\x01\x02\x03");
put("boundary-toast-rawsize-over", chr(5) . tcinfo(3, 0x3fffffff - 3) . chr(2) . $frame);
put("boundary-toast-rawsize-max", chr(5) . tcinfo(3, 0x3fffffff - 4) . chr(2) . $frame);
put("boundary-toast-frame-over-rawsize", chr(5) . tcinfo(3, length($frame) - 1) . chr(2) . $frame);
put("boundary-toast-frame-empty", chr(5) . tcinfo(2, 2000));
put("boundary-toast-pglz", chr(5) . tcinfo(0, 2000) . $frame);
put("boundary-toast-lz4", chr(5) . tcinfo(1, 2000) . chr(2) . $frame);
# the window descriptor asking for 2^26 bytes (exponent 16) for a value of
# 2000 bytes: the slice decoder must refuse it before allocating it
(my $wide = $frame) =~ s/^(.{5})./$1 . chr(16 << 3)/se;
put("boundary-toast-wide-window", chr(5) . tcinfo(3, 2000) . chr(2) . $wide);
# external: va_rawsize, va_extinfo, the chunks
sub ptr { my ($rawsize, $p, $len) = @_; return pack("V V", $rawsize, ($p << 30) | $len); }
put("boundary-toast-external-sound", chr(6) . ptr(2004, 3, length($ext)) . $ext);
put("boundary-toast-external-legacy-sound", chr(6) . ptr(2004, 2, length($leg)) . $leg);
put("boundary-toast-external-pattern", chr(6) . ptr(2004, 2, length($ext)) . $ext);
put("boundary-toast-external-pglz-pointer", chr(6) . ptr(2004, 0, length($ext)) . $ext);
put("boundary-toast-external-pglz-chunks", chr(6) . ptr(2004, 3, length($ext))
	  . tcinfo(0, 2000) . chr(2) . $frame);
put("boundary-toast-external-rawsize", chr(6) . ptr(2005, 3, length($ext)) . $ext);
put("boundary-toast-external-extsize", chr(6) . ptr(2004, 3, length($ext) + 1) . $ext);
put("boundary-toast-external-method", chr(6) . ptr(2004, 3, length($ext))
	  . tcinfo(3, 2000) . chr(7) . $frame);
' "$OUT"
