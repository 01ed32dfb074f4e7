
# Copyright (c) 2026, pgstrata developers

# file_copy_method = clone (PostgreSQL 18) with whole-database copies of
# compressed files, on a primary and on a streaming standby that replays
# the copies with its own file_copy_method = clone:
#
# 1. CREATE DATABASE ... STRATEGY FILE_COPY of a database whose default
#    tablespace is compressed, into pg_default and into the compressed
#    tablespace, by clone and (for comparison) by copy: every compressed
#    segment of the copies has its source's length and bytes, and the
#    copies stay compressed.
# 2. Cloned compressed segments keep the map sparse: together they take at
#    most 1 MB more than their sources (on the primary and on the standby)
#    and than the copies file_copy_method = copy makes.  On a file system
#    without reflinks, clone's copy_file_range() writes every byte, and
#    used to give each compressed fork its 2 MB map back (hundreds of MB
#    for one database).  Holes that a truncation punched in a data area
#    are filled by both methods there, as by copy_file().
# 3. ALTER DATABASE ... SET TABLESPACE with clone, out of the compressed
#    tablespace and back into it, keeps the map sparse likewise.
# 4. Every copy reads back the rows of a plain ledger table written in the
#    same transactions, takes writes, and amcheck (verify_heapam,
#    bt_index_check with heapallindexed) is clean, on the primary and on
#    the standby.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Amcheck;
use PgStrata::Node;
use PgStrata::PcsFile qw(compressed_files allocated copy_differences);

my $primary = PostgreSQL::Test::Cluster->new('primary');
if ($primary->pg_version < 18)
{
	plan skip_all => 'file_copy_method exists from PostgreSQL 18 on';
}
PgStrata::Node::compressed_node($primary,
	init => { allows_streaming => 1 },
	conf => q(
autovacuum = off
log_statement = none
),
	create_tablespace => 0);

my ($ret, $out, $err) =
  $primary->psql('postgres', 'SET file_copy_method = clone');
if ($ret != 0)
{
	plan skip_all => "this build has no file_copy_method = clone: $err";
}

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->append_conf('postgresql.conf', "file_copy_method = clone\n");
$standby->start;

# cdb lives in the compressed tablespace, its catalogs included; its
# ledger is plain (in the plain tablespace pts, as the copies go to
# pg_default), so FILE_COPY copies both directories.
# q loses its tail to VACUUM's truncation, which punches holes into its
# segment's data area.
PgStrata::Node::create_tablespace($primary);
$primary->safe_psql('postgres', q(
CREATE TABLESPACE pts LOCATION '';
CREATE DATABASE cdb TABLESPACE cts;
));
$primary->safe_psql('cdb', q(
CREATE EXTENSION amcheck;
CREATE TABLE c (id int PRIMARY KEY, k int, v text);
CREATE INDEX c_k ON c (k);
CREATE TABLE ledger (id int PRIMARY KEY, k int, v text) TABLESPACE pts;
BEGIN;
INSERT INTO c SELECT g, g % 100, repeat(md5(g::text), 1 + g % 4)
	FROM generate_series(1, 20000) g;
INSERT INTO ledger SELECT * FROM c;
COMMIT;
CREATE TABLE q (id int, v text);
INSERT INTO q SELECT g, md5(g::text) FROM generate_series(1, 30000) g;
DELETE FROM q WHERE id > 2000;
VACUUM q;
CHECKPOINT;
));
my $qpath = PgStrata::PcsFile::relation_path($primary, 'cdb', 'q');
ok(PgStrata::PcsFile::is_compressed($qpath), 'q is stored compressed');
note 'q: ' . (-s $qpath) . ' bytes long, '
  . (stat $qpath)[12] * 512 . ' bytes allocated after its truncation';

# dbdir(NODE, DB): the directory of a database's default tablespace
sub dbdir
{
	my ($node, $db) = @_;
	my ($dboid, $spcname, $spcoid) = split /\|/, $node->safe_psql('postgres', qq(
SELECT d.oid, t.spcname, t.oid FROM pg_database d
	JOIN pg_tablespace t ON t.oid = d.dattablespace WHERE d.datname = '$db'));
	return $node->data_dir . "/base/$dboid" if $spcname eq 'pg_default';
	my @dirs = glob($node->data_dir . "/pg_tblspc/$spcoid/PG_*/$dboid");
	die "no directory of $db in $spcname" unless @dirs == 1;
	return $dirs[0];
}

# The source's segments, before any copy; it is not used meanwhile
# (autovacuum is off), so its bytes do not change.  The standby's are its
# own: it compresses the pages it writes itself.
my $srcdir = dbdir($primary, 'cdb');
my $src = compressed_files($srcdir);
cmp_ok(scalar(keys %$src), '>', 100,
	'cdb\'s catalogs and tables are compressed segments');
my $src_alloc = allocated($src);
note "cdb: " . scalar(keys %$src) . " compressed segments, $src_alloc bytes allocated";

# same_as_source(NODE, DB, LABEL): the compressed segments of a copy made
# from cdb have their source's (on the same node) length and bytes;
# returns them
sub same_as_source
{
	my ($node, $db, $label) = @_;
	my $srcdir = dbdir($node, 'cdb');
	my $src = compressed_files($srcdir);
	my $dir = dbdir($node, $db);
	my $files = compressed_files($dir);
	my ($missing, $differ) = copy_differences($srcdir, $src, $dir, $files);
	is($missing, '', "$label: every compressed segment is copied compressed");
	is($differ, '', "$label: with its source's length and bytes");
	return $files;
}

# Copies by clone and by copy, before anything reads them.
$primary->safe_psql('postgres', q(
SET file_copy_method = clone;
CREATE DATABASE clone_plain TEMPLATE cdb TABLESPACE pg_default STRATEGY FILE_COPY;
CREATE DATABASE clone_cts TEMPLATE cdb STRATEGY FILE_COPY;
CREATE DATABASE moved TEMPLATE cdb STRATEGY FILE_COPY;
SET file_copy_method = copy;
CREATE DATABASE copy_plain TEMPLATE cdb TABLESPACE pg_default STRATEGY FILE_COPY;
));
my %alloc;
for my $db (qw(clone_plain clone_cts copy_plain))
{
	$alloc{$db} = allocated(same_as_source($primary, $db, $db));
	note "$db: $alloc{$db} bytes allocated to compressed segments";
}
for my $db (qw(clone_plain clone_cts))
{
	cmp_ok($alloc{$db}, '<=', $src_alloc + 1024 * 1024,
		"$db: cloned segments keep the map sparse: at most 1 MB more than the source's $src_alloc bytes"
	);
	cmp_ok($alloc{$db}, '<=', $alloc{copy_plain} + 1024 * 1024,
		"$db: and at most 1 MB more than file_copy_method = copy's $alloc{copy_plain} bytes"
	);
}

# ALTER DATABASE ... SET TABLESPACE by clone: out of cts, then back.
$primary->safe_psql('postgres', q(
SET file_copy_method = clone;
ALTER DATABASE moved SET TABLESPACE pg_default;
));
$alloc{moved_out} = allocated(same_as_source($primary, 'moved', 'moved to pg_default'));
$primary->safe_psql('postgres', q(
SET file_copy_method = clone;
ALTER DATABASE moved SET TABLESPACE cts;
));
$alloc{moved_back} = allocated(same_as_source($primary, 'moved', 'moved back to cts'));
for my $m (qw(moved_out moved_back))
{
	cmp_ok($alloc{$m}, '<=', $src_alloc + 1024 * 1024,
		"$m: cloned by ALTER DATABASE SET TABLESPACE, at most 1 MB more than the source ($alloc{$m} bytes)"
	);
}

# The standby replayed the copies with its own file_copy_method = clone.
$primary->wait_for_catchup($standby);
my $standby_src_alloc = allocated(compressed_files(dbdir($standby, 'cdb')));
for my $db (qw(clone_plain clone_cts moved))
{
	my $a = allocated(same_as_source($standby, $db, "standby: $db"));
	cmp_ok($a, '<=', $standby_src_alloc + 1024 * 1024,
		"standby: $db, cloned in redo, at most 1 MB more than its source ($a bytes, $standby_src_alloc)"
	);
}

# check_db(NODE, DB, LABEL): the rows are the ledger's and amcheck is clean
sub check_db
{
	my ($node, $db, $label) = @_;
	is( $node->safe_psql($db, q(
SELECT (SELECT count(*) FROM c) || ' '
	|| (SELECT count(*) FROM ((TABLE c EXCEPT TABLE ledger)
		UNION ALL (TABLE ledger EXCEPT TABLE c)) d) || ' '
	|| (SELECT count(*) FROM q))),
		'20000 0 2000', "$label: the rows are the ledger's");
	is($node->safe_psql($db, PgStrata::Amcheck::clean_query(100)),
		'0 true', "$label: verify_heapam and bt_index_check are clean");
}

for my $db (qw(clone_plain clone_cts copy_plain moved))
{
	ok(PgStrata::PcsFile::relation_is_compressed($primary, $db, 'c'),
		"$db: c is still compressed");
	check_db($primary, $db, $db);
	check_db($standby, $db, "standby: $db");
}

# Writes into the clones, new relations in them, replayed by the standby.
for my $db (qw(clone_plain clone_cts moved))
{
	$primary->safe_psql($db, q(
BEGIN;
UPDATE c SET v = v || '+' WHERE id % 10 = 0;
UPDATE ledger SET v = v || '+' WHERE id % 10 = 0;
INSERT INTO c SELECT g, g % 100, md5(g::text) FROM generate_series(20001, 22000) g;
INSERT INTO ledger SELECT * FROM c WHERE id > 20000;
COMMIT;
DELETE FROM c WHERE id > 20000;
DELETE FROM ledger WHERE id > 20000;
CHECKPOINT;
));
}
$primary->wait_for_catchup($standby);
for my $db (qw(clone_plain clone_cts moved))
{
	check_db($primary, $db, "$db after writes");
	check_db($standby, $db, "standby: $db after writes");
}

$standby->stop;
$primary->stop;
done_testing();
