
# Copyright (c) 2026, pgstrata developers

# The two shared words of a compressed segment's header check themselves
# (README.pcs, "The shared words of the header"):
#
# - the block count word: a byte changed in it, or the whole word zeroed,
#   with the server stopped or while it runs with the segment mapped, is an
#   ERROR with ERRCODE_DATA_CORRUPTED naming the segment file, for reads,
#   writes and pg_checksums alike; never a crash, never a relation that
#   silently reads shorter, longer or empty.  Putting the bytes back makes
#   the relation readable again, without a restart;
# - the allocation word: a byte changed in it, or its next free unit
#   lowered while the server runs (the change that would hand out units in
#   use), mends itself: the next allocation starts above the file's end and
#   every unit the map points to, so no two blocks ever share a unit, amcheck
#   stays clean and every row survives;
# - a file of the previous format version is refused with a clear error
#   and a hint, by the server and by pg_checksums.
#
# The words on disk are decoded with the checks computed independently in
# Perl (PgStrata::PcsFile), so this also checks what the server writes.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile qw(ALLOC_OFFSET NBLOCKS_OFFSET UNIT_SIZE DATA_OFFSET);

my $node = PostgreSQL::Test::Cluster->new('words');
$node->init(extra => ['--data-checksums']);
$node->append_conf('postgresql.conf', qq(
allow_in_place_tablespaces = on
autovacuum = off
checkpoint_timeout = 1h
shared_buffers = 16MB
log_statement = none
));
$node->start;

$node->safe_psql('postgres', q(
CREATE EXTENSION amcheck;
CREATE EXTENSION pgstrata;
CREATE EXTENSION pg_buffercache;
CREATE TABLESPACE cts LOCATION '' WITH (compression = 'zstd');
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
is($h->{version}, 2, 'the segment is of format version 2');
ok($h->{header_crc_ok}, 'its fixed fields match their CRC');
ok($h->{nblocks_word_ok}, 'the block count word on disk passes its check');
is($h->{nblocks}, $pages, 'and holds the logical size of the table');

# query(SQL): the stderr of psql, verbose, and '' when it succeeded
sub query
{
	my ($sql) = @_;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', $sql,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return $stderr;
}

# A block count error names the segment file and says why.
my $nblocks_error = qr/ERROR:  XX001: invalid block count in compressed segment file "\Q$relfile\E"\n.*DETAIL:  The checksum of the block count in the segment header does not match\./s;

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
my $alloc_good = PgStrata::PcsFile::read_bytes($path, ALLOC_OFFSET, 8);

# 1. The block count word damaged with the server stopped: each byte of the
# count's half and of the check's half, and the word zeroed.
for my $case ([ 'byte 0 of the count', 0 ], [ 'byte 2 of the count', 2 ],
	[ 'byte 1 of the check', 5 ], [ 'byte 3 of the check', 7 ])
{
	my ($what, $i) = @$case;
	$node->stop;
	PgStrata::PcsFile::flip($path, NBLOCKS_OFFSET + $i, 0x01);
	$node->start;
	like(query('SELECT count(*) FROM c'), $nblocks_error,
		"block count word, $what changed on disk: a data-corruption error naming the file");
	server_alive("block count word, $what");
	PgStrata::PcsFile::flip($path, NBLOCKS_OFFSET + $i, 0x01);
}
$node->stop;
PgStrata::PcsFile::write_bytes($path, ALLOC_OFFSET, "\0" x 16);
$node->start;
like(query('SELECT count(*) FROM c'), $nblocks_error,
	'both words zeroed on disk (bytes 32..47): an error, not an empty table');
like(query("INSERT INTO c VALUES (-1, 'x')"), $nblocks_error,
	'and a write is refused the same way');
server_alive('both words zeroed');

# pg_checksums reads the same word.
$node->stop;
my ($out, $err) = ('', '');
IPC::Run::run([ 'pg_checksums', '--check', '-D', $node->data_dir ],
	'>', \$out, '2>', \$err);
isnt($? >> 8, 0, 'pg_checksums --check fails on a zeroed block count word');
like($err, qr/invalid compressed segment header in file ".*\Q$relfile\E": The checksum of the block count in the segment header does not match/,
	'and names the file and the word');

PgStrata::PcsFile::write_bytes($path, NBLOCKS_OFFSET, $nblocks_good);
$node->start;
is($node->safe_psql('postgres', $rows_query), $rows,
	'with the block count word put back (and the allocation word left zeroed) every row reads');
$h = PgStrata::PcsFile::header($path);
is($h->{nblocks}, $pages, 'the block count is intact');

# 2. The block count word damaged while the server runs, with the segment
# mapped by a session that keeps it open: checked at every read, so the
# damage is seen at once, and its repair too.
my $session = $node->background_psql('postgres', on_error_stop => 0);
$session->query_safe('SELECT count(*) FROM c');
for my $i (1, 6)
{
	PgStrata::PcsFile::flip($path, NBLOCKS_OFFSET + $i, 0x80);
	my $r = $session->query("\\set VERBOSITY verbose\nSELECT count(*) FROM c");
	like($session->{stderr}, $nblocks_error,
		"block count word, byte $i changed while the segment is mapped: the session that has it open gets the error");
	$session->{stderr} = '';
	like(query('SELECT count(*) FROM c'), $nblocks_error,
		"block count word, byte $i changed while running: a new session too");
	PgStrata::PcsFile::flip($path, NBLOCKS_OFFSET + $i, 0x80);
	is($session->query_safe('SELECT count(*) FROM c'), (split /\|/, $rows)[0],
		"block count word, byte $i put back: the same session reads every row again");
}
$session->quit;
server_alive('block count word damaged while running');

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

# check_units(LABEL): every image lies below the next free unit, no two
# blocks share a unit, amcheck is clean
sub check_units
{
	my ($label) = @_;
	is(PgStrata::PcsFile::overlaps($path), '', "$label: no two blocks share a unit");
	my $high = 0;
	for my $e (PgStrata::PcsFile::entries($path))
	{
		my $end = $e->[1]{first} + $e->[1]{units};
		$high = $end if $end > $high;
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
like($err, qr/\Q$relfile\E": The file has format version 1; this build reads only version 2/,
	'and says which version it is');
$node->start;
my $e = query('SELECT count(*) FROM c');
like($e, qr/ERROR:  0A000: compressed segment file "\Q$relfile\E" has format version 1, but this server reads only version 2/,
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

$node->stop;
done_testing();
