
# Copyright (c) 2026, pgstrata developers

# The shared words of a compressed segment's header check themselves
# (README.pcs, "The shared words of the header"):
#
# - the block count, kept twice in two sectors (format 3): a byte changed
#   in one copy, on disk or while the server runs with the segment mapped,
#   costs nothing but a WARNING naming the segment file, and the copy is
#   rewritten from the other; with both copies gone the count is recovered
#   from the map, also with a WARNING, and reads, writes, checkpoints and
#   restarts go on (a damaged count used to stop every one of them);
#   pg_checksums fails when no copy is sound;
# - the allocation word: a byte changed in it, or its next free unit
#   lowered while the server runs (the change that would hand out units in
#   use), mends itself: the next allocation starts above the file's end and
#   every unit the map points to, so no two blocks ever share a unit, amcheck
#   stays clean and every row survives;
# - a file of format version 1 is refused with a clear error and a hint, by
#   the server and by pg_checksums.
#
# The words on disk are decoded with the checks computed independently in
# Perl (PgStrata::PcsFile), so this also checks what the server writes.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile qw(ALLOC_OFFSET NBLOCKS_OFFSET NBLOCKS2_OFFSET FORMAT_VERSION);
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('words',
	init => { extra => ['--data-checksums'] },
	conf => q(
autovacuum = off
checkpoint_timeout = 1h
shared_buffers = 16MB
log_statement = none
),
	extensions => [qw(amcheck pgstrata pg_buffercache)]);

$node->safe_psql('postgres', q(
CREATE TABLE c (id int PRIMARY KEY, v text) TABLESPACE cts;
INSERT INTO c SELECT g, repeat('a', 100) FROM generate_series(1, 3000) g;
CHECKPOINT;
));
my $path = PgStrata::PcsFile::relation_path($node, 'postgres', 'c');
my $relfile = $node->safe_psql('postgres', "SELECT pg_relation_filepath('c')");
my $rows_query = "SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM c";
my $rows = $node->safe_psql('postgres', $rows_query);
my $pages = $node->safe_psql('postgres',
	"SELECT logical_pages FROM pgstrata_relation_compression('c') WHERE fork = 'main'");
cmp_ok($pages, '>', 10, 'the table has a few dozen pages');

my $h = PgStrata::PcsFile::header($path);
is($h->{version}, FORMAT_VERSION,
	'the segment is of the current format version, ' . FORMAT_VERSION);
ok($h->{header_crc_ok}, 'its fixed fields match their CRC');
is_deeply($h->{nblocks_word_ok}, [ 1, 1 ],
	'both copies of the block count on disk pass their checks');
is_deeply($h->{nblocks_copy}, [ $pages, $pages ],
	'and hold the logical size of the table');

# query(SQL): the stderr of psql, verbose, and '' when it succeeded
sub query
{
	my ($sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return $stderr;
}

# A damaged copy is replaced, with a warning naming the segment file.
my $one_copy_warning = qr/WARNING:  XX001: invalid block count in compressed segment file "\Q$relfile\E", replaced by $pages\n.*DETAIL:  One of the two copies of the block count was damaged; the other one was sound\./s;
my $no_copy_warning = qr/WARNING:  XX001: invalid block count in compressed segment file "\Q$relfile\E", replaced by $pages\n.*DETAIL:  The checksum of the block count in the segment header does not match\.  The count was recovered from the blocks that have storage\./s;

# server_alive(LABEL): the server answers, and its log has no crash since
# the test started
my $log_start = 0;
sub server_alive
{
	my ($label) = @_;
	is($node->safe_psql('postgres', 'SELECT 1'), '1', "$label: the server is up");
	my $log = slurp_file($node->logfile, $log_start);
	unlike($log, qr/PANIC|terminated by signal|server process .* exited with exit code|TRAP:/,
		"$label: no process crashed");
}

my $nblocks_good = PgStrata::PcsFile::read_bytes($path, NBLOCKS_OFFSET, 8);
my $nblocks2_good = PgStrata::PcsFile::read_bytes($path, NBLOCKS2_OFFSET, 8);
my $alloc_good = PgStrata::PcsFile::read_bytes($path, ALLOC_OFFSET, 8);

# 1. One copy of the block count damaged with the server stopped: each
# byte of the count's half and of the check's half, in either copy.  The
# other copy holds the count; the damaged one is rewritten, and a
# checkpoint makes the repair durable.
for my $case ([ 'byte 0 of the count', 0 ], [ 'byte 2 of the count', 2 ],
	[ 'byte 1 of the check', 5 ], [ 'byte 3 of the check', 7 ])
{
	my ($what, $i) = @$case;
	for my $copy (0, 1)
	{
		my $offset = ($copy ? NBLOCKS2_OFFSET : NBLOCKS_OFFSET) + $i;
		$node->stop;
		PgStrata::PcsFile::flip($path, $offset, 0x01);
		$node->start;
		my $err = query($rows_query);
		like($err, $one_copy_warning,
			"copy $copy of the block count, $what changed on disk: a warning naming the file");
		unlike($err, qr/ERROR/, "copy $copy, $what: no error");
		is($node->safe_psql('postgres', $rows_query), $rows,
			"copy $copy, $what: every row reads");
		$node->safe_psql('postgres', 'CHECKPOINT');
		is_deeply(PgStrata::PcsFile::header($path)->{nblocks_copy},
			[ $pages, $pages ], "copy $copy, $what: repaired on disk");
	}
}
server_alive('one copy of the block count damaged on disk');

# 2. Both copies and the allocation sector zeroed on disk: the count is
# recovered from the map, with a warning; reads, writes, checkpoints and
# restarts go on (a damaged count used to stop all of them).
$node->stop;
PgStrata::PcsFile::write_bytes($path, ALLOC_OFFSET, "\0" x 16);
PgStrata::PcsFile::write_bytes($path, NBLOCKS_OFFSET, "\0" x 8);
PgStrata::PcsFile::write_bytes($path, NBLOCKS2_OFFSET, "\0" x 8);

# pg_checksums reads the same words.
my ($out, $err) = ('', '');
IPC::Run::run([ 'pg_checksums', '--check', '-D', $node->data_dir ],
	'>', \$out, '2>', \$err);
isnt($? >> 8, 0, 'pg_checksums --check fails when no copy of the block count is sound');
like($err, qr/invalid compressed segment header in file ".*\Q$relfile\E": The checksum of the block count in the segment header does not match/,
	'and names the file and the word');

$node->start;
like(query('SELECT count(*) FROM c'), $no_copy_warning,
	'both copies zeroed on disk: a warning, the count recovered from the map');
is($node->safe_psql('postgres', $rows_query), $rows,
	'every row reads (the allocation word zeroed too)');
is(query("INSERT INTO c VALUES (-1, 'x'); DELETE FROM c WHERE id = -1; CHECKPOINT"), '',
	'writes and a checkpoint succeed');
$node->restart;
is_deeply(PgStrata::PcsFile::header($path)->{nblocks_copy}, [ $pages, $pages ],
	'after a restart both copies are sound on disk again');
server_alive('both copies of the block count zeroed on disk');

# 3. A copy of the block count damaged while the server runs, with the
# segment mapped by a session that keeps it open: checked at every read,
# so the damage is seen and repaired at once.
my $session = $node->background_psql('postgres', on_error_stop => 0);
$session->query_safe('SELECT count(*) FROM c');
for my $case ([ 0, 1 ], [ 1, 6 ])
{
	my ($copy, $i) = @$case;
	my $offset = ($copy ? NBLOCKS2_OFFSET : NBLOCKS_OFFSET) + $i;
	PgStrata::PcsFile::flip($path, $offset, 0x80);
	my $r = $session->query("\\set VERBOSITY verbose\nSELECT count(*) FROM c");
	like($session->{stderr}, $one_copy_warning,
		"copy $copy, byte $i changed while the segment is mapped: the session that has it open warns");
	is($r, (split /\|/, $rows)[0], "copy $copy, byte $i changed while mapped: every row reads");
	$session->{stderr} = '';
	is(query('SELECT count(*) FROM c'), '',
		"copy $copy, byte $i: repaired, a new session reads without a warning");
}
$session->quit;
server_alive('block count damaged while running');

# grow(ROUND): make pages of c grow so that their images move to fresh
# units, add rows, and write every dirty page of c out now
sub grow
{
	my ($round) = @_;
	$node->safe_psql('postgres', qq(
UPDATE c SET v = md5((id * $round)::text) || md5((id + $round)::text) WHERE id % 4 = $round % 4;
INSERT INTO c SELECT g, md5(g::text) FROM generate_series(3000 * $round + 1, 3000 * $round + 200) g;
SELECT count(pg_buffercache_evict(bufferid)) FROM pg_buffercache
	WHERE relfilenode = pg_relation_filenode('c');
));
}

# check_units(LABEL): every image (and in format 5 the map's pages and
# directory, units of the data area as well) lies below the next free
# unit, no two blocks share a unit, amcheck is clean
sub check_units
{
	my ($label) = @_;
	is(PgStrata::PcsFile::overlaps($path), '', "$label: no two blocks share a unit");
	my $high = 0;
	for my $e (PgStrata::PcsFile::extents($path))
	{
		$high = $e->[1] if $e->[1] > $high;
	}
	cmp_ok(PgStrata::PcsFile::header($path)->{next_unit}, '>=', $high,
		"$label: the allocation word's next free unit is above every image");
	is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('c')"),
		'0', "$label: verify_heapam is clean");
	is($node->safe_psql('postgres', "SELECT bt_index_check('c_pkey', true)"),
		'', "$label: the primary key matches the heap");
}

# 3. The allocation word zeroed on disk (above) and then a byte of it
# changed on disk: both are mended by the next allocation.
grow(1);
check_units('allocation word zeroed on disk');
my $expected = $node->safe_psql('postgres', $rows_query);
$node->stop;
PgStrata::PcsFile::flip($path, ALLOC_OFFSET + 1, 0x01);
$node->start;
is($node->safe_psql('postgres', $rows_query), $expected,
	'a byte of the allocation word changed on disk: every row reads');
grow(2);
check_units('allocation word changed on disk');
server_alive('allocation word changed on disk');

# 4. The allocation word damaged while the server runs, after allocations
# of this generation: its next free unit lowered to 0, its check left as it
# was.  A server that trusted the word would hand the first units of the
# segment out again, to images of other blocks.
grow(3);
my $before = PgStrata::PcsFile::header($path);
cmp_ok($before->{next_unit}, '>', 100, 'the segment has handed out units');
PgStrata::PcsFile::write_bytes($path, ALLOC_OFFSET, pack('V', 0));
is($node->safe_psql('postgres', 'SELECT count(*) FROM c'), 3000 + 3 * 200,
	'with the next free unit lowered while running, every row still reads');
grow(4);
check_units('next free unit lowered while running');
cmp_ok(PgStrata::PcsFile::header($path)->{next_unit}, '>=', $before->{next_unit},
	'the next free unit went up again, above what was handed out before');
$expected = $node->safe_psql('postgres', $rows_query);

# 5. A byte of the check half damaged while the server runs.
PgStrata::PcsFile::flip($path, ALLOC_OFFSET + 6, 0x10);
grow(5);
check_units('allocation check changed while running');
$expected = $node->safe_psql('postgres', $rows_query);
server_alive('allocation word damaged while running');

# After a restart (which reads every page from disk after the checkpoint
# of the shutdown) the rows are still those written.
$node->restart;
is($node->safe_psql('postgres', $rows_query), $expected,
	'after a restart the rows are those written');
check_units('after a restart');

# 6. A segment of format version 1: the fixed fields say version 1 with a
# matching CRC, and the block count is the old 4-byte field.
$node->stop;
my $head = PgStrata::PcsFile::read_bytes($path, 0, 48);
my $v1 = $head;
substr($v1, 8, 4) = pack('V', 1);
substr($v1, 24, 4) = pack('V', PgStrata::PcsFile::crc32c(substr($v1, 0, 24)));
substr($v1, 40, 8) = pack('V V', $pages, 0);
PgStrata::PcsFile::write_bytes($path, 0, $v1);
($out, $err) = ('', '');
IPC::Run::run([ 'pg_checksums', '--check', '-D', $node->data_dir ],
	'>', \$out, '2>', \$err);
isnt($? >> 8, 0, 'pg_checksums --check fails on a segment of format version 1');
like($err, qr/\Q$relfile\E": The file has format version 1; this build reads only versions 2 to ${\ FORMAT_VERSION}/,
	'and says which version it is');
$node->start;
my $e = query('SELECT count(*) FROM c');
like($e, qr/ERROR:  0A000: compressed segment file "\Q$relfile\E" has format version 1, but this server reads only versions 2 to ${\ FORMAT_VERSION}/,
	'the server refuses a segment of format version 1 as not supported');
like($e, qr/HINT:  .*another development build of pgstrata/,
	'with a hint saying where it came from');
server_alive('a segment of format version 1');

# Each refused open closes its file: a session that keeps retrying holds
# no descriptor of the segment (pcs_getseg() once leaked one per try).
{
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $session->query_safe('SELECT pg_backend_pid()');
	$session->query('SELECT count(*) FROM c') for 1 .. 30;
	my $open = grep { (readlink($_) // '') eq $path } glob("/proc/$pid/fd/*");
	is($open, 0,
		'30 refused reads leave no descriptor of the segment open in the session');
	$session->quit;
}

$node->stop;
PgStrata::PcsFile::write_bytes($path, 0, $head);
$node->start;
is($node->safe_psql('postgres', $rows_query), $expected,
	'with the header put back every row reads');

# 7. A segment of format version 4, as builds before 2026-12-02 made them
# (the 2 MB map between the header and the data area; format 5 keeps map
# pages and their directory in the data area), stays readable and
# writable, and keeps its format.
$node->stop;
cmp_ok(PgStrata::PcsFile::to_format_4($path), '>', 0,
	'the segment was rewritten in format 4');
$node->start;
is($node->safe_psql('postgres', $rows_query), $expected,
	'format 4: every row reads');
grow(8);
$expected = $node->safe_psql('postgres', $rows_query);
$node->safe_psql('postgres', 'CHECKPOINT');
$h = PgStrata::PcsFile::header($path);
is($h->{version}, 4, 'format 4: the segment keeps its format');
is(PgStrata::PcsFile::read_bytes($path, $_, 8), "\0" x 8,
	"format 4: nothing was written into the directory word at $_")
  for PgStrata::PcsFile::DIRECTORY_WORD_OFFSETS;
check_units('format 4 after writes');
$node->restart;
is($node->safe_psql('postgres', $rows_query), $expected,
	'format 4: after writes and a restart the rows are those written');
server_alive('a segment of format version 4');

# 7a. A segment of format version 3, as builds of 2026-11-24 made them
# (every map entry in the map; format 4 keeps the first 96 blocks' entries
# in the header), stays readable and writable, and keeps its format.
$node->stop;
cmp_ok(PgStrata::PcsFile::to_format_3($path), '>', 0,
	'the segment was rewritten in format 3');
$node->start;
is($node->safe_psql('postgres', $rows_query), $expected,
	'format 3: every row reads');
grow(7);
$expected = $node->safe_psql('postgres', $rows_query);
$node->safe_psql('postgres', 'CHECKPOINT');
is(PgStrata::PcsFile::header($path)->{version}, 3,
	'format 3: the segment keeps its format');
is(PgStrata::PcsFile::read_bytes($path, PgStrata::PcsFile::HEADER_ENTRIES_OFFSET,
		PgStrata::PcsFile::HEADER_SIZE - PgStrata::PcsFile::HEADER_ENTRIES_OFFSET),
	"\0" x (PgStrata::PcsFile::HEADER_SIZE - PgStrata::PcsFile::HEADER_ENTRIES_OFFSET),
	'format 3: no entry was written into the header');
check_units('format 3 after writes');
$node->restart;
is($node->safe_psql('postgres', $rows_query), $expected,
	'format 3: after writes and a restart the rows are those written');
server_alive('a segment of format version 3');

# 7b. A segment of format version 2, as earlier builds made them (shared
# words in the first sector, one block count, 512-byte units), stays
# readable and writable: the file is rewritten as such with the server
# stopped, then read, grown, checkpointed, checked and read after a restart.
$node->stop;
cmp_ok(PgStrata::PcsFile::to_format_2($path), '>', 0,
	'the segment was rewritten in format 2');
$node->start;
is($node->safe_psql('postgres', $rows_query), $expected,
	'format 2: every row reads');
is(PgStrata::PcsFile::header($path)->{version}, 2, 'format 2: the header says so');
grow(6);
$expected = $node->safe_psql('postgres', $rows_query);
check_units('format 2 after writes');
$node->restart;
is($node->safe_psql('postgres', $rows_query), $expected,
	'format 2: after writes and a restart the rows are those written');
$h = PgStrata::PcsFile::header($path);
is($h->{version}, 2, 'format 2: the segment keeps its format');
is($h->{nblocks},
	$node->safe_psql('postgres',
		"SELECT logical_pages FROM pgstrata_relation_compression('c') WHERE fork = 'main'"),
	'format 2: its one block count word holds the size');
server_alive('a segment of format version 2');

$node->stop;
done_testing();
