
# Copyright (c) 2026, pgstrata developers

# Small relations cost no more in a compressed tablespace than in a plain
# one (format 4).  md stores an empty fork in nothing and a one-page fork
# in 8 kB; format 3 took 4 kB for an empty compressed fork (its header,
# written at creation) and 16 kB for a one-page one (header, a map page,
# 8 kB of data area).  Format 4 writes the header at the fork's first
# extension, keeps the map entries of the first 96 blocks in the header and
# starts the data area with 4 kB.  Format 5 keeps that, and gives a fork
# of more than 96 blocks map pages of 4 kB in its data area, found through
# a directory at 4 kB, instead of a sparse 2 MB map before the data area:
# its file's size follows its data.
#
# Also checked: a fork that grows past the 96 blocks whose entries the
# header holds reads and survives a restart; the header is written at the
# first extension in redo (crash recovery) and for temporary and unlogged
# tables; a fork whose file is empty after a crash is made compressed by
# its first extension.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('small',
	conf => q(
wal_log_hints = on
autovacuum = off
),
	extensions => [qw(amcheck pgstrata)]);
$node->safe_psql('postgres', "CREATE TABLESPACE pts LOCATION ''");

# path(REL): the file of a relation's main fork
sub path
{
	my ($rel) = @_;
	return $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$rel')");
}

# size(REL [, FUNCTION]): pg_relation_size (or another size function)
sub size
{
	my ($rel, $fn) = @_;
	$fn //= 'pg_relation_size';
	return $node->safe_psql('postgres', "SELECT $fn('$rel')");
}

# 1. An empty table: an empty file, compressed or not.
$node->safe_psql('postgres', q(
CREATE TABLE e_c (a int) TABLESPACE cts;
CREATE TABLE e_p (a int) TABLESPACE pts;
CHECKPOINT;
));
ok(-e path('e_c') && -s path('e_c') == 0,
	'an empty compressed table is an empty file');
is(size('e_c'), '0', 'and takes no space');
is(size('e_c'), size('e_p'), 'as an empty plain table');

# Its first row makes it compressed, in format 5.
$node->safe_psql('postgres', q(
INSERT INTO e_c VALUES (1);
INSERT INTO e_p VALUES (1);
CHECKPOINT;
));
ok(PgStrata::PcsFile::is_compressed(path('e_c')),
	'its first extension made it a compressed fork');
is(PgStrata::PcsFile::header(path('e_c'))->{version}, 5,
	'of format version 5');
ok(PgStrata::PcsFile::entry(path('e_c'), 0)->{stored} > 0,
	'block 0 has its entry in the header');
cmp_ok(size('e_c'), '<=', size('e_p'),
	'a one-page compressed table takes no more than a plain one ('
	  . size('e_c') . ' against ' . size('e_p') . ' bytes)');

# 2. Many small tables, each with a primary key and a TOAST table.
my $n = 100;
for my $ts ('cts', 'pts')
{
	my $sql = '';
	$sql .= "CREATE TABLE s_${ts}_$_ (id int PRIMARY KEY USING INDEX TABLESPACE $ts, v text) TABLESPACE $ts;"
	  . "INSERT INTO s_${ts}_$_ VALUES ($_, md5('$_'));\n"
	  for (1 .. $n);
	$node->safe_psql('postgres', $sql);
}
$node->safe_psql('postgres', 'CHECKPOINT');
my $total = sub {
	my ($ts) = @_;
	return $node->safe_psql('postgres',
		"SELECT sum(pg_total_relation_size(oid)) FROM pg_class WHERE relname ~ '^s_${ts}_[0-9]+\$'"
	);
};
my ($c, $p) = ($total->('cts'), $total->('pts'));
cmp_ok($c, '<=', $p,
	"$n one-row tables with a primary key take no more compressed ($c bytes) than plain ($p)");
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pgstrata_compression WHERE fork = 'main' AND relation::text ~ '^s_cts_'"),
	2 * $n, 'each table and its primary key are compressed');
is($node->safe_psql('postgres', "SELECT v FROM s_cts_42 WHERE id = 42"),
	$node->safe_psql('postgres', "SELECT md5('42')"),
	'a row reads through its primary key');

# 3. A table that grows past the 96 blocks whose entries the header holds.
$node->safe_psql('postgres', q(
CREATE TABLE g (id int PRIMARY KEY, v text) TABLESPACE cts;
INSERT INTO g SELECT x, repeat(md5(x::text), 6) FROM generate_series(1, 4000) x;
CHECKPOINT;
));
my $gpages = $node->safe_psql('postgres',
	"SELECT logical_pages FROM pgstrata_relation_compression('g') WHERE fork = 'main'");
cmp_ok($gpages, '>', 96, "the table has $gpages pages, more than 96");
my $gpath = path('g');
ok(PgStrata::PcsFile::entry($gpath, 95)->{stored} > 0
	  && PgStrata::PcsFile::entry($gpath, 96)->{stored} > 0,
	'block 95 has its entry in the header, block 96 in a map page');
is(scalar(PgStrata::PcsFile::entries($gpath)), $gpages,
	'every block has an entry');
is(PgStrata::PcsFile::overlaps($gpath), '', 'no two blocks share a unit');
# format 4 put its data area behind a 2 MB map (at 2101248), whatever the
# fork held; format 5's begins at 8 kB
cmp_ok(-s $gpath, '<', 2101248,
	'the map of a fork of more than 96 blocks takes no 2 MB ('
	  . (-s $gpath) . ' bytes)');
my $gsum = "SELECT count(*), md5(string_agg(v, ',' ORDER BY id)) FROM g";
my $gexpected = $node->safe_psql('postgres', $gsum);
# the first blocks are rewritten in place or moved, the rest too
$node->safe_psql('postgres', q(
UPDATE g SET v = md5(v) WHERE id % 10 = 0;
CHECKPOINT;
));
$gexpected = $node->safe_psql('postgres', $gsum);
$node->restart;
is($node->safe_psql('postgres', $gsum), $gexpected,
	'after updates and a restart the rows are those written');
is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('g')"),
	'0', 'verify_heapam is clean');
is($node->safe_psql('postgres', "SELECT bt_index_check('g_pkey', true)"),
	'', 'the primary key matches the heap');
is(PgStrata::PcsFile::overlaps($gpath), '', 'still no two blocks share a unit');

# 4. Crash recovery makes the header at the first extension it replays: a
# table created and filled after the last checkpoint.
$node->safe_psql('postgres', q(
CHECKPOINT;
CREATE TABLE r (id int, v text) TABLESPACE cts;
INSERT INTO r SELECT x, md5(x::text) FROM generate_series(1, 500) x;
));
my $rpath = path('r');
$node->stop('immediate');
unlink $rpath or die "unlink $rpath: $!";    # redo makes it again
$node->start;
is($node->safe_psql('postgres', 'SELECT count(*) FROM r'), '500',
	'after a crash the rows of a table made after the checkpoint are there');
ok(PgStrata::PcsFile::is_compressed($rpath),
	'redo made its fork compressed at its first extension');

# A fork left empty by a crash (created, never extended before it) is made
# compressed by its first extension after the restart.
$node->safe_psql('postgres', q(
CREATE TABLE z (id int, v text) TABLESPACE cts;
CHECKPOINT;
));
$node->stop('immediate');
$node->start;
ok(-s path('z') == 0, 'the empty fork is still empty after the crash');
$node->safe_psql('postgres',
	"INSERT INTO z SELECT x, md5(x::text) FROM generate_series(1, 100) x");
ok(PgStrata::PcsFile::is_compressed(path('z')),
	'its first extension made it compressed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM z'), '100',
	'and its rows read');

# 5. Temporary and unlogged tables.
is($node->safe_psql('postgres', q(
SET temp_tablespaces = cts;
CREATE TEMP TABLE tt (id int PRIMARY KEY, v text);
INSERT INTO tt SELECT x, md5(x::text) FROM generate_series(1, 300) x;
SELECT count(*) > 0 FROM pgstrata_relation_compression('tt') WHERE fork = 'main';
SELECT count(*) FROM tt WHERE v = md5(id::text);
)), "t\n300", 'a temporary table in the tablespace is compressed and reads');

$node->safe_psql('postgres', q(
CREATE UNLOGGED TABLE u (id int PRIMARY KEY, v text) TABLESPACE cts;
INSERT INTO u SELECT x, md5(x::text) FROM generate_series(1, 300) x;
CHECKPOINT;
));
ok(PgStrata::PcsFile::is_compressed(path('u')),
	'an unlogged table is compressed');
$node->stop('immediate');
$node->start;
is($node->safe_psql('postgres', 'SELECT count(*) FROM u'), '0',
	'after a crash the unlogged table is empty');
$node->safe_psql('postgres', q(
INSERT INTO u SELECT x, md5(x::text) FROM generate_series(1, 300) x;
CHECKPOINT;
));
is($node->safe_psql('postgres', "SELECT count(*) FROM u WHERE v = md5(id::text)"),
	'300', 'and takes rows again');
ok(PgStrata::PcsFile::is_compressed(path('u')), 'compressed');
is($node->safe_psql('postgres', "SELECT bt_index_check('u_pkey', true)"),
	'', 'its primary key matches it');

$node->stop;
done_testing();
