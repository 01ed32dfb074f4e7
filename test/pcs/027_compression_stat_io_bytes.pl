
# Copyright (c) 2026, pgstrata developers

# What pg_stat_io's byte columns (PostgreSQL 18: read_bytes, write_bytes,
# extend_bytes) report for compressed relations, as
# doc/compressed-tablespaces.md ("Sizes and statistics") says: logical
# 8 kB blocks, as for plain relations, not the bytes the compressed
# segments read or write.
#
# 1. A cold sequential scan of a compressed table: the client backend's
#    read_bytes are 8 kB for each block the scan read (pg_statio's
#    heap_blks_read), every block of the table, several times the table's
#    physical size (pg_relation_size) and its images' bytes
#    (pgstrata_relation_compression().stored_bytes).
# 2. A bulk load into a compressed table: extend_bytes count 8 kB per
#    block added, while the file has taken no space for them yet (pages
#    take space when written out).
# 3. The checkpoint that writes the loaded table out: the checkpointer's
#    write_bytes are 8 kB per page written, several times what the table
#    takes once written; everywhere in pg_stat_io, write_bytes = writes *
#    8 kB.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('node');
if ($node->pg_version < 18)
{
	plan skip_all => 'pg_stat_io has byte columns from PostgreSQL 18 on';
}
$node->init;
$node->append_conf('postgresql.conf', qq(
allow_in_place_tablespaces = on
autovacuum = off
shared_buffers = 32MB
bgwriter_lru_maxpages = 0
polar_bulk_extend_size = 0
));
$node->start;

# Rows that compress well: t takes a fraction of its logical size
$node->safe_psql('postgres', q(
CREATE EXTENSION pgstrata;
CREATE TABLESPACE cts LOCATION '' WITH (compression = 'zstd');
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

# 1. A cold scan, its statistics flushed before the reset and after the
# scan.  It reads t through a ring, the only reads of the bulkread
# context (catalogs are read in the normal one).
$node->restart;
my $r = $node->safe_psql('postgres', q(
SELECT pg_stat_force_next_flush();
SELECT pg_stat_reset_shared('io');
SELECT pg_stat_reset_single_table_counters('t'::regclass);
SELECT 'count=' || count(*) FROM t;
SELECT pg_stat_force_next_flush();
) . io('read_bytes', q(backend_type = 'client backend' AND context = 'bulkread')) . q(
SELECT 'blks_read=' || heap_blks_read FROM pg_statio_user_tables
	WHERE relname = 't';
));
my ($count, $read_bytes, $blks_read) =
  map { field($r, $_) } qw(count read_bytes blks_read);
is($count, '60000', 'the cold scan reads every row');
is($blks_read, $relpages, 'it reads every block of t from the storage manager');
is($read_bytes, $blks_read * 8192,
	'pg_stat_io counts 8 kB of read_bytes for each of them');
cmp_ok($read_bytes, '>', 4 * $physical,
	"that is more than four times t's physical size ($read_bytes bytes, $physical allocated)");
cmp_ok($read_bytes, '>', 4 * $stored,
	"and than four times the bytes of its images ($stored)");

# 2. A bulk load: extension counts 8 kB per block, the file takes nothing
# for them until they are written out.
$r = $node->safe_psql('postgres', q(
CREATE TABLE t2 (id int, k int, v text) TABLESPACE cts;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_reset_shared('io');
INSERT INTO t2 SELECT * FROM t;
SELECT pg_stat_force_next_flush();
) . io('extend_bytes', q(backend_type = 'client backend')) . q(
SELECT 'pages=' || logical_pages, 'physical=' || physical_bytes
	FROM pgstrata_relation_compression('t2') WHERE fork = 'main';
));
my ($extend_bytes, $t2_pages, $t2_physical) =
  map { field($r, $_) } qw(extend_bytes pages physical);
cmp_ok($t2_pages, '>=', $relpages, "t2 has $t2_pages pages");
cmp_ok($extend_bytes, '>=', $t2_pages * 8192,
	"pg_stat_io counts 8 kB of extend_bytes for each ($extend_bytes bytes)");
cmp_ok($t2_physical, '<=', 64 * 1024,
	"while t2's segment has taken $t2_physical bytes for them before the checkpoint");

# 3. The checkpoint writes t2's pages, dirty in shared buffers since the
# load (INSERT ... SELECT uses no ring, and the background writer writes
# nothing here): 8 kB of write_bytes each, though each image is a fraction
# of that.  The checkpointer reports its statistics after it has told
# CHECKPOINT that it is done: wait for them.
$node->safe_psql('postgres', q(
SELECT pg_stat_reset_shared('io');
CHECKPOINT;
));
$node->poll_query_until('postgres', q(
SELECT sum(writes) > 0 FROM pg_stat_io
	WHERE object = 'relation' AND backend_type = 'checkpointer'))
  or die 'the checkpointer\'s writes never showed in pg_stat_io';
$r = $node->safe_psql('postgres', io('write_bytes', q(backend_type = 'checkpointer')) . q(
SELECT 'odd=' || count(*) FROM pg_stat_io WHERE write_bytes <> writes * 8192
	OR read_bytes % 8192 <> 0 OR extend_bytes % 8192 <> 0;
SELECT 'physical=' || physical_bytes
	FROM pgstrata_relation_compression('t2') WHERE fork = 'main';
));
my ($write_bytes, $odd);
($write_bytes, $odd, $t2_physical) =
  map { field($r, $_) } qw(write_bytes odd physical);
is($odd, '0',
	'everywhere in pg_stat_io, write_bytes = writes * 8 kB, and reads and extensions are whole blocks'
);
cmp_ok($write_bytes, '>=', $t2_pages * 8192,
	"writing t2 out counts 8 kB of write_bytes for each of its pages ($write_bytes bytes, $t2_pages pages)"
);
cmp_ok($write_bytes, '>', 4 * $t2_physical,
	"more than four times what t2 takes once written ($t2_physical bytes)");

$node->stop;
done_testing();
