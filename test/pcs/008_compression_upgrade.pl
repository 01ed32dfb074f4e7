
# Copyright (c) 2026, pgstrata developers

# Compressed tablespaces through pg_dumpall and pg_upgrade:
#
# - pg_dumpall --tablespaces-only of a cluster with a compressed tablespace
#   restores into a new cluster with the same compression settings;
# - pg_upgrade to a cluster of the same catalog version refuses a cluster
#   with tablespaces, compressed or not (upstream's rule: both clusters would
#   use the same version directory), and leaves it intact;
# - compressed files outside a compressed tablespace (a database moved to
#   pg_default with ALTER DATABASE SET TABLESPACE keeps them) go through
#   pg_upgrade --copy, --copy-file-range and --link: the new cluster reads
#   them, they are still compressed (the table's segment of format 5 copied
#   as long as its data and no larger, its index's rewritten in format 4
#   keeping its 2 MB map sparse in both copies), pg_dumpall gives the same
#   output, amcheck is clean, and the new cluster has the file that says
#   compressed relations may exist (README.pcs, "Hint bits and full-page
#   images").

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;

my $conf = qq(
wal_log_hints = on
log_statement = none
);

# dumpall(NODE, ARGS...): pg_dumpall output, without the random \restrict key
sub dumpall
{
	my ($node, @args) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_dumpall', '--no-sync', '-d', $node->connstr('postgres'), @args ],
		'>', \$out, '2>', \$err)
	  or return "pg_dumpall failed: $err";
	$out =~ s/^\\(un)?restrict .*$//mg;
	return $out;
}

my $old = PostgreSQL::Test::Cluster->new('old');
$old->init;
$old->append_conf('postgresql.conf', $conf);
$old->start;

my $location = PostgreSQL::Test::Utils::tempdir();
$old->safe_psql('template1', 'CREATE EXTENSION amcheck');
$old->safe_psql('postgres', qq(
CREATE TABLESPACE cts LOCATION '$location'
	WITH (compression = 'zstd', compression_level = 3, seq_page_cost = 1.5);
CREATE DATABASE cdb TABLESPACE cts;
));
$old->safe_psql('cdb', q(
CREATE TABLE c (id int PRIMARY KEY, v text);
INSERT INTO c SELECT g, repeat(md5(g::text), 1 + g % 3) FROM generate_series(1, 20000) g;
CREATE INDEX c_v ON c (v);
CHECKPOINT;
));
ok(PgStrata::PcsFile::relation_is_compressed($old, 'cdb', 'c'),
	'the table is compressed');

# pg_dumpall --tablespaces-only, restored into a new cluster elsewhere.
my $globals = dumpall($old, '--tablespaces-only');
like($globals, qr/CREATE TABLESPACE cts .* WITH \(compression=zstd, compression_level=3, seq_page_cost=1.5\);/,
	'pg_dumpall writes the options into CREATE TABLESPACE');
my $location2 = PostgreSQL::Test::Utils::tempdir();
$globals =~ s/\Q$location\E/$location2/g;
my $restore = PostgreSQL::Test::Cluster->new('restore');
$restore->init;
$restore->append_conf('postgresql.conf', $conf);
$restore->start;
my ($ret, $out, $err) = $restore->psql('postgres', $globals, on_error_stop => 1);
is($ret, 0, 'the tablespaces restore without error') or diag $err;
is( $restore->safe_psql('postgres',
		"SELECT array_to_string(spcoptions, ',') FROM pg_tablespace WHERE spcname = 'cts'"),
	'compression=zstd,compression_level=3,seq_page_cost=1.5',
	'the restored tablespace has the same options');
$restore->safe_psql('postgres', q(
CREATE TABLE r TABLESPACE cts AS SELECT g FROM generate_series(1, 1000) g;
CHECKPOINT;
));
ok(PgStrata::PcsFile::relation_is_compressed($restore, 'postgres', 'r'),
	'and stores its tables compressed');
$restore->stop;

# upgrade(NEW, MODE, ARGS...): run pg_upgrade from the old cluster to NEW;
# returns (exit status, stdout)
sub upgrade
{
	my ($new, $mode, @args) = @_;
	my ($stdout, $stderr) = ('', '');
	my $bindir = $old->config_data('--bindir');
	# pg_upgrade writes into its working directory
	my $cwd = PostgreSQL::Test::Utils::tempdir();
	IPC::Run::run(
		[
			'pg_upgrade', '--no-sync',
			'-d', $old->data_dir, '-D', $new->data_dir,
			'-b', $bindir, '-B', $bindir,
			'-s', $new->host, '-p', $old->port, '-P', $new->port,
			$mode, @args
		],
		'>', \$stdout, '2>', \$stderr, init => sub { chdir $cwd });
	return ($? >> 8, $stdout . $stderr);
}

# A cluster with tablespaces cannot be upgraded to the same catalog
# version: both clusters would use the same PG_17_<catversion> directory.
$old->stop;
my $new1 = PostgreSQL::Test::Cluster->new('new1');
$new1->init;
$new1->append_conf('postgresql.conf', $conf);
my ($rc, $output) = upgrade($new1, '--copy', '--check');
isnt($rc, 0, 'pg_upgrade --check to the same release refuses a tablespace');
like($output, qr/Cannot upgrade to\/from the same system catalog version when\s+using tablespaces/,
	'with upstream\'s reason');
$old->start;
is($old->safe_psql('cdb', 'SELECT count(*) FROM c'), '20000',
	'the old cluster is intact');

# Compressed files in pg_default: move the database out, drop the tablespace.
$old->safe_psql('postgres', q(
ALTER DATABASE cdb SET TABLESPACE pg_default;
DROP TABLESPACE cts;
));
ok(PgStrata::PcsFile::relation_is_compressed($old, 'cdb', 'c'),
	'the moved table is still compressed');
ok(PgStrata::PcsFile::relation_is_compressed($old, 'cdb', 'c_v'),
	'and so is its index');
my $sum = q(SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM c);
my $expect = $old->safe_psql('cdb', $sum);
my $dump = dumpall($old);
my $old_c = PgStrata::PcsFile::relation_path($old, 'cdb', 'c');
my $old_c_v = PgStrata::PcsFile::relation_path($old, 'cdb', 'c_v');
$old->stop;

# The index in format 4, as builds before 2026-12-02 made segments: its
# map of 2 MB, sparse, below the data area goes through the upgrades too.
PgStrata::PcsFile::to_format_4($old_c_v);
is(PgStrata::PcsFile::header($old_c_v)->{version}, 4, 'the index is of format 4');
cmp_ok(scalar(grep { $_->[0] >= PgStrata::PcsFile::HEADER_ENTRIES }
	  PgStrata::PcsFile::entries($old_c_v)), '>', 0,
	'with entries in its 2 MB map, beyond those in its header');

# copied_ok(NODE, LABEL): the new cluster's copies of the table's segment
# (format 5: as long as the old one, and taking no more space, as it has
# no hole) and of the index's (format 4: its 2 MB map stays sparse)
sub copied_ok
{
	my ($node, $label) = @_;
	my $c = $node->data_dir . '/'
	  . $node->safe_psql('cdb', "SELECT pg_relation_filepath('c')");
	my $c_v = $node->data_dir . '/'
	  . $node->safe_psql('cdb', "SELECT pg_relation_filepath('c_v')");
	ok( PgStrata::PcsFile::header($c)->{version} == 5
		  && -s $c == -s $old_c
		  && (stat $c)[12] <= (stat $old_c)[12] + 128,
		"$label: the copy of a compressed segment of format 5 is as long as its source, and no larger ("
		  . (-s $c) . ' bytes, ' . (stat $c)[12] * 512 . ' allocated)');
	ok( PgStrata::PcsFile::header($c_v)->{version} == 4
		  && -s $c_v > PgStrata::PcsFile::V4_DATA_OFFSET
		  && (stat $c_v)[12] * 512 < (-s $c_v) - 1024 * 1024,
		"$label: the copy of a compressed segment of format 4 keeps its 2 MB map sparse");
}

# check_new(NODE, LABEL): the upgraded cluster reads the compressed files
sub check_new
{
	my ($node, $label) = @_;
	ok(PgStrata::PcsFile::relation_is_compressed($node, 'cdb', 'c'),
	"$label: the table is still compressed");
	ok(-e $node->data_dir . '/pgstrata_compressed_storage',
		"$label: the new cluster knows that compressed relations may exist");
	is($node->safe_psql('cdb', $sum), $expect, "$label: it reads back");
	is( $node->safe_psql('cdb',
			q(SELECT (SELECT count(*) FROM verify_heapam('c')) || ' ' || bt_index_check('c_v', true) || bt_index_check('c_pkey', true))),
		'0 ', "$label: amcheck is clean");
	is(dumpall($node), $dump, "$label: pg_dumpall gives the same output");
	$node->safe_psql('cdb', q(
UPDATE c SET v = 'upgraded' WHERE id % 100 = 0;
CHECKPOINT;
));
	is($node->safe_psql('cdb', q(SELECT count(*) FROM c WHERE v = 'upgraded')),
		'200', "$label: it takes writes");
}

($rc, $output) = upgrade($new1, '--copy');
is($rc, 0, 'pg_upgrade --copy') or diag $output;
$new1->start;
copied_ok($new1, 'copy');
check_new($new1, 'copy');
$new1->stop;

# copy_file_range() copies holes as zeros where the file system cannot
# share extents (ext4)
my $new3 = PostgreSQL::Test::Cluster->new('new3');
$new3->init;
$new3->append_conf('postgresql.conf', $conf);
($rc, $output) = upgrade($new3, '--copy-file-range');
is($rc, 0, 'pg_upgrade --copy-file-range') or diag $output;
$new3->start;
copied_ok($new3, 'copy_file_range()');
check_new($new3, 'copy-file-range');
$new3->stop;

my $new2 = PostgreSQL::Test::Cluster->new('new2');
$new2->init;
$new2->append_conf('postgresql.conf', $conf);
($rc, $output) = upgrade($new2, '--link');
is($rc, 0, 'pg_upgrade --link') or diag $output;
$new2->start;
check_new($new2, 'link');
$new2->stop;

done_testing();
