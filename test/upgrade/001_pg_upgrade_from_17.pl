
# Copyright (c) 2026, pgstrata developers

# pg_upgrade from pgstrata on PostgreSQL 17 to pgstrata on PostgreSQL 18,
# in each of 18's transfer modes (--copy, --link, --swap), with a
# compressed tablespace.  Run against 18's build, with 17's release build
# in PGSTRATA_OLD_INSTALL (test/run-checks.sh gives it build/install, which
# make PG=18 check-quick builds first).
#
# The old cluster holds, in a zstd tablespace: a table with zstd TOAST
# values and its primary key, a table of more than 96 pages (formats 4 and
# 5 keep the first 96 blocks' entries in the header, the rest in the map;
# format 5's map pages lie in the data area, found through a directory),
# an empty table (an empty file), a refdata table with a foreign key to
# it, and a plain table in pg_default.  The old build makes segments of
# format 5; the table with TOAST values is rewritten in format 4 before
# the upgrade (PgStrata::PcsFile::to_format_4()), as a cluster made by a
# build of 2026 before format 5 has it, so that both formats go through
# pg_upgrade.  After the upgrade the new cluster must read every row as the
# old one did, amcheck must be clean, the files in the tablespace's new
# version directory must be compressed segments of the format each had,
# the tablespace must keep its options and get its marker and reserve, and
# the relations must take writes and survive a restart.

use strict;
use warnings FATAL => 'all';

use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;

my $old_install = $ENV{PGSTRATA_OLD_INSTALL};
# a missing old build is a failure, not a skip: the suite would test nothing
BAIL_OUT('PGSTRATA_OLD_INSTALL must name the release build of pgstrata on 17')
  unless defined $old_install && -x "$old_install/bin/pg_ctl";

my $new_bindir = (PostgreSQL::Test::Utils::run_command([ 'pg_config', '--bindir' ]))[0];
chomp $new_bindir;
like(
	(PostgreSQL::Test::Utils::run_command([ "$old_install/bin/pg_config", '--version' ]))[0],
	qr/^PostgreSQL 17\./, 'the old build is PostgreSQL 17');
like(
	(PostgreSQL::Test::Utils::run_command([ 'pg_config', '--version' ]))[0],
	qr/^PostgreSQL 18\./, 'the new build is PostgreSQL 18');

my $conf = q(
wal_log_hints = on
autovacuum = off
);

# The queries whose results must be the same before and after
my %queries = (
	t => q(SELECT count(*), sum(length(v)), md5(string_agg(md5(v), ',' ORDER BY id)) FROM t),
	big => q(SELECT count(*), md5(string_agg(v, ',' ORDER BY id)) FROM big),
	empty => q(SELECT count(*) FROM empty),
	r => q(SELECT count(*), md5(string_agg(id || name, ',' ORDER BY id)) FROM r),
	child => q(SELECT count(*), count(r.id) FROM child LEFT JOIN r ON r.id = child.rid),
	plain => q(SELECT count(*), sum(id) FROM plain),
	spc => q(SELECT spcoptions FROM pg_tablespace WHERE spcname = 'cts'),
);

# old_cluster(NAME): a 17 cluster with the data above, stopped; returns the
# node, the tablespace's directory and the results of the queries
sub old_cluster
{
	my ($name) = @_;
	my $old = PostgreSQL::Test::Cluster->new("old_$name",
		install_path => $old_install);
	$old->init(extra => ['--data-checksums']);
	$old->append_conf('postgresql.conf', $conf);
	$old->start;
	my $ts = PostgreSQL::Test::Utils::tempdir();
	$old->safe_psql('postgres', qq(
CREATE EXTENSION refdata;
CREATE TABLESPACE cts LOCATION '$ts' WITH (compression = 'zstd');
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts,
				v text COMPRESSION zstd) TABLESPACE cts;
INSERT INTO t SELECT g, repeat(md5(g::text), 40 + g % 200) FROM generate_series(1, 3000) g;
CREATE TABLE big (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text)
	TABLESPACE cts;
INSERT INTO big SELECT g, md5(g::text) || repeat('x', 100) FROM generate_series(1, 12000) g;
CREATE TABLE empty (a int) TABLESPACE cts;
CREATE TABLE r (id int PRIMARY KEY, name text) USING refdata TABLESPACE cts;
INSERT INTO r SELECT g, 'name ' || g FROM generate_series(1, 200) g;
CREATE TABLE child (id int, rid int REFERENCES r) TABLESPACE cts;
INSERT INTO child SELECT g, g % 200 + 1 FROM generate_series(1, 1000) g;
CREATE TABLE plain (id int);
INSERT INTO plain SELECT generate_series(1, 100);
CHECKPOINT;
));
	my %results = map { $_ => $old->safe_psql('postgres', $queries{$_}) }
	  keys %queries;
	my %files = map {
		$_ => $old->data_dir . '/'
		  . $old->safe_psql('postgres', "SELECT pg_relation_filepath('$_')")
	} qw(t big);
	$old->stop;
	is(PgStrata::PcsFile::header($files{big})->{version}, 5,
		"$name: the old build made format 5 segments");
	# t's forks in format 4, as a build before format 5 made them
	my $converted = 0;
	for my $f (grep { -e $_ } map { "$files{t}$_" } ('', '_fsm', '_vm'))
	{
		next unless PgStrata::PcsFile::is_compressed($f);
		PgStrata::PcsFile::to_format_4($f);
		$converted++;
	}
	is(PgStrata::PcsFile::header($files{t})->{version}, 4,
		"$name: t rewritten in format 4 ($converted forks)");
	return ($old, $ts, \%results);
}

for my $mode ('--copy', '--link', '--swap')
{
	(my $label = $mode) =~ s/^--//;
	my ($old, $ts, $expected) = old_cluster($label);
	my ($old_dir) = glob("$ts/PG_17_*");
	ok(defined $old_dir, "$label: the old cluster's version directory");

	my $new = PostgreSQL::Test::Cluster->new("new_$label");
	$new->init(extra => ['--data-checksums']);
	$new->append_conf('postgresql.conf', $conf);

	# pg_upgrade writes its logs into the new data directory, from there
	my $cwd = PostgreSQL::Test::Utils::tempdir();
	chdir $cwd or die "chdir $cwd: $!";
	command_ok(
		[
			'pg_upgrade', '--no-sync',
			'--old-datadir' => $old->data_dir,
			'--new-datadir' => $new->data_dir,
			'--old-bindir' => $old_install . '/bin',
			'--new-bindir' => $new_bindir,
			'--socketdir' => $new->host,
			'--old-port' => $old->port,
			'--new-port' => $new->port,
			$mode,
		],
		"$label: pg_upgrade from 17 to 18");

	$new->start;
	for my $q (sort keys %queries)
	{
		is($new->safe_psql('postgres', $queries{$q}), $expected->{$q},
			"$label: $q reads as on 17");
	}
	is( $new->safe_psql(
			'postgres', q(
CREATE EXTENSION amcheck;
SELECT count(*) FROM verify_heapam('t');
SELECT count(*) FROM verify_heapam('big');
SELECT bt_index_check('t_pkey', true);
SELECT bt_index_check('big_pkey', true);)),
		"0\n0\n\n",
		"$label: amcheck is clean");

	my ($new_dir) = glob("$ts/PG_18_*");
	ok(defined $new_dir && -e "$new_dir/pgstrata_compression",
		"$label: the tablespace has its 18 version directory and marker");
	ok(-e "$new_dir/pgsql_tmp/pgstrata_reserve", "$label: and its reserve");
	my $datadir = $new->data_dir;
	my %path = map {
		$_ => "$datadir/"
		  . $new->safe_psql('postgres', "SELECT pg_relation_filepath('$_')")
	} qw(t t_pkey big empty r);
	like($path{big}, qr/PG_18_/, "$label: the table is in the 18 directory");
	ok( (!grep { !PgStrata::PcsFile::is_compressed($path{$_}) } qw(t t_pkey big r)),
		"$label: its files are compressed segments");
	is(PgStrata::PcsFile::header($path{big})->{version}, 5,
		"$label: the large table's of format 5, as the old cluster made it");
	ok(%{ PgStrata::PcsFile::map_pages($path{big}) },
		"$label: which has map pages, found through its directory");
	is(PgStrata::PcsFile::header($path{t})->{version}, 4,
		"$label: t's of format 4, as it was rewritten");
	ok(-s $path{empty} == 0, "$label: the empty table is still an empty file");
	is(PgStrata::PcsFile::overlaps($path{big}), '',
		"$label: no two blocks of the large table share a unit");
	is(PgStrata::PcsFile::overlaps($path{t}), '',
		"$label: nor of the table of format 4");

	# writes after the upgrade: rows, the empty table's first, a new table
	$new->safe_psql('postgres', q(
UPDATE big SET v = md5(v) WHERE id % 7 = 0;
INSERT INTO empty VALUES (1);
INSERT INTO t SELECT g, repeat(md5(g::text), 50) FROM generate_series(3001, 3500) g;
CREATE TABLE after (id int) TABLESPACE cts;
INSERT INTO after SELECT generate_series(1, 1000);
CHECKPOINT;
));
	my $after = $new->safe_psql('postgres',
		"$queries{big}; $queries{t}; SELECT count(*) FROM after; $queries{empty}");
	$new->restart;
	is( $new->safe_psql(
			'postgres',
			"$queries{big}; $queries{t}; SELECT count(*) FROM after; $queries{empty}"),
		$after,
		"$label: writes after the upgrade survive a restart");
	ok(PgStrata::PcsFile::is_compressed($path{empty}),
		"$label: the empty table became compressed at its first row");
	is(PgStrata::PcsFile::header($path{t})->{version}, 4,
		"$label: t took its rows in format 4");
	is(PgStrata::PcsFile::overlaps($path{t}), '',
		"$label: and no two of its blocks share a unit");
	like(
		$new->safe_psql('postgres', q(
SET enable_seqscan = off;
SELECT count(*) FROM child JOIN r ON r.id = child.rid WHERE r.id < 10;)),
		qr/^\d+$/, "$label: the refdata table is read through its key");
	$new->stop;
}

done_testing();
