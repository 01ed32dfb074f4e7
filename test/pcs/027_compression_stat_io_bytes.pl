
# Copyright (c) 2026, pgstrata developers

# What pg_stat_io's byte columns (PostgreSQL 18: read_bytes, write_bytes,
# extend_bytes) report for compressed relations, as
# doc/compressed-tablespaces.md ("Sizes and statistics") says: the bytes
# the compressed segments read and wrote (patch 0033, 18 only,
# smgr_io_bytes_*()), while reads, writes and extends count operations as
# for plain relations, whose bytes stay 8 kB per block.
#
# 1. A cold sequential scan of a compressed table reads every block (as
#    pg_statio's heap_blks_read says), and the client backend's read_bytes
#    are at least the bytes of the table's images
#    (pgstrata_relation_compression().stored_bytes) and at most what its
#    segment takes (pg_relation_size): a fraction of 8 kB per block.
# 2. The same scan of a plain twin counts 8 kB per block, as upstream does.
# 3. A bulk load into a compressed table: extends are counted, and
#    extend_bytes are 0: extending a compressed fork writes nothing (pages
#    take space when written out).
# 4. The checkpoint that writes the loaded table out: the checkpointer's
#    write_bytes are at least the bytes of the table's images and a
#    fraction of 8 kB per page written.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Node;

my $node = PostgreSQL::Test::Cluster->new('node');
if ($node->pg_version < 18)
{
	plan skip_all => 'pg_stat_io has byte columns from PostgreSQL 18 on';
}
PgStrata::Node::compressed_node($node,
	conf => q(
autovacuum = off
shared_buffers = 32MB
bgwriter_lru_maxpages = 0
polar_bulk_extend_size = 0
),
	extensions => ['pgstrata']);

# Rows that compress well: t takes a fraction of its logical size
$node->safe_psql('postgres', q(
CREATE TABLE t (id int, k int, v text) TABLESPACE cts;
INSERT INTO t SELECT g, g % 100, repeat('pg_stat_io ', 10)
	FROM generate_series(1, 60000) g;
VACUUM (ANALYZE) t;
CHECKPOINT;
));
my ($relpages, $physical, $stored) = split /\|/, $node->safe_psql('postgres', q(
SELECT relpages, pg_relation_size('t'),
	(SELECT stored_bytes FROM pgstrata_relation_compression('t') WHERE fork = 'main')
FROM pg_class WHERE relname = 't'));
note "t: $relpages pages, $physical bytes allocated, $stored bytes of images";
cmp_ok($physical * 4, '<', $relpages * 8192,
	't takes less than a quarter of its logical size');
cmp_ok($relpages, '>', 1024,
	't is larger than a quarter of shared_buffers: a scan reads it through a ring');

# io(COLUMN, CONDITION): a query of a column of pg_stat_io summed over the
# relation rows that meet a condition, labelled with the column's name
sub io
{
	my ($column, $condition) = @_;
	return qq(SELECT '$column=' || sum($column) FROM pg_stat_io
	WHERE object = 'relation' AND $condition;);
}

# field(OUTPUT, LABEL): the value psql printed as LABEL=value
sub field
{
	my ($out, $label) = @_;
	return $out =~ /(?:^|\|)\Q$label\E=([^|\n]*)/m ? $1 : "no $label in: $out";
}

# scan(TABLE): a cold scan of TABLE, its statistics flushed before the
# reset and after the scan: the rows, the client backend's reads and
# read_bytes in the bulkread context (a ring: only the scan reads there,
# catalogs are read in the normal context), and pg_statio's blocks read
sub scan
{
	my ($table) = @_;
	$node->restart;
	my $r = $node->safe_psql('postgres', qq(
SELECT pg_stat_force_next_flush();
SELECT pg_stat_reset_shared('io');
SELECT pg_stat_reset_single_table_counters('$table'::regclass);
SELECT 'count=' || count(*) FROM $table;
SELECT pg_stat_force_next_flush();
) . io('read_bytes', q(backend_type = 'client backend' AND context = 'bulkread'))
		  . io('reads', q(backend_type = 'client backend' AND context = 'bulkread'))
		  . qq(
SELECT 'blks_read=' || heap_blks_read FROM pg_statio_user_tables
	WHERE relname = '$table';
));
	return map { field($r, $_) } qw(count reads read_bytes blks_read);
}

# 1. The compressed table
my ($count, $reads, $read_bytes, $blks_read) = scan('t');
is($count, '60000', 'the cold scan reads every row');
is($blks_read, $relpages, 'it reads every block of t from the storage manager');
cmp_ok($reads, '>', 0, "pg_stat_io counts its reads ($reads)");
cmp_ok($read_bytes, '>=', $stored,
	"its read_bytes are at least the bytes of t's images ($read_bytes, $stored)");
cmp_ok($read_bytes, '<=', $physical,
	"and at most what t's segment takes ($physical)");
cmp_ok($read_bytes * 4, '<', $blks_read * 8192,
	'less than a quarter of 8 kB per block read');

# 2. Its plain twin: 8 kB per block, as upstream counts
$node->safe_psql('postgres', q(
CREATE TABLE tp AS SELECT * FROM t;
VACUUM (ANALYZE) tp;
CHECKPOINT;
));
my ($pcount, $preads, $pread_bytes, $pblks_read) = scan('tp');
is($pcount, '60000', 'the cold scan of the plain twin reads every row');
is($pread_bytes, $pblks_read * 8192,
	"pg_stat_io counts 8 kB of read_bytes for each block of a plain table ($pblks_read blocks)"
);

# 3. A bulk load: extensions are counted, and write nothing
my $r = $node->safe_psql('postgres', q(
CREATE TABLE t2 (id int, k int, v text) TABLESPACE cts;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_reset_shared('io');
INSERT INTO t2 SELECT * FROM t;
SELECT pg_stat_force_next_flush();
) . io('extends', q(backend_type = 'client backend'))
	  . io('extend_bytes', q(backend_type = 'client backend')) . q(
SELECT 'pages=' || logical_pages, 'physical=' || physical_bytes
	FROM pgstrata_relation_compression('t2') WHERE fork = 'main';
));
my ($extends, $extend_bytes, $t2_pages, $t2_physical) =
  map { field($r, $_) } qw(extends extend_bytes pages physical);
cmp_ok($t2_pages, '>=', $relpages, "t2 has $t2_pages pages");
cmp_ok($extends, '>', 0, "pg_stat_io counts the load's extensions ($extends)");
is($extend_bytes, '0', 'and no extend_bytes: extending a compressed fork writes nothing');
cmp_ok($t2_physical, '<=', 64 * 1024,
	"t2's segment has taken $t2_physical bytes for them before the checkpoint");

# 4. The checkpoint writes t2's pages, dirty in shared buffers since the
# load (INSERT ... SELECT uses no ring, and the background writer writes
# nothing here): one image each.  The checkpointer reports its statistics
# after it has told CHECKPOINT that it is done: wait for them.
$node->safe_psql('postgres', q(
SELECT pg_stat_reset_shared('io');
CHECKPOINT;
));
$node->poll_query_until('postgres', q(
SELECT sum(writes) > 0 FROM pg_stat_io
	WHERE object = 'relation' AND backend_type = 'checkpointer'))
  or die 'the checkpointer\'s writes never showed in pg_stat_io';
$r = $node->safe_psql('postgres',
	io('write_bytes', q(backend_type = 'checkpointer'))
	  . io('writes', q(backend_type = 'checkpointer')) . q(
SELECT 'stored=' || stored_bytes
	FROM pgstrata_relation_compression('t2') WHERE fork = 'main';
));
my ($write_bytes, $writes, $t2_stored) =
  map { field($r, $_) } qw(write_bytes writes stored);
cmp_ok($writes, '>=', $t2_pages,
	"the checkpointer wrote t2's pages out ($writes writes, $t2_pages pages)");
cmp_ok($write_bytes, '>=', $t2_stored,
	"its write_bytes are at least the bytes of t2's images ($write_bytes, $t2_stored)");
cmp_ok($write_bytes * 4, '<', $writes * 8192,
	'less than a quarter of 8 kB per page written');

$node->stop;
done_testing();
