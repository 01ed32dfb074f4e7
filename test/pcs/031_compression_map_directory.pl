
# Copyright (c) 2026, pgstrata developers

# The map of format 5: pages of entries in the data area, found through a
# directory that the header locates (README.pcs, "The map directory").
#
# 1. A file's size follows its data, holes or not.  Formats 2 to 4 kept a
#    sparse 2 MB map between the header and the data area, so that a copy
#    that writes holes out (pgBackRest's and WAL-G's restores, rsync
#    without -S) made every non-empty compressed fork 2 MB or more.  Here
#    no compressed file has a hole after a load, and such a copy of the
#    tablespace takes what the tablespace takes.
# 2. Two processes that make the same map page at once: the one whose
#    directory slot store loses gives its units back and stores its entry
#    into the winner's page.  A build that let the second store overwrite
#    the slot would leave the winner's entries in a page nothing names: its
#    block would read as a zero page, and its rows would be gone.
# 3. Damage: one copy of the header's directory word costs nothing; both
#    make the blocks past the header's entries an ERROR naming the file (the
#    first 96 blocks and the server stay up); a damaged directory slot is an
#    ERROR naming the slot and its blocks, and other map pages read on; a
#    slot naming a page past the end of the file is an ERROR outside
#    recovery, not a page of empty entries.

use strict;
use warnings FATAL => 'all';

use File::Find;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('dir',
	conf => q(
wal_log_hints = on
autovacuum = off
shared_buffers = 16MB
# the background writer would write the blocks of section 2 first
bgwriter_lru_maxpages = 0
),
	extensions => [qw(amcheck injection_points pg_buffercache pgstrata)]);

# Offsets of format 5 (pcs_format.h): the data area follows the 4 kB
# header; the directory words are the second words of sectors 2 and 3.
my $data_offset = 4096;
my @directory_word = (1032, 1544);

# path(REL): the file of a relation's main fork
sub path
{
	my ($rel) = @_;
	return $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$rel')");
}

# word(PATH, OFFSET): the 64-bit little-endian word at OFFSET of a file
sub word
{
	my ($path, $offset) = @_;
	return unpack('Q<', PgStrata::PcsFile::read_bytes($path, $offset, 8));
}

# place(WORD): the unit a directory word or slot names (no check: the
# server checks them, the test only finds what they name)
sub place
{
	my ($w) = @_;
	return (~$w) & 0xffffffff;
}

# entry_bytes(PATH, BLOCK): the 16 bytes of a block's entry past the
# header's 96, found through the directory as the server finds it
sub entry_bytes
{
	my ($path, $block) = @_;
	my $directory = place(word($path, $directory_word[0]));
	my $slot = word($path, $data_offset + $directory * 128 + 8 * int($block / 256));
	return undef if $slot == 0;
	return PgStrata::PcsFile::read_bytes($path,
		$data_offset + place($slot) * 128 + 16 * ($block % 256), 16);
}

# 1. A table of about 430 blocks with its primary key: map pages 0 and 1.
$node->safe_psql('postgres', q(
CREATE TABLE big (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text)
  TABLESPACE cts;
INSERT INTO big SELECT g, repeat(md5(g::text), 6) FROM generate_series(1, 15000) g;
CHECKPOINT;
));
my $big = path('big');
my $nblocks = $node->safe_psql('postgres',
	q(SELECT count(DISTINCT (ctid::text::point)[0]) FROM big));
cmp_ok($nblocks, '>', 300, "the table has $nblocks blocks, past map page 0");
is(PgStrata::PcsFile::header($big)->{version}, 5, 'in format 5');
isnt(word($big, $directory_word[0]), 0, 'the header locates a directory');
is( place(word($big, $directory_word[1])),
	place(word($big, $directory_word[0])),
	'in both copies of its word');
ok(defined entry_bytes($big, 300)
	  && entry_bytes($big, 300) ne "\0" x 16,
	'block 300 has its entry in map page 1');

# Every compressed file of the tablespace, without holes: its length is what
# the file system allocated to it (no file system allocates less than 4 kB,
# so a file of a length not a multiple of it would show up as longer).
my $tablespace = $node->data_dir . '/pg_tblspc';
my ($apparent, $allocated, $files, $holed) = (0, 0, 0, 0);
find(
	sub {
		return unless -f $_ && PgStrata::PcsFile::is_compressed($_);
		my @st = stat($_);
		$files++;
		$apparent += $st[7];
		$allocated += $st[12] * 512;
		$holed++ if $st[7] > $st[12] * 512;
	},
	$tablespace);
cmp_ok($files, '>=', 2, "$files compressed files");
is($holed, 0, 'none has a hole');
cmp_ok($apparent, '<=', $allocated,
	"their lengths ($apparent bytes) are no more than what they take ($allocated)"
);

# A copy that writes holes out takes no more than the original.
my $copy = PostgreSQL::Test::Utils::tempdir();
system('cp', '-r', '--sparse=never', $tablespace, "$copy/ts") == 0
  or die "cp: $?";
my $copied = 0;
find(
	sub {
		return unless -f $_ && PgStrata::PcsFile::is_compressed($_);
		$copied += (stat($_))[12] * 512;
	},
	"$copy/ts");
cmp_ok($copied, '<=', $allocated,
	"copied with holes written out, they take $copied bytes, no more");

# 2. Blocks of map page 2 (512 to 767), extended without storage and dirty
# in shared buffers: session A writes one of them and stops after making
# map page 2, before naming it in the directory; session B writes another,
# makes page 2 too and names it; then A goes on.
$node->safe_psql('postgres', q(
INSERT INTO big SELECT g, repeat(md5(g::text), 6) FROM generate_series(15001, 22000) g;
));
my $last = $node->safe_psql('postgres',
	q(SELECT max((ctid::text::point)[0])::int FROM big));
cmp_ok($last, '>', 530, "the table reaches block $last, in map page 2");
is(entry_bytes($big, 520), undef, 'map page 2 does not exist yet');
my $rows = $node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM big');

# evict(BLOCK): the query that writes out and drops block BLOCK of big,
# printing "1" (18's pg_buffercache_evict() returns a record, 17's a
# boolean: the count of rows it was called for is the same on both)
sub evict
{
	my ($block) = @_;
	return qq(SELECT count(pg_buffercache_evict(bufferid)) FROM pg_buffercache
WHERE relfilenode = pg_relation_filenode('big') AND relforknumber = 0
  AND relblocknumber = $block AND isdirty;
);
}

my $session_a = $node->background_psql('postgres');
$session_a->query_until(
	qr/attached/, q(
SELECT injection_points_set_local();
SELECT injection_points_attach('pcs-map-page-before-slot', 'wait');
\echo attached
) . evict(520));
$node->wait_for_event('client backend', 'pcs-map-page-before-slot');
is(word($big, $data_offset + place(word($big, $directory_word[0])) * 128 + 16), 0,
	'A made map page 2 and waits before naming it');
is($node->safe_psql('postgres', evict(530)), '1',
	'meanwhile B writes block 530');
my $slot = word($big, $data_offset + place(word($big, $directory_word[0])) * 128 + 16);
isnt($slot, 0, 'and names its own map page 2');
$node->safe_psql('postgres',
	q(SELECT injection_points_wakeup('pcs-map-page-before-slot')));
is($session_a->query_safe('SELECT 1'), "1\n1", 'A goes on: it wrote block 520');
$session_a->quit;
is(word($big, $data_offset + place(word($big, $directory_word[0])) * 128 + 16),
	$slot, "A left B's page named");
ok(entry_bytes($big, 520) ne "\0" x 16 && entry_bytes($big, 530) ne "\0" x 16,
	"both blocks' entries are in it");

# Every block read from disk again, after a restart.
$node->restart;
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM big'),
	$rows, 'after a restart the table holds the same rows');
is($node->safe_psql('postgres',
		'SELECT count(*) FROM verify_heapam(\'big\')'),
	'0', 'verify_heapam finds nothing wrong');
$node->safe_psql('postgres',
	q(SELECT bt_index_check('big_pkey', true)));
pass('bt_index_check with heapallindexed passes');

# 3. Damage.  Stopped, so that nothing the server wrote last is lost.
$node->stop;
my $word0 = PgStrata::PcsFile::read_bytes($big, $directory_word[0], 8);
my $word1 = PgStrata::PcsFile::read_bytes($big, $directory_word[1], 8);
PgStrata::PcsFile::flip($big, $directory_word[0] + 5);
$node->start;
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM big'),
	$rows, 'one damaged copy of the directory word: the other locates it');

$node->stop;
PgStrata::PcsFile::flip($big, $directory_word[1] + 2);
$node->start;
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	'SELECT count(*) FROM big',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like(
	$stderr,
	qr/XX001: invalid map directory location in compressed segment file "[^"]+"/,
	'both damaged: a data-corruption error naming the file');
like($stderr, qr/blocks from 96 on are unknown/, 'and the blocks it costs');
is($node->safe_psql('postgres',
		q(SELECT count(*) > 0 FROM big WHERE ctid <= '(95,1000)')),
	't', 'the blocks whose entries the header holds read on');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is up');

$node->stop;
PgStrata::PcsFile::write_bytes($big, $directory_word[0], $word0);
PgStrata::PcsFile::write_bytes($big, $directory_word[1], $word1);
my $slot1 = $data_offset + place(word($big, $directory_word[0])) * 128 + 8;
PgStrata::PcsFile::flip($big, $slot1 + 6);
$node->start;
($ret, $stdout, $stderr) = $node->psql('postgres',
	q(SELECT count(*) FROM big WHERE ctid >= '(256,0)' AND ctid <= '(511,1000)'),
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like(
	$stderr,
	qr/XX001: invalid map directory slot 1 in compressed segment file/,
	'a damaged slot: a data-corruption error naming it');
like($stderr, qr/blocks 256 to 511 of the segment/,
	'and the blocks whose entries the page holds');
is($node->safe_psql('postgres',
		q(SELECT count(*) > 0 FROM big WHERE ctid >= '(96,0)' AND ctid <= '(255,1000)')),
	't', 'the blocks of another map page read on');
is($node->safe_psql('postgres',
		q(SELECT count(*) > 0 FROM big WHERE ctid >= '(512,0)')),
	't', 'on both sides');

$node->stop;
PgStrata::PcsFile::flip($big, $slot1 + 6);
$node->start;
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM big'),
	$rows, 'mended, the table reads whole');

# A sound slot that names a page past the end of the file: what an
# operating system crash can leave, which only redo may read as a page of
# empty entries (it rewrites those blocks); outside recovery it is a file
# cut short, an ERROR as md's short reads are, never blocks read as zeros.
$node->stop;
my $slot1_bytes = PgStrata::PcsFile::read_bytes($big, $slot1, 8);
my $h = PgStrata::PcsFile::header($big);
my $past = int(((-s $big) - $data_offset) / 128) + 64;
PgStrata::PcsFile::write_bytes($big, $slot1,
	PgStrata::PcsFile::directory_word($h->{header_crc}, 0, 1, $past));
$node->start;
($ret, $stdout, $stderr) = $node->psql('postgres',
	q(SELECT count(*) FROM big WHERE ctid >= '(256,0)' AND ctid <= '(511,1000)'),
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like(
	$stderr,
	qr/XX001: could not read the map of compressed segment file "[^"]+" at offset \d+: read only 0 of \d+ bytes/,
	'a map page past the end of the file: a data-corruption error');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is up');
$node->stop;
PgStrata::PcsFile::write_bytes($big, $slot1, $slot1_bytes);
$node->start;
is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM big'),
	$rows, 'mended again, the table reads whole');

# 4. Writes go on past damage, as md's do past a damaged page: a write
# into a map page whose slot is damaged makes the page again, its other
# entries lost (their blocks read as damaged until written again), so
# that checkpoints, and redo at the next start, go on.  Without that, the
# checkpoint fails for as long as the block stays dirty, and a server
# that crashed does not start.
# (frozen, so that reading it dirties nothing: the blocks written below
# are only those the test changes)
$node->safe_psql('postgres', q(
CREATE TABLE w (id int, v text) TABLESPACE cts;
INSERT INTO w SELECT g, repeat(md5(g::text), 6) FROM generate_series(1, 15000) g;
));
$node->safe_psql('postgres', 'VACUUM (FREEZE) w');
$node->safe_psql('postgres', 'CHECKPOINT');
my $w = path('w');
my $w_rel = $node->safe_psql('postgres', "SELECT pg_relation_filepath('w')");
$node->restart;
# every block of w in shared buffers, read by this session only
$node->safe_psql('postgres', q(
SELECT count(*) FROM w;
SELECT count(*) FROM pg_buffercache
WHERE relfilenode = pg_relation_filenode('w') AND relforknumber = 0;
));
my $wslot1 = $data_offset + place(word($w, $directory_word[0])) * 128 + 8;
PgStrata::PcsFile::flip($w, $wslot1 + 6);
my ($changed, $new_tids) = split /\|/, $node->safe_psql('postgres', q(
WITH u AS (UPDATE w SET v = 'changed'
  WHERE ctid >= '(300,0)' AND ctid <= '(300,1000)' RETURNING ctid)
SELECT count(*), string_agg('"' || ctid::text || '"', ',') FROM u));
cmp_ok($changed, '>', 0, "$changed rows of block 300 changed");
($ret, $stdout, $stderr) = $node->psql('postgres', 'CHECKPOINT');
is($ret, 0, 'a damaged slot: the checkpoint writes a block of its page');
like(
	slurp_file($node->logfile),
	qr/WARNING:  made map page 1 of compressed segment file "[^"]+" again/,
	'making the page again, with a WARNING');
$node->restart;
is($node->safe_psql('postgres',
		"SELECT count(*) FROM w WHERE ctid = ANY('{$new_tids}'::tid[]) AND v = 'changed'"),
	$changed, 'the blocks written read back: the new versions of the changed rows');
($ret, $stdout, $stderr) = $node->psql('postgres',
	q(SELECT count(*) FROM w WHERE ctid >= '(300,0)' AND ctid <= '(300,1000)'));
is($stderr, '', 'and block 300, where the update began');
($ret, $stdout, $stderr) = $node->psql('postgres',
	q(SELECT count(*) FROM w WHERE ctid >= '(301,0)' AND ctid <= '(301,1000)'),
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like(
	$stderr,
	qr/XX001: invalid compressed page in block 301 of relation \S+\nDETAIL:  The block's map entry was lost/,
	'a block of the page not written since: damaged, not zeros');
is($node->safe_psql('postgres',
		q(SELECT count(*) > 0 FROM w WHERE ctid <= '(255,1000)')),
	't', 'the blocks of other map pages read on');

# Redo through a damaged slot: a change to a block of map page 1 after a
# checkpoint (block 300, which reads), the server killed, the page's slot
# damaged before it starts again.
$node->safe_psql('postgres', q(
CHECKPOINT;
UPDATE w SET v = 'redone' WHERE ctid >= '(300,0)' AND ctid <= '(300,1000)';
));
$node->stop('immediate');
PgStrata::PcsFile::flip($w,
	$data_offset + place(word($w, $directory_word[0])) * 128 + 8 + 6);
$node->start;
is($node->safe_psql('postgres',
		q(SELECT count(*) FROM w WHERE ctid >= '(300,0)' AND ctid <= '(300,1000)' AND v = 'redone')),
	$node->safe_psql('postgres',
		q(SELECT count(*) FROM w WHERE ctid >= '(300,0)' AND ctid <= '(300,1000)')),
	'redo through a damaged slot: the server starts, block 300 as changed');
my @remade = slurp_file($node->logfile) =~
  /WARNING:  made map page 1 of compressed segment file "\Q$w_rel\E" again/g;
is(scalar(@remade), 2, 'redo made the page again, a second time');

$node->stop;
done_testing();
