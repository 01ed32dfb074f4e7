
# Copyright (c) 2026, pgstrata developers

# Zero-extension of a compressed fork leaves its map sparse.  A block
# without storage has an empty map entry, and the map's 4 kB pages that hold
# only empty entries are holes in the file; zero-extension (a heap
# pre-extension, a B-tree build's window) must not store zeros into them,
# which would make the file system allocate them for nothing, and on a
# full file system raise SIGBUS through the shared mapping.  A 1 GB
# pre-extension window covers 512 map pages (2 MB): the file must not grow
# by them.  In format 5, where map pages are units of the data area made
# when their first entry is stored, zero-extension must make none: the
# segment has map pages for its blocks with storage only.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Node;
use PgStrata::PcsFile;

my $node = PgStrata::Node::compressed_node('sparse',
	conf => q(
wal_log_hints = on
autovacuum = off
polar_min_bulk_extend_table_size = 0
),
	extensions => ['pgstrata']);
$node->safe_psql('postgres', q(
CREATE TABLE t (id int, v text) TABLESPACE cts;
SET polar_bulk_extend_size = 0;
INSERT INTO t VALUES (1, 'one');
CHECKPOINT;
));
my $before = $node->safe_psql('postgres', "SELECT pg_relation_size('t')");

# The next extension, a COPY's (a single session pre-extends for a bulk
# load), pre-extends by a window of 1 GB, all of segment 0.
my $file = $PostgreSQL::Test::Utils::tmp_check . '/sparse.copy';
$node->safe_psql('postgres', qq(
COPY (SELECT g, repeat('x', 2000) FROM generate_series(2, 20) g) TO '$file';
SET polar_bulk_extend_size = '1GB';
COPY t FROM '$file';
CHECKPOINT;
));
my $after = $node->safe_psql('postgres', "SELECT pg_relation_size('t')");
cmp_ok(
	$node->safe_psql('postgres',
		"SELECT logical_pages FROM pgstrata_relation_compression('t') WHERE fork = 'main'"),
	'>=', 100000,
	'the window was made: the fork has over 100,000 logical pages');
cmp_ok($after - $before, '<', 256 * 1024,
	"the file grew by less than 256 kB for a window whose map is 2 MB ($before -> $after bytes)");

my $path = PgStrata::PcsFile::relation_path($node, 'postgres', 't');
is(PgStrata::PcsFile::header($path)->{version},
	PgStrata::PcsFile::FORMAT_VERSION, 'the segment is of the current format');
my %needed = map { (int($_->[0] / PgStrata::PcsFile::MAP_PAGE_ENTRIES) => 1) }
  grep { $_->[0] >= PgStrata::PcsFile::HEADER_ENTRIES }
  PgStrata::PcsFile::entries($path);
is( join(' ', sort { $a <=> $b } keys %{ PgStrata::PcsFile::map_pages($path) }),
	join(' ', sort { $a <=> $b } keys %needed),
	'the segment has the map pages of its blocks with storage, none for the window');

$node->safe_psql('postgres', 'DROP TABLE t');
done_testing();
