
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
  my $at = PgStrata::PcsFile::image_offset($e, $h);  # where its image lies
  PgStrata::PcsFile::flip($path, PgStrata::PcsFile::NBLOCKS_OFFSET);

=head1 DESCRIPTION

The one place where the TAP tests know the layout of a compressed segment
(src/backend/storage/smgr/README.pcs and src/include/storage/pcs_format.h):
a 4 kB header block, a map of 16-byte entries, one per block of the
segment, and a data area of 128-byte units (format 2: 512-byte units, and
the shared words in the first sector).  Where the map and the data area
lie depends on the segment's format version:

=over

=item formats 2 to 4

the map is a sparse 2 MB between the header and the data area, which
starts at V4_DATA_OFFSET; format 4 keeps the entries of blocks 0 to 95 in
the header's sectors 5 to 7 instead.

=item format 5

the header is format 4's, and the data area follows it at once
(V5_DATA_OFFSET).  Map page k holds the entries of blocks 256 k to
256 k + 255 (blocks 0 to 95 keep theirs in the header) and takes 32 units
of the data area; slot k of the map directory names its first unit
(complement in the low half, check in the high half; zero while the page
does not exist, all its entries empty).  The directory, 512 slots of 8
bytes, takes 32 units of the data area too, made with the first map
page; the header's two directory words (the second word of the sectors of
the block count's two copies, DIRECTORY_WORD_OFFSETS) name its first
unit in the same form.  A new segment is its header alone.

=back

So whatever finds an entry or an image takes the segment: its path, a
reference to the bytes of a whole file (C<\$bytes>), or what header()
returned for it (which remembers where it was read).  The header's shared
words and the directory's slots are decoded with their checks, computed
here independently of the server (CRC32C in Perl), so a test reading them
also checks what the server wrote.  Integers are little-endian, as on the
machines the tests run on.

=cut

package PgStrata::PcsFile;

use strict;
use warnings FATAL => 'all';

use Exporter 'import';

our @EXPORT_OK = qw(MAGIC FORMAT_VERSION HEADER_SIZE ENTRY_SIZE
  HEADER_ENTRIES HEADER_ENTRIES_OFFSET
  RELSEG_SIZE UNIT_SIZE ALLOC_OFFSET GENERATION_OFFSET
  NBLOCKS_OFFSET NBLOCKS2_OFFSET IDENTITY_COPY_OFFSET
  V4_MAP_OFFSET V4_MAP_SIZE V4_DATA_OFFSET
  DIRECTORY_SIZE DIRECTORY_WORD_OFFSETS V5_DATA_OFFSET
  MAP_PAGE_SIZE MAP_PAGE_ENTRIES MAP_PAGES
  data_offset compressed_files allocated copy_differences);

use constant {
	MAGIC => pack('H*', '50435331ffffff7f'),
	FORMAT_VERSION => 5,        # the one new segments are made in
	HEADER_ENTRIES => 96,       # formats 4, 5: entries of blocks 0-95 in the
	HEADER_ENTRIES_OFFSET => 2560,    # header's sectors 5 to 7
	HEADER_SIZE => 4096,
	ENTRY_SIZE => 16,
	RELSEG_SIZE => 131072,
	UNIT_SIZE => 128,           # format 2: 512
	ALLOC_OFFSET => 512,        # next free unit, then its check (format 2: 32)
	GENERATION_OFFSET => 520,   # generation, then its check (formats 3-5)
	NBLOCKS_OFFSET => 1024,     # complement of the block count, then its check
	NBLOCKS2_OFFSET => 1536,    # the second copy (format 2: one copy, at 40)
	DICT_OFFSET => 2048,        # the dictionary sector (formats 3-5): current
	                            # word, 8 reserved bytes, then 15 records
	IDENTITY_COPY_OFFSET => 2304,    # the copy of sector 0's 28 bytes of
	                                 # identity, then its check (formats 3-5)
	HEADER_CRC_OFFSET => 24,
	# formats 2 to 4: the map, one entry per block, then the data area
	V4_MAP_OFFSET => 4096,
	# format 5: the data area, which holds the directory and the map pages
	V5_DATA_OFFSET => 4096,
	DIRECTORY_SIZE => 4096,
	MAP_PAGE_SIZE => 4096,
	MAP_PAGE_ENTRIES => 256,
	MAP_PAGES => 512,
};
use constant V4_MAP_SIZE => RELSEG_SIZE * ENTRY_SIZE;
use constant V4_DATA_OFFSET => V4_MAP_OFFSET + V4_MAP_SIZE;
# format 5: where the two copies of the word naming the directory's first
# unit lie (each copy of the block count's sector holds one)
use constant DIRECTORY_WORD_OFFSETS => (NBLOCKS_OFFSET + 8, NBLOCKS2_OFFSET + 8);

# What the check of a shared header word covers (pcs_format.c)
my $WORD_NBLOCKS = 0x4e;
my $WORD_NBLOCKS_2 = 0x6e;
my $WORD_ALLOC = 0x41;
my $WORD_DICTIONARY = 0x44;
my $WORD_DICT_RECORD = 0x52;
my $WORD_MAP_PAGE = 0x4d;
my @WORD_DIRECTORY = (0x4c, 0x6c);

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
# 2560 bytes) as a hash: magic, version, algorithm, level, unit_shift, flags,
# blcksz, relseg_size, header_crc, header_crc_ok, unit_size, next_unit and
# alloc_check (the allocation word's halves: its check covers the server
# generation, which only the server knows), nblocks_words (1 or 2),
# nblocks_word_ok and nblocks_copy (each copy's count, undef unless the copy
# is sound and in range), nblocks (the larger sound copy, as the server
# reads it), alloc_offset and nblocks_offsets (where the words are),
# dictionaries (the records in use), segno, has_directory (format 5),
# directory_unit and directory_word_ok (format 5's directory words) and
# data_offset (where the data area starts)
sub parse_header
{
	my ($bytes, $segno) = @_;
	my %h;
	@h{qw(magic version algorithm level unit_shift flags blcksz relseg_size
		  header_crc)} = unpack('a8 V C c C C V V V', $bytes);
	$h{segno} = $segno // 0;
	$h{header_crc_ok} =
	  crc32c(substr($bytes, 0, HEADER_CRC_OFFSET)) == $h{header_crc};
	my $v2 = $h{version} == 2;
	$h{unit_size} = $v2 ? 512 : 128;
	$h{has_directory} = $h{version} >= 5 ? 1 : 0;
	$h{data_offset} = $h{has_directory} ? V5_DATA_OFFSET : V4_DATA_OFFSET;
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
		my $ok = word_check($h{header_crc}, $h{segno},
			$copy ? $WORD_NBLOCKS_2 : $WORD_NBLOCKS, 0, $count) == $check;
		$h{nblocks_word_ok}[$copy] = $ok ? 1 : 0;
		$h{nblocks_copy}[$copy] = ($ok && $count <= RELSEG_SIZE) ? $count : undef;
		$h{nblocks} = $h{nblocks_copy}[$copy]
		  if defined $h{nblocks_copy}[$copy]
		  && (!defined $h{nblocks} || $h{nblocks_copy}[$copy] > $h{nblocks});
	}
	# format 5: the directory words; directory_unit is the first unit of
	# the directory as the server finds it (the first sound copy that is not
	# zeros), undef if there is none; directory_word_ok says for each copy
	# whether it is sound (zeros are)
	$h{directory_word_ok} = [];
	for my $copy (0 .. 1)
	{
		last unless $h{has_directory};
		my ($low, $check) =
		  unpack('V V', substr($bytes, (DIRECTORY_WORD_OFFSETS)[$copy], 8));
		my $unit = ~$low & 0xFFFFFFFF;
		my $ok = ($low == 0 && $check == 0)
		  || word_check($h{header_crc}, $h{segno}, $WORD_DIRECTORY[$copy], 0,
			$unit) == $check;
		$h{directory_word_ok}[$copy] = $ok ? 1 : 0;
		$h{directory_unit} //= $unit if $ok && ($low || $check);
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

# header(SEGMENT [, SEGNO]): parse_header of a segment's header.  SEGMENT
# is the path of the file or a reference to its bytes; the hash remembers
# it (source), so that it can stand for the segment wherever one is taken.
# The checks of the header's words cover the segment number: a path's is
# taken from its name, bytes' is SEGNO (default 0).
sub header
{
	my ($src, $segno) = @_;
	my $h = parse_header(_read($src, 0, HEADER_ENTRIES_OFFSET),
		$segno // (ref $src ? 0 : segno($src)));
	$h->{source} = $src;
	return $h;
}

# _read(SEGMENT, OFFSET, LENGTH): bytes of a segment given by its path or a
# reference to its bytes (fewer at its end)
sub _read
{
	my ($src, $offset, $len) = @_;
	return read_bytes($src, $offset, $len) unless ref $src;
	return '' if $offset >= length($$src);
	return substr($$src, $offset, $len);
}

# _segment(SEGMENT [, WHAT]): the header of a segment given by its path, a
# reference to its bytes, or header(); dies naming WHAT if given a version
# number or nothing, where the segment's own layout is needed
sub _segment
{
	my ($src, $what) = @_;
	die(($what // 'this') . ' needs the segment (path, \\bytes or header()),'
		  . ' not ' . ($src // 'nothing') . ': where the map and the data area'
		  . ' lie depends on its format version')
	  unless defined $src && (ref $src || -e $src);
	return (ref $src eq 'HASH') ? $src : header($src);
}

# data_offset(SEGMENT or VERSION): where the data area of a segment (its
# path, \bytes or header()) or of a format version starts
sub data_offset
{
	my ($src) = @_;
	return ($src >= 5 ? V5_DATA_OFFSET : V4_DATA_OFFSET)
	  if defined $src && !ref $src && $src =~ /^\d$/;
	return _segment($src, 'data_offset')->{data_offset};
}

# directory_word(HEADER_CRC, SEGNO, PAGE, UNIT): the 8 bytes of the
# directory slot of a format 5 segment naming UNIT as map page PAGE's first
# (pcs_directory_word())
sub directory_word
{
	my ($header_crc, $segno, $page, $unit) = @_;
	return pack('V V', ~$unit & 0xFFFFFFFF,
		word_check($header_crc, $segno, $WORD_MAP_PAGE, $page, $unit));
}

# directory_location_word(HEADER_CRC, SEGNO, COPY, UNIT): the 8 bytes of
# copy COPY (0 or 1) of the header word of a format 5 segment naming UNIT
# as its directory's first (pcs_directory_location_word())
sub directory_location_word
{
	my ($header_crc, $segno, $copy, $unit) = @_;
	return pack('V V', ~$unit & 0xFFFFFFFF,
		word_check($header_crc, $segno, $WORD_DIRECTORY[$copy], 0, $unit));
}

# directory_offset(SEGMENT): where the directory of a format 5 segment (its
# path, \bytes or header()) lies; undef while it has none (no map page
# yet), and for formats 2 to 4.  Dies if neither directory word is sound
# and one is not zeros, as the server refuses to guess then.
sub directory_offset
{
	my ($src) = @_;
	my $h = _segment($src, 'directory_offset');
	return undef unless $h->{has_directory};
	die "neither directory word of the segment is sound"
	  if !defined $h->{directory_unit}
	  && grep { !$_ } @{ $h->{directory_word_ok} };
	return undef unless defined $h->{directory_unit};
	return $h->{data_offset} + $h->{unit_size} * $h->{directory_unit};
}

# directory(SEGMENT): the slots of a format 5 segment's directory that are
# not zero, as a list of hashes: page, unit (the complement of the low
# half), ok (the check matches), offset (of the slot in the file).  Past
# the end of the file every slot is zero.  Empty while the segment has no
# directory, and for formats 2 to 4.
sub directory
{
	my ($src) = @_;
	my $h = _segment($src, 'directory');
	my $at = directory_offset($h);
	return () unless defined $at;
	my $dir = _read($h->{source}, $at, DIRECTORY_SIZE);
	$dir .= "\0" x (DIRECTORY_SIZE - length($dir));
	my @slots;
	for my $k (0 .. MAP_PAGES - 1)
	{
		my ($low, $check) = unpack('V V', substr($dir, 8 * $k, 8));
		next unless $low || $check;
		my $unit = ~$low & 0xFFFFFFFF;
		push @slots,
		  {
			page => $k,
			unit => $unit,
			offset => $at + 8 * $k,
			ok => word_check($h->{header_crc}, $h->{segno}, $WORD_MAP_PAGE,
				$k, $unit) == $check ? 1 : 0
		  };
	}
	return @slots;
}

# map_pages(SEGMENT): page => first unit of each map page of a format 5
# segment (none for formats 2 to 4); dies if a slot fails its check, whose
# page's entries are then unknown
sub map_pages
{
	my ($src) = @_;
	my %pages;
	for my $s (directory($src))
	{
		die "directory slot $s->{page} of the segment fails its check"
		  unless $s->{ok};
		$pages{ $s->{page} } = $s->{unit};
	}
	return \%pages;
}

# metadata_units(SEGMENT): the units of the data area that a format 5
# segment's directory and map pages take (0 for formats 2 to 4): used,
# neither images nor garbage, as pgstrata_relation_compression() counts
# them
sub metadata_units
{
	my ($src) = @_;
	my $h = _segment($src, 'metadata_units');
	return 0 unless defined directory_offset($h);
	return (1 + scalar(keys %{ map_pages($h) })) * MAP_PAGE_SIZE
	  / $h->{unit_size};
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

# entry(SEGMENT, BLOCK): parse_entry of the map entry of a block of a
# segment (its path, \bytes or header()); all zeros, as the server reads it,
# for a block of format 5 whose map page does not exist
sub entry
{
	my ($src, $block) = @_;
	my $h = _segment($src, 'entry');
	my $at = _entry_offset($h, $block);
	return parse_entry("\0" x ENTRY_SIZE) unless defined $at;
	my $bytes = _read($h->{source}, $at, ENTRY_SIZE);
	return parse_entry($bytes . "\0" x (ENTRY_SIZE - length($bytes)));
}

# entry_offset(BLOCK [, SEGMENT or VERSION]): where a block's entry lies
# in a segment (its path, \bytes or header()), or in any segment of a
# format version (default: the current one) for blocks whose entry has a
# place fixed by the format: in formats 2 to 4 every block, in format 5
# those kept in the header (blocks below HEADER_ENTRIES).  Format 5 finds
# the others through its directory, so it needs the segment, and dies if
# the block's map page does not exist (its entry is empty, and lies
# nowhere).
sub entry_offset
{
	my ($block, $src) = @_;
	my $version = FORMAT_VERSION;
	if (defined $src && !ref $src && $src =~ /^\d$/)
	{
		$version = $src;
		undef $src;
	}
	$version = _segment($src)->{version} if defined $src;
	return HEADER_ENTRIES_OFFSET + ENTRY_SIZE * $block
	  if $version >= 4 && $block < HEADER_ENTRIES;
	return V4_MAP_OFFSET + ENTRY_SIZE * $block if $version < 5;
	my $at = _entry_offset(_segment($src, "entry_offset of block $block"),
		$block);
	die "block $block has no map page: its entry is empty and lies nowhere"
	  unless defined $at;
	return $at;
}

# _entry_offset(HEADER, BLOCK): where a block's entry lies, undef if its
# map page does not exist (format 5)
sub _entry_offset
{
	my ($h, $block) = @_;
	return HEADER_ENTRIES_OFFSET + ENTRY_SIZE * $block
	  if $h->{version} >= 4 && $block < HEADER_ENTRIES;
	return V4_MAP_OFFSET + ENTRY_SIZE * $block unless $h->{has_directory};
	my $unit = map_pages($h)->{ int($block / MAP_PAGE_ENTRIES) };
	return undef unless defined $unit;
	return $h->{data_offset} + $h->{unit_size} * $unit
	  + ENTRY_SIZE * ($block % MAP_PAGE_ENTRIES);
}

# image_offset(ENTRY, SEGMENT): where the image an entry of a segment (its
# path, \bytes or header()) points to lies
sub image_offset
{
	my ($e, $src) = @_;
	my $h = _segment($src, 'image_offset');
	return $h->{data_offset} + $h->{unit_size} * $e->{first};
}

# unit_offset(SEGMENT, UNIT): where a unit of a segment's data area lies
sub unit_offset
{
	my ($src, $unit) = @_;
	my $h = _segment($src, 'unit_offset');
	return $h->{data_offset} + $h->{unit_size} * $unit;
}

# flip_image(PATH, BLOCK): invert a byte in the middle of a block's image,
# which its data CRC then no longer matches
sub flip_image
{
	my ($path, $block) = @_;
	my $h = header($path);
	my $e = entry($h, $block);
	die "block $block of $path has no image" if $e->{stored} == 0;
	flip($path, image_offset($e, $h) + int($e->{stored} / 2));
}

# entries(SEGMENT): the map entries of every block of a segment (its path,
# \bytes or header()) that has storage, as [block, entry] pairs, in block
# order
sub entries
{
	my ($src) = @_;
	my $h = _segment($src, 'entries');
	my $map;
	if ($h->{has_directory})
	{
		# format 5: the map pages that exist, zeros for the others
		$map = "\0" x V4_MAP_SIZE;
		my $pages = map_pages($h);
		for my $k (keys %$pages)
		{
			my $page = _read($h->{source},
				$h->{data_offset} + $h->{unit_size} * $pages->{$k},
				MAP_PAGE_SIZE);
			substr($map, $k * MAP_PAGE_SIZE, length($page)) = $page;
		}
	}
	else
	{
		$map = _read($h->{source}, V4_MAP_OFFSET, V4_MAP_SIZE);
	}
	# formats 4 and 5: the first blocks' entries are in the header (map
	# page 0 leaves theirs unused)
	substr($map, 0, HEADER_ENTRIES * ENTRY_SIZE) =
	  _read($h->{source}, HEADER_ENTRIES_OFFSET, HEADER_ENTRIES * ENTRY_SIZE)
	  if $h->{version} >= 4;
	my @out;
	for my $b (0 .. length($map) / ENTRY_SIZE - 1)
	{
		my $bytes = substr($map, $b * ENTRY_SIZE, ENTRY_SIZE);
		next if $bytes eq "\0" x ENTRY_SIZE;
		push @out, [ $b, parse_entry($bytes) ];
	}
	return @out;
}

# extents(SEGMENT): what the units of a segment's data area are used for:
# [first unit, unit after the last, what] for every image ("block N"),
# dictionary ("dictionary N"), map page ("map page K") and the directory
# ("directory"), by first unit
sub extents
{
	my ($src) = @_;
	my $h = _segment($src, 'extents');
	my $unit = $h->{unit_size};
	my $pages = map_pages($h);
	return sort { $a->[0] <=> $b->[0] } (
		(map { [ $_->[1]{first}, $_->[1]{first} + $_->[1]{units}, "block $_->[0]" ] }
		  entries($h)),
		(map {
			my $d = $h->{dictionaries}{$_};
			[ $d->{first}, $d->{first} + int(($d->{bytes} + $unit - 1) / $unit),
			  "dictionary $_" ]
		} keys %{ $h->{dictionaries} }),
		(map { [ $pages->{$_}, $pages->{$_} + MAP_PAGE_SIZE / $unit,
			  "map page $_" ] } keys %$pages),
		(map { [ $_, $_ + DIRECTORY_SIZE / $unit, 'directory' ] }
		  grep { defined } $h->{directory_unit}));
}

# used_units(SEGMENT): the units of a segment's data area that images,
# dictionaries, map pages and the directory use; the others below the
# allocation word's next free unit are garbage
sub used_units
{
	my ($src) = @_;
	my $sum = 0;
	$sum += $_->[1] - $_->[0] for extents($src);
	return $sum;
}

# overlaps(SEGMENT): the pairs of blocks of a segment whose images share a
# unit (or an image and a dictionary, a map page or the directory:
# "dictionary N", "map page K", "directory"), as "A/B" separated by
# spaces; '' when there are none
sub overlaps
{
	my ($src) = @_;
	my @extents = extents($src);
	my @bad;
	for my $i (1 .. $#extents)
	{
		my ($x, $y) = map { (my $w = $_->[2]) =~ s/^block //; $w }
		  @extents[ $i - 1, $i ];
		push @bad, "$x/$y" if $extents[$i][0] < $extents[ $i - 1 ][1];
	}
	return join(' ', @bad);
}

# _identity_copy(HEAD): the 32 bytes of the copy of a header block's
# identity (pcs_identity_copy_set())
sub _identity_copy
{
	my ($head) = @_;
	my $fields = substr($head, 0, 28);
	return $fields . pack('V', crc32c('I' . $fields));
}
# _reversion_header(\HEADER, VERSION, SEGNO, NBLOCKS): make the 4 kB header
# block HEADER one of format VERSION (3 or 4): its version, header CRC and
# identity copy, the allocation and generation words void (the next
# allocation recomputes them), both block count words for NBLOCKS;
# returns the new header CRC
sub _reversion_header
{
	my ($head, $version, $segno, $nblocks) = @_;
	substr($$head, 8, 4) = pack('V', $version);
	my $crc = crc32c(substr($$head, 0, HEADER_CRC_OFFSET));
	substr($$head, HEADER_CRC_OFFSET, 4) = pack('V', $crc);
	substr($$head, IDENTITY_COPY_OFFSET, 32) = _identity_copy($$head);
	substr($$head, ALLOC_OFFSET, 16) = "\0" x 16;
	substr($$head, NBLOCKS_OFFSET, 8) = nblocks_word($crc, $segno, $nblocks, 0);
	substr($$head, NBLOCKS2_OFFSET, 8) =
	  nblocks_word($crc, $segno, $nblocks, 1);
	return $crc;
}


# to_format_4(PATH): rewrite a format 5 segment of a stopped server as the
# format 4 file a build of 2026 before the directory would have made of
# it, keeping every unit's number: the data area moves from
# V5_DATA_OFFSET to V4_DATA_OFFSET whole, the entries kept in map pages
# move to their places in the 2 MB map (sparse: only its pages that hold
# entries are written), the directory words become zeros, and the header
# gets version 4 and the checks that follow from it (header CRC,
# identity's copy, block count words, dictionary records and a ready
# dictionary's word; the allocation and generation words are left void: a
# server finds the next free unit again from the file, as after any
# restart).  The units of the directory and the map pages stay, as garbage
# of format 4.  For tests that format 4 segments stay readable and
# writable.  Returns the segment's block count.
sub to_format_4
{
	my ($path) = @_;
	my $h = header($path);
	die "$path is not of format 5" unless $h->{version} == 5;
	my $segno = segno($path);
	my @entries = grep { $_->[0] >= HEADER_ENTRIES } entries($h);
	my $size = -s $path;
	my $data =
	  $size > V5_DATA_OFFSET
	  ? read_bytes($path, V5_DATA_OFFSET, $size - V5_DATA_OFFSET)
	  : '';

	my $head = read_bytes($path, 0, HEADER_SIZE);
	my $crc = _reversion_header(\$head, 4, $segno, $h->{nblocks});
	substr($head, $_, 8) = "\0" x 8 for DIRECTORY_WORD_OFFSETS;
	_recheck_dictionaries(\$head, $h, $crc);

	truncate($path, HEADER_SIZE) or die "truncate $path: $!";
	truncate($path, V4_DATA_OFFSET) or die "truncate $path: $!";
	write_bytes($path, V4_DATA_OFFSET, $data) if length $data;
	write_bytes($path, V4_MAP_OFFSET + ENTRY_SIZE * $_->[0], $_->[1]{raw})
	  for @entries;
	write_bytes($path, 0, $head);
	return $h->{nblocks};
}

# _recheck_dictionaries(\HEAD, HEADER, NEW_CRC): give the dictionary
# records of a header block (parsed as HEADER) and its current word, if it
# names a ready dictionary, the checks that a header CRC of NEW_CRC asks
# for (both cover it); an installation's word is void in any case
sub _recheck_dictionaries
{
	my ($head, $h, $crc) = @_;
	my $segno = $h->{segno};
	for my $n (keys %{ $h->{dictionaries} })
	{
		my $r = $h->{dictionaries}{$n};
		substr($$head, $r->{offset} + 12, 4) = pack('V',
			crc32c(
				pack('V6 V', $crc, $segno, $WORD_DICT_RECORD, $n,
					$r->{first}, $r->{bytes}, $r->{data_crc})));
	}
	my ($value, $check) = unpack('V V', substr($$head, DICT_OFFSET, 8));
	my $ready = !($value & 0x100)
	  && $check == word_check($h->{header_crc}, $segno, $WORD_DICTIONARY, 0,
		$value);
	substr($$head, DICT_OFFSET, 8) =
	  $ready
	  ? pack('V V', $value, word_check($crc, $segno, $WORD_DICTIONARY, 0, $value))
	  : "\0" x 8;
}

# to_format_2(PATH): rewrite a segment of format 3, 4 or 5 of a stopped
# server as the format 2 file an earlier build would have made of the same
# pages: the shared words in the first sector, one copy of the block
# count, images in 512-byte units (renumbered from 0), the 2 MB map.  For
# tests that format 2 segments stay readable and writable.  Returns the
# units of the data area.
sub to_format_2
{
	my ($path) = @_;
	my $h = header($path);
	die "$path is not of format 3, 4 or 5" unless $h->{version} >= 3;
	die "$path has compression dictionaries, which format 2 cannot hold"
	  if %{ $h->{dictionaries} };
	if ($h->{version} == 5)
	{
		to_format_4($path);
		$h = header($path);
	}
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
		my $e = entry($h, $b);
		if ($e->{raw} eq "\0" x ENTRY_SIZE)
		{
			$map .= $e->{raw};
			next;
		}
		my $image = read_bytes($path, image_offset($e, $h), $e->{stored});
		my $units = int(($e->{stored} + 511) / 512);
		my $bytes = pack('V v C C V', $next, $e->{stored}, $units,
			$e->{flags}, $e->{data_crc});
		$map .= $bytes . pack('V', crc32c($bytes . pack('V', $b)));
		$data .= $image . ("\0" x ($units * 512 - length($image)));
		$next += $units;
	}
	# nothing of the old map or data area stays
	truncate($path, HEADER_SIZE) or die "truncate $path: $!";
	truncate($path, V4_DATA_OFFSET) or die "truncate $path: $!";
	write_bytes($path, 0, $head . ("\0" x (HEADER_SIZE - length($head))));
	write_bytes($path, V4_MAP_OFFSET, $map);
	write_bytes($path, V4_DATA_OFFSET, $data);
	return $next;
}

# to_format_3(PATH): rewrite a format 4 segment of a stopped server (or a
# format 5 one, through to_format_4()) as the format 3 file a build of
# 2026-11-24 would have made of it: the entries kept in the header move to
# their places in the map, sectors 5 to 7 become zeros, the version 3, and
# the header's checks follow (the identity's copy too; the allocation and
# generation words are left void: a server finds the next free unit again
# from the file, as after any restart).  For tests that format 3 segments
# stay readable and writable.  Returns the segment's block count.
sub to_format_3
{
	my ($path) = @_;
	my $h = header($path);
	die "$path is not of format 4 or 5"
	  unless $h->{version} == 4 || $h->{version} == 5;
	# their records' checks cover the header
	die "$path has compression dictionaries: not converted"
	  if %{ $h->{dictionaries} };
	if ($h->{version} == 5)
	{
		to_format_4($path);
		$h = header($path);
	}
	my $segno = segno($path);
	my $in_header =
	  read_bytes($path, HEADER_ENTRIES_OFFSET, HEADER_ENTRIES * ENTRY_SIZE);
	my $head = read_bytes($path, 0, HEADER_SIZE);
	_reversion_header(\$head, 3, $segno, $h->{nblocks});
	substr($head, HEADER_ENTRIES_OFFSET) =
	  "\0" x (HEADER_SIZE - HEADER_ENTRIES_OFFSET);
	write_bytes($path, V4_MAP_OFFSET, $in_header)
	  unless $in_header eq "\0" x length($in_header);
	write_bytes($path, 0, $head);
	return $h->{nblocks};
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
