
# Copyright (c) 2026, pgstrata developers

# The bulk I/O counters per relation (issue 19): pgstrata_bulk_io_relations
# shows, for each table and index of the current database, the bulk reads,
# the blocks they read, the heap pre-extensions and the blocks they added,
# and the pre-extensions of index builds.
#
# - a COPY that pre-extends counts one pre-extension of 512 blocks on its
#   table, and nothing on a table it did not touch;
# - VACUUM of a table whose pages are not in shared buffers counts bulk
#   reads on that table, and a scan of another table counts on that one;
# - a B-tree build counts its pre-extension and trimmed tail on the index;
# - every count of the per-backend-type view is in the per-relation
#   function too, so their sums agree;
# - a table of another database is not in this database's view, but is in
#   the function;
# - pgstrata_bulk_io_reset() empties both;
# - only superusers and pg_read_all_stats can read them.

use strict;
use warnings FATAL => 'all';

use Digest::MD5 qw(md5_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('relations');
$node->init;
$node->append_conf('postgresql.conf', q(
shared_buffers = 32MB
autovacuum = off
checkpoint_timeout = 1h
));
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION pgstrata;
CREATE DATABASE other;
));
$node->safe_psql('other', 'CREATE EXTENSION pgstrata');

# Two tables of about 1,230 pages (above the 8 MB of
# polar_min_bulk_extend_table_size), loaded without pre-extension.
for my $t ('big', 'quiet')
{
	$node->safe_psql('postgres', qq(
SET polar_bulk_extend_size = 0;
CREATE TABLE $t (id int, v text);
INSERT INTO $t SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 75000) g;
VACUUM $t;
));
}
$node->safe_psql('other', q(
CREATE TABLE elsewhere (id int, v text);
INSERT INTO elsewhere SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 20000) g;
));

# rel(TABLE, COLUMNS): the view's columns for one relation, '' if no row
sub rel
{
	my ($rel, $cols) = @_;
	return $node->safe_psql('postgres',
		"SELECT $cols FROM pgstrata_bulk_io_relations WHERE relid = '$rel'::regclass"
	);
}

# sums_agree(LABEL): the function's sums equal the per-backend-type view's
sub sums_agree
{
	my ($label) = @_;
	my $cols = join(', ',
		map { "sum($_)" }
		  qw(bulk_reads bulk_read_blocks heap_pre_extensions
		  heap_pre_extended_blocks index_pre_extensions
		  index_pre_extended_blocks index_trimmed_blocks));
	my $by_type = $node->safe_psql('postgres', "SELECT $cols FROM pgstrata_bulk_io");
	my $by_rel = $node->safe_psql('postgres',
		"SELECT $cols FROM pgstrata_bulk_io_relations()");
	is($by_rel, $by_type,
		"$label: the relations' sums are the backend types' ($by_type)");
}

# --- a COPY that pre-extends ---
my $file = $PostgreSQL::Test::Utils::tmp_check . '/relations.copy';
open my $fh, '>', $file or die "could not write $file: $!";
for my $id (100001 .. 102000)
{
	my $md5 = md5_hex($id);
	print $fh "$id\t$md5$md5$md5\n";
}
close $fh;
$node->safe_psql('postgres', 'SELECT pgstrata_bulk_io_reset()');
$node->safe_psql('postgres', "COPY big FROM '$file'");
is(rel('big', 'heap_pre_extensions, heap_pre_extended_blocks'),
	'1|512', 'COPY: one pre-extension of 512 blocks on the table');
is(rel('quiet', 'count(*)'), '0', 'nothing on a table the COPY did not touch');
sums_agree('after the COPY');

# --- bulk reads: VACUUM and a sequential scan with empty shared buffers ---
$node->restart;
$node->safe_psql('postgres', 'VACUUM (DISABLE_PAGE_SKIPPING) big');
my ($reads, $blocks) = split /\|/,
  rel('big', 'bulk_reads, bulk_read_blocks');
ok($reads > 0 && $blocks >= 1000,
	"VACUUM read the table in bulk ($reads reads, $blocks blocks)");
is(rel('quiet', 'count(*)'), '0', 'VACUUM of one table counts nothing on another');
$node->safe_psql('postgres', 'SELECT count(*) FROM quiet');
ok(rel('quiet', 'bulk_read_blocks') >= 1000,
	'a sequential scan counts its bulk reads on its table');
sums_agree('after VACUUM and the scan');

# --- an index build ---
$node->safe_psql('postgres', 'CREATE INDEX big_v ON big (v)');
my ($ext, $trim) = split /\|/,
  rel('big_v', 'index_pre_extensions, index_trimmed_blocks');
ok($ext >= 1 && $trim > 0,
	"the B-tree build pre-extended the index ($ext times, $trim blocks trimmed)");
is(rel('big', 'index_pre_extensions'), '0',
	'the build counts on the index, not on its table');
sums_agree('after the index build');

# --- another database ---
$node->restart;
$node->safe_psql('other', 'SELECT count(*) FROM elsewhere');
is($node->safe_psql('other',
		"SELECT bulk_reads > 0 FROM pgstrata_bulk_io_relations WHERE relname = 'elsewhere'"),
	't', 'the other database shows its table');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pgstrata_bulk_io_relations WHERE relname = 'elsewhere'"),
	'0', 'this database does not show it');
my $filenode = $node->safe_psql('other', "SELECT pg_relation_filenode('elsewhere')");
is($node->safe_psql('postgres', qq(
SELECT bulk_reads > 0 FROM pgstrata_bulk_io_relations()
WHERE reldatabase = (SELECT oid FROM pg_database WHERE datname = 'other')
  AND relfilenode = $filenode)),
	't', 'the function shows it');

# --- reset and privileges ---
$node->safe_psql('postgres', 'SELECT pgstrata_bulk_io_reset()');
is($node->safe_psql('postgres', 'SELECT count(*) FROM pgstrata_bulk_io_relations()'),
	'0', 'a reset empties the counters of the relations');
$node->safe_psql('postgres', q(
CREATE ROLE nobody LOGIN;
CREATE ROLE watcher LOGIN IN ROLE pg_read_all_stats;
));
my ($ret, $out, $err) = $node->psql('postgres',
	'SELECT * FROM pgstrata_bulk_io_relations', extra_params => [ '-U', 'nobody' ]);
like($err, qr/permission denied/, 'an ordinary role cannot read the view');
is($node->safe_psql('postgres', 'SELECT count(*) >= 0 FROM pgstrata_bulk_io_relations',
		extra_params => [ '-U', 'watcher' ]),
	't', 'pg_read_all_stats can');

done_testing();
