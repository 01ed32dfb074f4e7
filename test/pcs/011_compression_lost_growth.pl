
# Copyright (c) 2026, pgstrata developers

# A compressed segment grows without an fsync; the checkpoint's fsync makes
# the new size durable.  After an OS crash the file may therefore be
# shorter than what the map on disk points to.  The first allocation of the
# next server generation must start above every unit the map points to, not
# at the file's end, or a block restored by redo could be written in place
# over units just handed to another block.
#
# The test fakes that OS crash: images relocated after a checkpoint, more
# changes left in shared buffers, an immediate stop, then the file cut back
# to its size at the checkpoint.  After redo: no two map entries share a
# unit, amcheck is clean, and the rows are those committed, also when read
# back from disk after another restart.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('lost_growth',
	conf => q(
wal_log_hints = on
checkpoint_timeout = 1h
autovacuum = off
shared_buffers = 16MB
),
	extensions => [qw(amcheck pg_buffercache)]);

# Rows of 'a's compress to almost nothing, so every page starts with a
# one- or two-unit image.
$node->safe_psql('postgres', q(
CREATE TABLE t (id int PRIMARY KEY, v text) TABLESPACE cts;
INSERT INTO t SELECT g, repeat('a', 100) FROM generate_series(1, 2000) g;
CHECKPOINT;
));
my $path = PgStrata::PcsFile::relation_path($node, 'postgres', 't');
my $size_at_checkpoint = -s $path;

# evict: write t's dirty buffers now, without a checkpoint
sub evict
{
	$node->safe_psql('postgres', q(
SELECT count(pg_buffercache_evict(bufferid)) FROM pg_buffercache
WHERE relfilenode = pg_relation_filenode('t')));
}

# Every page changes a little and compresses a little worse: written out,
# the images outgrow their units and move to fresh ones past the end of
# the file as it was at the checkpoint.
$node->safe_psql('postgres',
	"UPDATE t SET v = md5(id::text) || repeat('b', 60) WHERE id % 3 = 0");
evict();
cmp_ok(-s $path, '>', $size_at_checkpoint,
	'images moved past the size the file had at the checkpoint');

# Block 0 becomes nearly incompressible in shared buffers only; after the
# crash, redo rebuilds it and it needs many fresh units.
$node->safe_psql('postgres',
	"UPDATE t SET v = md5(id::text) || md5((id * 7)::text) || md5((id * 13)::text)
	 WHERE ctid < '(1,0)'");
my $expected = $node->safe_psql('postgres',
	"SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t");
$node->stop('immediate');

# The OS crash: the growth since the checkpoint never reached disk.
truncate $path, $size_at_checkpoint or die "truncate $path: $!";

$node->start;
$node->safe_psql('postgres', 'CHECKPOINT');

# check(LABEL): the invariants after recovery
sub check
{
	my ($label) = @_;
	is(PgStrata::PcsFile::overlaps($path), '', "$label: no two blocks share a unit");
	is( $node->safe_psql(
			'postgres',
			"SELECT count(*) FROM verify_heapam('t')"),
		'0',
		"$label: verify_heapam is clean");
	is( $node->safe_psql(
			'postgres',
			"SELECT bt_index_check('t_pkey', true)"),
		'',
		"$label: the primary key matches the heap");
	is( $node->safe_psql(
			'postgres',
			"SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t"),
		$expected,
		"$label: the rows are those committed");
}

check('after redo');
$node->restart;
check('read back from disk');

$node->stop;
done_testing();
