
# Copyright (c) 2026, pgstrata developers

# A heap pre-extension evicts nothing from shared buffers while it holds the
# relation extension lock (issue 19).  PostgreSQL 17's buffer manager finds
# and writes out the buffers it reuses for an extension before it takes the
# lock, since a dirty victim can cost a write and a WAL flush that every
# backend queued on the lock would wait for; the pre-extension once took up
# to 1/32 of shared buffers for its window under the lock.
#
# A COPY into a large table is held at the injection point
# bulk-io-window-before-fsm, after the window has been zero-extended and
# before it is entered into the FSM, with the extension lock held (which
# pg_locks shows).  At that moment no page of the window may be in shared
# buffers: only the pages the buffer manager extended with victims taken
# before the lock (at most 64).  Once the lock is released, the first part
# of the window is read into shared buffers, so that the inserters find it
# there; the test checks that too, and that amcheck is clean.

use strict;
use warnings FATAL => 'all';

use Digest::MD5 qw(md5_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Held;

my $node = PostgreSQL::Test::Cluster->new('victims');
$node->init;
$node->append_conf('postgresql.conf', q(
shared_buffers = 32MB
autovacuum = off
checkpoint_timeout = 1h
));
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION amcheck;
CREATE EXTENSION pg_buffercache;
CREATE EXTENSION injection_points;
));

# A table of about 1,230 pages, above the 8 MB of
# polar_min_bulk_extend_table_size, loaded without pre-extension.
$node->safe_psql('postgres', q(
SET polar_bulk_extend_size = 0;
CREATE TABLE big (id int, v text);
INSERT INTO big SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 75000) g;
CREATE INDEX big_id ON big (id);
VACUUM big;
));
my $before = $node->safe_psql('postgres',
	"SELECT pg_relation_size('big') / current_setting('block_size')::int");
ok($before >= 1024, "the table is above the minimum size ($before pages)");

# A COPY file of 2,000 rows: one extension by the 512-page window.
my $file = $PostgreSQL::Test::Utils::tmp_check . '/victims.copy';
open my $fh, '>', $file or die "could not write $file: $!";
for my $id (100001 .. 102000)
{
	my $md5 = md5_hex($id);
	print $fh "$id\t$md5$md5$md5\n";
}
close $fh;

# window_buffers(): buffers of the table holding a page past the first 64
# pages added, which only the window can have
my $window_buffers = qq(
SELECT count(*) FROM pg_buffercache
WHERE relfilenode = pg_relation_filenode('big') AND relforknumber = 0
  AND relblocknumber >= $before + 64);

my $copier = PgStrata::Held::session($node, 'bulk-io-window-before-fsm',
	"COPY big FROM '$file'", 'copied');

my $size = $node->safe_psql('postgres',
	"SELECT pg_relation_size('big') / current_setting('block_size')::int");
is($size, $before + 512, 'the window is in the file');
is( $node->safe_psql(
		'postgres', q(
SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
WHERE a.wait_event = 'bulk-io-window-before-fsm'
  AND l.locktype = 'extend' AND l.relation = 'big'::regclass AND l.granted)),
	'1',
	'the COPY holds the extension lock');
is($node->safe_psql('postgres', $window_buffers),
	'0', 'no page of the window was taken into shared buffers under the lock');

$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-window-before-fsm')");
$copier->query_until(qr/copied/, '');
$copier->quit;

ok($node->safe_psql('postgres', $window_buffers) >= 64,
	'after the lock, the first part of the window is in shared buffers');
is($node->safe_psql('postgres',
		"SELECT pg_relation_size('big') / current_setting('block_size')::int"),
	$before + 512, 'the COPY filled the window without extending again');
is($node->safe_psql('postgres', 'SELECT count(*) FROM big'),
	'77000', 'every row is there');
is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('big')"),
	'0', 'verify_heapam is clean');
is($node->safe_psql('postgres', "SELECT bt_index_check('big_id', true)"),
	'', 'bt_index_check with heapallindexed is clean');

done_testing();
