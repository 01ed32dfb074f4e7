
# Copyright (c) 2026, pgstrata developers

# A reader that bypasses the buffer pool (pg_prewarm in 'read' mode reads
# blocks straight from the storage manager) can meet a write of the same
# block half done.  Held at the injection point pcs-write-after-image, the
# checkpointer has overwritten a block's image in place while its map entry
# still describes the image before: the reader must wait for the entry to
# be switched and read the block, not call it damaged (it used to raise
# "invalid compressed page ... checksum does not match").  A block that
# stays damaged is still an ERROR, after the reader's retries.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgStrata::PcsFile;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('concurrent_read',
	conf => q(
wal_log_hints = on
autovacuum = off
checkpoint_timeout = 1h
),
	extensions => [qw(injection_points pg_prewarm)]);
$node->safe_psql('postgres', q(
CREATE TABLE t (id int, n int, v text) TABLESPACE cts;
INSERT INTO t SELECT g, 0, repeat('x', 50) || g FROM generate_series(1, 50) g;
CHECKPOINT;
UPDATE t SET n = n + 1 WHERE id = 1;
CHECKPOINT;
UPDATE t SET n = n + 1 WHERE id = 1;
CHECKPOINT;
));
is($node->safe_psql('postgres', "SELECT pg_relation_size('t') > 0, (SELECT count(*) FROM t WHERE ctid >= '(1,0)')"),
	't|0', 'all of t is in block 0');
my $path = PgStrata::PcsFile::relation_path($node, 'postgres', 't');
my $before = PgStrata::PcsFile::entry($path, 0);

# the checkpointer stops after writing block 0's new image, before its entry
$node->safe_psql('postgres', q(
UPDATE t SET n = n + 1 WHERE id = 1;
SELECT injection_points_attach('pcs-write-after-image', 'wait');
));
my ($cout, $cerr) = ('', '');
my $checkpoint = IPC::Run::start(
	[ 'psql', '-X', '-h', $node->host, '-p', $node->port, '-c', 'CHECKPOINT',
	  'postgres' ],
	'>', \$cout, '2>', \$cerr);
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'pcs-write-after-image'")
  or die "the checkpointer did not reach pcs-write-after-image";
my $mid = PgStrata::PcsFile::entry($path, 0);
is($mid->{raw}, $before->{raw},
	'held at the point, block 0 still has its old entry');

# the reader starts while the entry is old and the image new; the writer
# goes on shortly after, well within the reader's retries
my ($rout, $rerr) = ('', '');
my $reader = IPC::Run::start(
	[ 'psql', '-X', '-At', '-h', $node->host, '-p', $node->port, '-c',
	  "SELECT pg_prewarm('t', 'read')", 'postgres' ],
	'>', \$rout, '2>', \$rerr);
usleep(30_000);
$node->safe_psql('postgres', q(
SELECT injection_points_wakeup('pcs-write-after-image');
SELECT injection_points_detach('pcs-write-after-image');
));
$reader->finish;
$checkpoint->finish;
is($rerr, '', 'the reader met the half-done write and did not fail');
cmp_ok($rout, '>', 0, 'it read the blocks of t');
my $after = PgStrata::PcsFile::entry($path, 0);
is($after->{first}, $before->{first},
	'the write was in place (the same units), so the reader saw the new image under the old entry');
is($node->safe_psql('postgres', 'SELECT n FROM t WHERE id = 1'), '3',
	'the block holds the last update');

# a block that stays damaged is still an error, after the retries
$node->stop;
PgStrata::PcsFile::flip_image($path, 0);
$node->start;
my ($ret, $out, $err) = $node->psql('postgres',
	"SELECT pg_prewarm('t', 'read')");
like($err, qr/invalid compressed page in block 0 of relation/,
	'a damaged block read without the buffer pool is an ERROR');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'and the server stays up');

$node->stop;
done_testing();
