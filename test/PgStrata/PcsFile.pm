
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::PcsFile - read and damage compressed (pcs) segment files in tests

=head1 SYNOPSIS

  use PgStrata::PcsFile;

  my $path = PgStrata::PcsFile::relation_path($node, 'postgres', 't');
  ok(PgStrata::PcsFile::is_compressed($path));
  my $h = PgStrata::PcsFile::header($path);   # fields, words decoded
  my $e = PgStrata::PcsFile::entry($path, 3); # map entry of block 3
  PgStrata::PcsFile::flip($path, PgStrata::PcsFile::NBLOCKS_OFFSET);

=head1 DESCRIPTION

The one place where the TAP tests know the layout of a compressed segment
(src/backend/storage/smgr/README.pcs and src/include/storage/pcs_format.h):
a 4 kB header block, a map of 16-byte entries, one per block of the
segment, then the data area of 128-byte units (format 3; format 2
segments have 512-byte units and keep their shared words in the first
sector).  The header's shared words are decoded with their checks,
computed here independently of the server (CRC32C in Perl), so a test
reading them also checks what the server wrote.  Integers are
little-endian, as on the machines the tests run on.

=cut

package PgStrata::PcsFile;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';

our @EXPORT_OK = qw(MAGIC FORMAT_VERSION HEADER_SIZE MAP_OFFSET ENTRY_SIZE
  HEADER_ENTRIES HEADER_ENTRIES_OFFSET
  RELSEG_SIZE DATA_OFFSET UNIT_SIZE ALLOC_OFFSET GENERATION_OFFSET
  NBLOCKS_OFFSET NBLOCKS2_OFFSET IDENTITY_COPY_OFFSET compressed_files
  allocated copy_differences);

use constant {
	MAGIC => pack('H*', '50435331ffffff7f'),
	FORMAT_VERSION => 4,
	HEADER_ENTRIES => 96,       # format 4: entries of blocks 0-95 in the
	HEADER_ENTRIES_OFFSET => 2560,    # header's sectors 5 to 7
	HEADER_SIZE => 4096,
	MAP_OFFSET => 4096,
	ENTRY_SIZE => 16,
	RELSEG_SIZE => 131072,
	UNIT_SIZE => 128,           # format 2: 512
	ALLOC_OFFSET => 512,        # next free unit, then its check (format 2: 32)
	GENERATION_OFFSET => 520,   # generation, then its check (format 3 only)
	NBLOCKS_OFFSET => 1024,     # complement of the block count, then its check
	NBLOCKS2_OFFSET => 1536,    # the second copy (format 2: one copy, at 40)
	DICT_OFFSET => 2048,        # the dictionary sector (format 3): current
	                            # word, 8 reserved bytes, then 15 records
	IDENTITY_COPY_OFFSET => 2304,    # the copy of sector 0's 28 bytes of
	                                 # identity, then its check (formats 3, 4)
	HEADER_CRC_OFFSET => 24,
};
use constant DATA_OFFSET => MAP_OFFSET + RELSEG_SIZE * ENTRY_SIZE;

# What the check of a shared header word covers (pcs_format.c)
my $WORD_NBLOCKS = 0x4e;
my $WORD_NBLOCKS_2 = 0x6e;
my $WORD_ALLOC = 0x41;

my @crc_table;

# crc32c(BYTES): CRC-32C (Castagnoli) of a string of bytes, as
# PostgreSQL's pg_crc32c computes it
sub crc32c
{
	my ($bytes) = @_;
	if (!@crc_table)
	{
		for my $i (0 .. 255)
		{
			my $c = $i;
			$c = ($c & 1) ? (($c >> 1) ^ 0x82F63B78) : ($c >> 1) for 1 .. 8;
			push @crc_table, $c;
		}
	}
	my $crc = 0xFFFFFFFF;
	$crc = $crc_table[ ($crc ^ $_) & 0xFF ] ^ ($crc >> 8)
	  for unpack('C*', $bytes);
	return $crc ^ 0xFFFFFFFF;
}

# relation_path(NODE, DB, REL): the path of segment 0 of a relation's main fork
sub relation_path
{
	my ($node, $db, $rel) = @_;
	return $node->data_dir . '/'
	  . $node->safe_psql($db, "SELECT pg_relation_filepath('$rel')");
}

# segno(PATH): the segment number a file name carries (".N"), else 0
sub segno
{
	my ($path) = @_;
	return $path =~ m{\.(\d+)$} ? $1 : 0;
}

# relation_is_compressed(NODE, DB, REL): is segment 0 of the relation's
# main fork a compressed segment?
sub relation_is_compressed
{
	return is_compressed(relation_path(@_));
}

# read_bytes(PATH, OFFSET, LENGTH): bytes of a file (fewer at its end);
# without OFFSET and LENGTH, the whole file
sub read_bytes
{
	my ($path, $offset, $len) = @_;
	open my $fh, '<:raw', $path or die "open $path: $!";
	my $bytes = '';
	if (defined $offset)
	{
		seek $fh, $offset, 0 or die "seek $path: $!";
		read $fh, $bytes, $len // die 'read_bytes: no length';
	}
	else
	{
		local $/;
		$bytes = <$fh> // '';
	}
	close $fh;
	return $bytes;
}

# write_bytes(PATH, OFFSET, BYTES): overwrite bytes of a file in place;
# OFFSET undef replaces the whole file
sub write_bytes
{
	my ($path, $offset, $bytes) = @_;
	open my $fh, (defined $offset ? '+<:raw' : '>:raw'), $path
	  or die "open $path: $!";
	seek $fh, $offset, 0 or die "seek $path: $!" if defined $offset;
	print $fh $bytes or die "write $path: $!";
	close $fh or die "close $path: $!";
}

# flip(PATH, OFFSET [, MASK]): invert the bits of MASK (default all) in one
# byte of a file
sub flip
{
	my ($path, $offset, $mask) = @_;
	my $b = read_bytes($path, $offset, 1);
	write_bytes($path, $offset, chr(ord($b) ^ ($mask // 0xff)));
}

# file_head(PATH): the first 8 bytes of a file
sub file_head
{
	my ($path) = @_;
	return read_bytes($path, 0, 8);
}

# is_compressed(PATH): does the file start with the pcs magic?
sub is_compressed
{
	my ($path) = @_;
	return file_head($path) eq MAGIC;
}

# word_check(HEADER_CRC, SEGNO, KIND, GENERATION, VALUE): the check half of
# a shared header word (pcs_word_check())
sub word_check
{
	return crc32c(pack('V5', @_));
}

# nblocks_word(HEADER_CRC, SEGNO, COUNT [, COPY]): the 8 bytes of copy COPY
# (0 or 1) of the block count word holding COUNT
sub nblocks_word
{
	my ($header_crc, $segno, $count, $copy) = @_;
	return pack('V V', ~$count & 0xFFFFFFFF,
		word_check($header_crc, $segno,
			($copy // 0) ? $WORD_NBLOCKS_2 : $WORD_NBLOCKS, 0, $count));
}

# parse_header(BYTES [, SEGNO]): the fields of a segment header (its first
# 2048 bytes) as a hash: magic, version, algorithm, level, unit_shift, flags,
# blcksz, relseg_size, header_crc, header_crc_ok, unit_size, next_unit and
# alloc_check (the allocation word's halves: its check covers the server
# generation, which only the server knows), nblocks_words (1 or 2),
# nblocks_word_ok and nblocks_copy (each copy's count, undef unless the copy
# is sound and in range), nblocks (the larger sound copy, as the server
# reads it), and alloc_offset and nblocks_offsets (where the words are)
sub parse_header
{
	my ($bytes, $segno) = @_;
	my %h;
	@h{qw(magic version algorithm level unit_shift flags blcksz relseg_size
		  header_crc)} = unpack('a8 V C c C C V V V', $bytes);
	$h{header_crc_ok} =
	  crc32c(substr($bytes, 0, HEADER_CRC_OFFSET)) == $h{header_crc};
	my $v2 = $h{version} == 2;
	$h{unit_size} = $v2 ? 512 : 128;
	$h{alloc_offset} = $v2 ? 32 : ALLOC_OFFSET;
	$h{nblocks_offsets} = $v2 ? [40] : [ NBLOCKS_OFFSET, NBLOCKS2_OFFSET ];
	$h{nblocks_words} = scalar @{ $h{nblocks_offsets} };
	@h{qw(next_unit alloc_check)} =
	  unpack('V V', substr($bytes, $h{alloc_offset}, 8));
	$h{nblocks_word_ok} = [];
	$h{nblocks_copy} = [];
	for my $copy (0 .. $h{nblocks_words} - 1)
	{
		my ($low, $check) =
		  unpack('V V', substr($bytes, $h{nblocks_offsets}[$copy], 8));
		my $count = ~$low & 0xFFFFFFFF;
		my $ok = word_check($h{header_crc}, $segno // 0,
			$copy ? $WORD_NBLOCKS_2 : $WORD_NBLOCKS, 0, $count) == $check;
		$h{nblocks_word_ok}[$copy] = $ok ? 1 : 0;
		$h{nblocks_copy}[$copy] = ($ok && $count <= RELSEG_SIZE) ? $count : undef;
		$h{nblocks} = $h{nblocks_copy}[$copy]
		  if defined $h{nblocks_copy}[$copy]
		  && (!defined $h{nblocks} || $h{nblocks_copy}[$copy] > $h{nblocks});
	}
	# dictionary records in use (not all zeros), by number: first (unit),
	# bytes, data_crc, record_crc, offset (of the record in the file)
	$h{dictionaries} = {};
	for my $n (1 .. 15)
	{
		last if $v2 || length($bytes) < DICT_OFFSET + 16 + 16 * $n;
		my $off = DICT_OFFSET + 16 + 16 * ($n - 1);
		my %r;
		@r{qw(first bytes data_crc record_crc)} =
		  unpack('V V V V', substr($bytes, $off, 16));
		next unless $r{first} || $r{bytes} || $r{data_crc} || $r{record_crc};
		$r{offset} = $off;
		$h{dictionaries}{$n} = \%r;
	}
	return \%h;
}

# header(PATH): parse_header of a segment file's header
sub header
{
	my ($path) = @_;
	return parse_header(read_bytes($path, 0, DICT_OFFSET + 512), segno($path));
}

# make_header(ALGORITHM, LEVEL, FLAGS, NBLOCKS [, VERSION]): a segment 0
# header with sound checks as the fuzz target's inputs hold it: 512 bytes,
# the first sector's 48, then format 3's four shared words (pcs_fuzz.c)
sub make_header
{
	my ($algo, $level, $flags, $nblocks, $version) = @_;
	$version //= FORMAT_VERSION;
	my $fixed = pack('a8 V C c C C V V', MAGIC, $version,
		$algo, $level, $version == 2 ? 9 : 7, $flags, 8192, RELSEG_SIZE);
	my $crc = crc32c($fixed);
	my $h = $fixed . pack('V V', $crc, 0);
	if ($version == 2)
	{
		$h .= pack('Q', 0) . nblocks_word($crc, 0, $nblocks);
	}
	else
	{
		$h .= "\0" x 16 . pack('Q Q', 0, 0)
		  . nblocks_word($crc, 0, $nblocks, 0)
		  . nblocks_word($crc, 0, $nblocks, 1);
	}
	return $h . ("\0" x (512 - length($h)));
}

# parse_entry(BYTES): a 16-byte map entry as a hash: first (unit), stored
# (bytes), units, flags, data_crc, entry_crc, raw (the bytes)
sub parse_entry
{
	my ($bytes) = @_;
	my %e;
	@e{qw(first stored units flags data_crc entry_crc)} =
	  unpack('V v C C V V', $bytes);
	$e{raw} = $bytes;
	return \%e;
}

# entry(PATH, BLOCK): parse_entry of the map entry of a block of a segment
sub entry
{
	my ($path, $block) = @_;
	return parse_entry(
		read_bytes($path, entry_offset($block, header($path)->{version}),
			ENTRY_SIZE));
}

# entry_offset(BLOCK [, VERSION]), image_offset(ENTRY): where a block's
# entry lies in a segment of that format version (default: the current
# one, whose first HEADER_ENTRIES blocks have theirs in the header), and
# where the image an entry points to lies
sub entry_offset
{
	my ($block, $version) = @_;
	$version //= FORMAT_VERSION;
	return HEADER_ENTRIES_OFFSET + ENTRY_SIZE * $block
	  if $version >= 4 && $block < HEADER_ENTRIES;
	return MAP_OFFSET + ENTRY_SIZE * $block;
}

# (UNIT_SIZE_OF_SEGMENT defaults to format 3's; header()->{unit_size} has
# the one of a given file)
sub image_offset
{
	my ($e, $unit_size) = @_;
	return DATA_OFFSET + ($unit_size // UNIT_SIZE) * $e->{first};
}

# flip_image(PATH, BLOCK): invert a byte in the middle of a block's image,
# which its data CRC then no longer matches
sub flip_image
{
	my ($path, $block) = @_;
	my $e = entry($path, $block);
	die "block $block of $path has no image" if $e->{stored} == 0;
	flip($path,
		image_offset($e, header($path)->{unit_size}) + int($e->{stored} / 2));
}

# entries(PATH): the map entries of every block of a segment that has
# storage, as [block, entry] pairs, in block order
sub entries
{
	my ($path) = @_;
	my $map = read_bytes($path, MAP_OFFSET, RELSEG_SIZE * ENTRY_SIZE);
	# format 4: the first blocks' entries are in the header
	substr($map, 0, HEADER_ENTRIES * ENTRY_SIZE) =
	  read_bytes($path, HEADER_ENTRIES_OFFSET, HEADER_ENTRIES * ENTRY_SIZE)
	  if header($path)->{version} >= 4;
	my @out;
	for my $b (0 .. length($map) / ENTRY_SIZE - 1)
	{
		my $bytes = substr($map, $b * ENTRY_SIZE, ENTRY_SIZE);
		next if $bytes eq "\0" x ENTRY_SIZE;
		push @out, [ $b, parse_entry($bytes) ];
	}
	return @out;
}

# to_format_2(PATH): rewrite a format 3 or 4 segment of a stopped server as the
# format 2 file an earlier build would have made of the same pages: the
# shared words in the first sector, one copy of the block count, images in
# 512-byte units.  For tests that format 2 segments stay readable and
# writable.
sub to_format_2
{
	my ($path) = @_;
	my $h = header($path);
	die "$path is not of format 3 or 4" unless $h->{version} >= 3;
	die "$path has compression dictionaries, which format 2 cannot hold"
	  if %{ $h->{dictionaries} };
	my $segno = segno($path);
	my $nblocks = $h->{nblocks};
	my $fixed = pack('a8 V C c C C V V', MAGIC, 2, $h->{algorithm},
		$h->{level}, 9, 0, 8192, RELSEG_SIZE);
	my $crc = crc32c($fixed);
	my $head = $fixed . pack('V V', $crc, 0) . pack('Q', 0)
	  . nblocks_word($crc, $segno, $nblocks, 0);
	my ($map, $data, $next) = ('', '', 0);
	for my $b (0 .. $nblocks - 1)
	{
		my $e = entry($path, $b);
		if ($e->{raw} eq "\0" x ENTRY_SIZE)
		{
			$map .= $e->{raw};
			next;
		}
		my $image =
		  read_bytes($path, image_offset($e, $h->{unit_size}), $e->{stored});
		my $units = int(($e->{stored} + 511) / 512);
		my $bytes = pack('V v C C V', $next, $e->{stored}, $units,
			$e->{flags}, $e->{data_crc});
		$map .= $bytes . pack('V', crc32c($bytes . pack('V', $b)));
		$data .= $image . ("\0" x ($units * 512 - length($image)));
		$next += $units;
	}
	truncate($path, DATA_OFFSET) or die "truncate $path: $!";
	write_bytes($path, 0, $head . ("\0" x (HEADER_SIZE - length($head))));
	write_bytes($path, MAP_OFFSET, $map);
	write_bytes($path, DATA_OFFSET, $data);
	return $next;
}

# to_format_3(PATH): rewrite a format 4 segment of a stopped server as the
# format 3 file a build of 2026-11-24 would have made of it: the entries
# kept in the header move to their places in the map, sectors 5 to 7 become
# zeros, the version 3, and the header's checks follow (the allocation and
# generation words are left void: a server finds the next free unit again
# from the file, as after any restart).  For tests that format 3 segments
# stay readable and writable.
sub to_format_3
{
	my ($path) = @_;
	my $h = header($path);
	die "$path is not of format 4" unless $h->{version} == 4;
	# their records' checks cover the header
	die "$path has compression dictionaries: not converted"
	  if %{ $h->{dictionaries} };
	my $segno = segno($path);
	my $in_header =
	  read_bytes($path, HEADER_ENTRIES_OFFSET, HEADER_ENTRIES * ENTRY_SIZE);
	my $head = read_bytes($path, 0, HEADER_SIZE);
	substr($head, 8, 4) = pack('V', 3);
	my $crc = crc32c(substr($head, 0, HEADER_CRC_OFFSET));
	substr($head, HEADER_CRC_OFFSET, 4) = pack('V', $crc);
	substr($head, ALLOC_OFFSET, 16) = "\0" x 16;
	substr($head, NBLOCKS_OFFSET, 8) =
	  nblocks_word($crc, $segno, $h->{nblocks}, 0);
	substr($head, NBLOCKS2_OFFSET, 8) =
	  nblocks_word($crc, $segno, $h->{nblocks}, 1);
	substr($head, HEADER_ENTRIES_OFFSET) =
	  "\0" x (HEADER_SIZE - HEADER_ENTRIES_OFFSET);
	write_bytes($path, MAP_OFFSET, $in_header)
	  unless $in_header eq "\0" x length($in_header);
	write_bytes($path, 0, $head);
	return $h->{nblocks};
}

# overlaps(PATH): the pairs of blocks of a segment whose images share a
# unit (or an image and a dictionary: "dictionary N"), as "A/B" separated by
# spaces; '' when there are none
sub overlaps
{
	my ($path) = @_;
	my $h = header($path);
	my $unit = $h->{unit_size};
	my @extents = sort { $a->[0] <=> $b->[0] } (
		(map { [ $_->[1]{first}, $_->[1]{first} + $_->[1]{units}, $_->[0] ] }
		  entries($path)),
		(map {
			my $d = $h->{dictionaries}{$_};
			[ $d->{first}, $d->{first} + int(($d->{bytes} + $unit - 1) / $unit),
			  "dictionary $_" ]
		} keys %{ $h->{dictionaries} }));
	my @bad;
	for my $i (1 .. $#extents)
	{
		push @bad, "$extents[$i-1][2]/$extents[$i][2]"
		  if $extents[$i][0] < $extents[ $i - 1 ][1];
	}
	return join(' ', @bad);
}

# compressed_files(DIR): relative path => [length, allocated bytes, inode]
# of every compressed segment under DIR, its subdirectories included
sub compressed_files
{
	my ($top) = @_;
	my %files;
	my @dirs = ($top);
	while (my $dir = shift @dirs)
	{
		opendir my $dh, $dir or die "opendir $dir: $!";
		for my $f (grep { !/^\.\.?$/ } readdir $dh)
		{
			my $path = "$dir/$f";
			if (-d $path)
			{
				push @dirs, $path;
				next;
			}
			next unless -f $path && is_compressed($path);
			my @st = stat $path;
			(my $rel = $path) =~ s{^\Q$top\E/}{};
			$files{$rel} = [ $st[7], $st[12] * 512, $st[1] ];
		}
		closedir $dh;
	}
	return \%files;
}

# allocated(FILES): the bytes a set of compressed_files() takes on disk
sub allocated
{
	my ($files) = @_;
	my $sum = 0;
	$sum += $_->[1] for values %$files;
	return $sum;
}

# copy_differences(FROMDIR, FROM, TODIR, TO): the segments of FROM (a
# compressed_files() of FROMDIR) missing from TO (one of TODIR), and those
# whose copy differs in length or bytes, as two space-separated lists
sub copy_differences
{
	my ($fromdir, $from, $todir, $to) = @_;
	require File::Compare;
	my @missing = grep { !exists $to->{$_} } sort keys %$from;
	my @differ = grep {
		exists $to->{$_}
		  && ($to->{$_}[0] != $from->{$_}[0]
			|| File::Compare::compare("$fromdir/$_", "$todir/$_") != 0)
	} sort keys %$from;
	return ("@missing", "@differ");
}

1;
