
# Copyright (c) 2026, pgstrata developers

# A backend that looks at a compressed fork while another one is creating it
# must not take it for an md fork.
#
# pcs_create() creates the file (md.c) and then writes the compressed
# header.  Between the two the file exists and is empty, and readers of the
# free space map look at it without the lock its creator holds.  A backend
# that saw the empty file used to remember "md" for the fork and, until it
# processed the creator's invalidation, read the compressed file at md
# offsets: it took the segment header for block 0 and saw 257 blocks in a
# three-block map (and would have written there too).
#
# The injection point pcs-create-before-header stops an INSERT in that
# window, while it creates the free space map of a compressed table.
#
# A moment later the file has its header but not yet its blocks (formats
# 2 to 4: nor its size, the data area; format 5 has nothing to size, a
# fork is its header alone until its first image is written):
# pcs-create-after-header stops there.  A reader of the free space map
# then got "compressed segment file ... is too short" (seen once in
# upstream's triggers test with compression forced); the fork counts as
# empty until its creator extends it, and a crash at that point leaves a
# fork that reads as empty and is written again, not a damaged one.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('race',
	conf => q(
wal_log_hints = on
autovacuum = off
),
	extensions =>
	  [qw(injection_points pageinspect pg_buffercache pg_freespacemap)]);

$node->safe_psql('postgres', q(
CREATE TABLE t (id int, v text) TABLESPACE cts;
INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 50) g;
));
my $fsm = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('t')") . '_fsm';
ok(!-e $fsm, 'no free space map yet');

# stop_creator(TABLE, POINT[, OPTS]): a session whose INSERT into TABLE
# creates its free space map, stopped at injection point POINT
sub stop_creator
{
	my ($table, $point, %opts) = @_;
	my $session = $node->background_psql('postgres', %opts);
	$session->query_until(
		qr/attached/, qq(
SELECT injection_points_set_local();
SELECT injection_points_attach('$point', 'wait');
\\echo attached
INSERT INTO $table SELECT g, md5(g::text) FROM generate_series(51, 500) g;
));
	$node->wait_for_event('client backend', $point);
	return $session;
}

# The reader: a session inside one transaction.  It holds its locks from
# the start, so it does not process the shared invalidation with which the
# creator of a free space map tells others to look at the fork again: what
# it believes about the fork's format it keeps until the transaction ends.
my $reader = $node->background_psql('postgres', on_error_stop => 0);
$reader->query_safe(q(
BEGIN;
SELECT octet_length(get_raw_page('t', 'main', 0));
SELECT pg_freespace('t', 0);
));

# The creator: an INSERT that fills page 0 and records its free space,
# stopped right after it has created the (empty) free space map file.
my $creator = stop_creator('t', 'pcs-create-before-header');
ok(-e $fsm && -s $fsm == 0, 'the free space map file exists and is empty');

# The reader looks at the free space map now.
is($reader->query_safe(q(SELECT pg_freespace('t', 0))), '0',
	'reader sees no free space while the map is created');

$node->safe_psql('postgres', q(
SELECT injection_points_detach('pcs-create-before-header');
SELECT injection_points_wakeup('pcs-create-before-header');
));
$creator->query_safe('SELECT 1');
$creator->quit;

ok(PgStrata::PcsFile::is_compressed($fsm), 'the free space map is compressed');

# In the same transaction, the reader reads block 0 of the map from the
# compressed file, not the segment header at md offset 0.  Other sessions
# write the map out and drop it from shared buffers (the reader takes no
# new lock, which would make it process the invalidation), and read it
# from disk for comparison.  (Block 0 is all zeros on disk: the free space
# map initialises new pages in memory without dirtying them.)
my $evict = q(
SELECT count(pg_buffercache_evict(bufferid)) FROM pg_buffercache
WHERE relfilenode = pg_relation_filenode('t') AND relforknumber = 1;
);
$node->safe_psql('postgres', "CHECKPOINT; $evict");
my $expected = $node->safe_psql('postgres',
	q(SELECT md5(get_raw_page('t', 'fsm', 0))));
$node->safe_psql('postgres', $evict);
my $got = $reader->query(q(SELECT md5(get_raw_page('t', 'fsm', 0))));
is($reader->{stderr}, '', 'the reader reads block 0 without an error');
is($got, $expected, 'the reader reads the same block 0 as a new session');
$reader->{stderr} = '';

# And it sees three blocks (root, one inner and one leaf page), as a new
# session does.
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	q(SELECT octet_length(get_raw_page('t', 'fsm', 3))));
like($stderr, qr/block number 3 is out of range/,
	'a new session sees a three-block free space map');
$reader->query(q(SELECT octet_length(get_raw_page('t', 'fsm', 3))));
like($reader->{stderr}, qr/block number 3 is out of range/,
	'the reader sees a three-block free space map too');
$reader->{stderr} = '';
$reader->query_safe('ROLLBACK');
$reader->quit;

# The file has its header and not yet its data area.
$node->safe_psql('postgres', q(
CREATE TABLE t2 (id int, v text) TABLESPACE cts;
INSERT INTO t2 SELECT g, md5(g::text) FROM generate_series(1, 50) g;
));
my $fsm2 = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('t2')") . '_fsm';
$creator = stop_creator('t2', 'pcs-create-after-header');
ok(PgStrata::PcsFile::is_compressed($fsm2) && -s $fsm2 == 4096,
	'the free space map has its header and is 4096 bytes long');
($ret, $stdout, $stderr) = $node->psql('postgres',
	q(SELECT pg_freespace('t2', 0)));
is($stderr, '', 'a reader of the half-made free space map gets no error');
is($stdout, '0', 'and sees no free space');

$node->safe_psql('postgres', q(
SELECT injection_points_detach('pcs-create-after-header');
SELECT injection_points_wakeup('pcs-create-after-header');
));
$creator->query_safe('SELECT 1');
$creator->quit;
is(PgStrata::PcsFile::header($fsm2)->{nblocks}, 3,
	'its creator extended it: the header counts three blocks');
($ret, $stdout, $stderr) = $node->psql('postgres',
	q(SELECT octet_length(get_raw_page('t2', 'fsm', 3))));
like($stderr, qr/block number 3 is out of range/,
	'and a new session sees a three-block free space map');
is($node->safe_psql('postgres', q(SELECT count(*) FROM t2)), '500',
	'every row is there');

# A crash at that point: the file stays as it was, and reads as empty.
$node->safe_psql('postgres', q(
CREATE TABLE t3 (id int, v text) TABLESPACE cts;
INSERT INTO t3 SELECT g, md5(g::text) FROM generate_series(1, 50) g;
));
my $fsm3 = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('t3')") . '_fsm';
$creator = stop_creator('t3', 'pcs-create-after-header',
	on_error_stop => 0);
$node->stop('immediate');
# its server is gone: the session's pipe may be closed already
eval { $creator->quit; };
ok(-s $fsm3 == 4096, 'the crash left the free space map at its header');
$node->start;
is($node->safe_psql('postgres', q(SELECT count(*) FROM t3)), '50',
	'after the crash the committed rows are there');
($ret, $stdout, $stderr) = $node->psql('postgres',
	q(SELECT pg_freespace('t3', 0)));
is($stderr, '', 'the free space map left at its header reads without an error');
$node->safe_psql('postgres', q(
INSERT INTO t3 SELECT g, md5(g::text) FROM generate_series(51, 500) g;
VACUUM t3;
));
is($node->safe_psql('postgres', q(SELECT count(*) FROM t3)), '500',
	'and the table takes rows and is vacuumed again');

$node->stop;
done_testing();
