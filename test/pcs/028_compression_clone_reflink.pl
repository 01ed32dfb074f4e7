
# Copyright (c) 2026, pgstrata developers

# file_copy_method = clone (PostgreSQL 18) where cloning is real: a file
# system whose copy_file_range() shares extents (XFS with reflinks; make
# check mounts one when run by root and names it in PGSTRATA_REFLINKFS,
# test/lib.sh).  pcs/025 covers the same commands on a file system that
# copies bytes (and a standby).  With a database in a compressed tablespace
# on that file system:
#
# 1. CREATE DATABASE ... STRATEGY FILE_COPY by clone makes compressed
#    segments with their sources' length and bytes whose extents are
#    shared with the sources (FIEMAP), so the file system's used space
#    grows by a small part of what the same copy by file_copy_method = copy
#    takes; the map stays sparse.
# 2. Writes into the clone are copy-on-write: the source's segments keep
#    their bytes, the clone's change, and each database reads back its own
#    rows (against plain ledger tables) with amcheck clean.
# 3. ALTER DATABASE ... SET TABLESPACE by clone, into a second compressed
#    tablespace on the same file system, of a database cloned from the
#    first: the moved segments still share their extents with the first
#    database's.

use strict;
use warnings FATAL => 'all';

use Digest::MD5;
use File::Path;
use File::Temp;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Amcheck;
use PgStrata::PcsFile qw(compressed_files allocated copy_differences);

my $node = PostgreSQL::Test::Cluster->new('reflink');
if ($node->pg_version < 18)
{
	plan skip_all => 'file_copy_method exists from PostgreSQL 18 on';
}
my $fs = $ENV{PGSTRATA_REFLINKFS};
if (!defined $fs)
{
	plan skip_all =>
	  'no file system with reflinks (PGSTRATA_REFLINKFS; make check mounts one when run by root)';
}
# given one, it must be usable: a failure, not a skip
BAIL_OUT("PGSTRATA_REFLINKFS is not a writable directory: $fs")
  unless -d $fs && -w $fs;
my ($filefrag) = grep { -x } qw(/usr/sbin/filefrag /sbin/filefrag);
BAIL_OUT('filefrag (e2fsprogs) is needed to read a file\'s extents')
  unless defined $filefrag;

# extents(PATH): [shared bytes, all bytes] of a file's extents (FIEMAP)
sub extents
{
	my ($path) = @_;
	my ($stdout, $stderr);
	IPC::Run::run([ $filefrag, '-v', '-b4096', $path ], '>', \$stdout,
		'2>', \$stderr)
	  or die "filefrag $path: $stderr";
	my ($shared, $all) = (0, 0);
	for my $line (split /\n/, $stdout)
	{
		# " 0:   0..  1023:   24..  1047:   1024:   last,shared,eof"
		my ($blocks, $flags) = $line =~
		  /^\s*\d+:\s+\d+\.\.\s*\d+:\s+\d+\.\.\s*\d+:\s+(\d+):\s*(?:\d+:)?\s*(\S*)/
		  or next;
		$all += $blocks * 4096;
		$shared += $blocks * 4096 if $flags =~ /\bshared\b/;
	}
	return [ $shared, $all ];
}

# used_kb(): the file system's used space in kB, after a sync
sub used_kb
{
	system('sync') == 0 or die 'sync failed';
	my ($stdout, $stderr);
	IPC::Run::run([ 'df', '-k', '--output=used', $fs ], '>', \$stdout,
		'2>', \$stderr)
	  or die "df $fs: $stderr";
	my ($kb) = $stdout =~ /(\d+)\s*$/ or die "df: $stdout";
	return $kb;
}

# md5s(DIR, FILES): relative path => MD5 of each of a compressed_files()
sub md5s
{
	my ($dir, $files) = @_;
	my %sum;
	for my $f (keys %$files)
	{
		open my $fh, '<:raw', "$dir/$f" or die "open $dir/$f: $!";
		$sum{$f} = Digest::MD5->new->addfile($fh)->hexdigest;
		close $fh;
	}
	return \%sum;
}

# The file system must share extents, or nothing below means anything.
{
	my $probe = "$fs/probe.$$";
	open my $fh, '>:raw', $probe or die "open $probe: $!";
	print $fh 'x' x (1024 * 1024);
	close $fh;
	my ($stdout, $stderr);
	IPC::Run::run([ 'cp', '--reflink=always', $probe, "$probe.clone" ],
		'>', \$stdout, '2>', \$stderr)
	  or BAIL_OUT("PGSTRATA_REFLINKFS does not share extents: $stderr");
	system('sync');
	BAIL_OUT('PGSTRATA_REFLINKFS: a reflinked copy has no shared extent')
	  unless extents("$probe.clone")->[0] > 0;
	unlink $probe, "$probe.clone";
}

$node->init;
$node->append_conf('postgresql.conf', qq(
autovacuum = off
log_statement = none
));
$node->start;

# the tablespaces in a directory of this run's own on that file system
my $tsdir = File::Temp::tempdir('pcs028_XXXX', DIR => $fs);
mkdir "$tsdir/cts" or die "mkdir $tsdir/cts: $!";
mkdir "$tsdir/cts2" or die "mkdir $tsdir/cts2: $!";
$node->safe_psql('postgres', qq(
CREATE TABLESPACE cts LOCATION '$tsdir/cts' WITH (compression = 'zstd');
CREATE TABLESPACE cts2 LOCATION '$tsdir/cts2' WITH (compression = 'zstd');
CREATE DATABASE cdb TABLESPACE cts;
));
# about 20 MB of compressed segments, with a plain ledger of the same rows
$node->safe_psql('cdb', q(
CREATE EXTENSION amcheck;
CREATE TABLE c (id int PRIMARY KEY, k int, v text);
CREATE INDEX c_k ON c (k);
CREATE TABLE ledger (id int PRIMARY KEY, k int, v text) TABLESPACE pg_default;
BEGIN;
INSERT INTO c SELECT g, g % 100, md5(g::text) || repeat(md5((g % 997)::text), 1 + g % 4)
	FROM generate_series(1, 200000) g;
INSERT INTO ledger SELECT * FROM c;
COMMIT;
CHECKPOINT;
));

# dbdir(DB): the directory of a database's default tablespace
sub dbdir
{
	my ($db) = @_;
	my ($dboid, $spcoid) = split /\|/, $node->safe_psql('postgres', qq(
SELECT oid, dattablespace FROM pg_database WHERE datname = '$db'));
	my @dirs = glob($node->data_dir . "/pg_tblspc/$spcoid/PG_*/$dboid");
	die "no directory of $db" unless @dirs == 1;
	return $dirs[0];
}

my $srcdir = dbdir('cdb');
my $src = compressed_files($srcdir);
my $src_alloc = allocated($src);
cmp_ok($src_alloc, '>', 8 * 1024 * 1024,
	"cdb's compressed segments take $src_alloc bytes");
my $src_md5 = md5s($srcdir, $src);

# The share of a copy's compressed bytes held in extents shared with
# another file.
sub shared_share
{
	my ($dir, $files) = @_;
	my ($shared, $all) = (0, 0);
	for my $f (keys %$files)
	{
		my $e = extents("$dir/$f");
		$shared += $e->[0];
		$all += $e->[1];
	}
	return $all ? $shared / $all : 0;
}

# 1. By copy, then by clone, into the same tablespace; the used space each
# takes, after a sync.
my %grew;
for my $method (qw(copy clone))
{
	my $before = used_kb();
	$node->safe_psql('postgres', qq(
SET file_copy_method = $method;
CREATE DATABASE by_$method TEMPLATE cdb STRATEGY FILE_COPY;
));
	$grew{$method} = used_kb() - $before;
	my $dir = dbdir("by_$method");
	my $files = compressed_files($dir);
	my ($missing, $differ) = copy_differences($srcdir, $src, $dir, $files);
	is($missing, '', "by $method: every compressed segment is copied compressed");
	is($differ, '', "by $method: with its source's length and bytes");
	my $alloc = allocated($files);
	cmp_ok($alloc, '<=', $src_alloc + 1024 * 1024,
		"by $method: the map stays sparse ($alloc bytes allocated, the source $src_alloc)");
	note sprintf('by %s: the file system grew by %d kB; %.1f%% of the bytes of the compressed segments are in shared extents',
		$method, $grew{$method}, 100 * shared_share($dir, $files));
}
cmp_ok(shared_share(dbdir('by_clone'), compressed_files(dbdir('by_clone'))),
	'>=', 0.95,
	'by clone: at least 95% of the compressed segments\' bytes are in extents shared with the source'
);
cmp_ok($grew{copy}, '>=', $src_alloc / 1024 / 2,
	"by copy: the file system grew by $grew{copy} kB, at least half the source");
cmp_ok($grew{clone}, '<', $grew{copy} / 5,
	"by clone: the file system grew by $grew{clone} kB, less than a fifth of the copy's $grew{copy} kB"
);

# 2. Copy-on-write: the clone takes writes, the source keeps its bytes.
$node->safe_psql('by_clone', q(
UPDATE c SET v = 'changed ' || id WHERE id % 10 = 0;
UPDATE ledger SET v = 'changed ' || id WHERE id % 10 = 0;
DELETE FROM c WHERE id > 190000;
DELETE FROM ledger WHERE id > 190000;
VACUUM c;
VACUUM ledger;
CHECKPOINT;
));
my $after = md5s($srcdir, compressed_files($srcdir));
is(join(' ', grep { ($after->{$_} // '') ne $src_md5->{$_} } sort keys %$src_md5),
	'', 'the source\'s segments keep their bytes after writes into the clone');
my $clonedir = dbdir('by_clone');
my $clone_md5 = md5s($clonedir, compressed_files($clonedir));
cmp_ok(scalar(grep { ($clone_md5->{$_} // '') ne $src_md5->{$_} } keys %$src_md5),
	'>', 0, 'the clone\'s segments changed');

# 3. ALTER DATABASE ... SET TABLESPACE by clone, into cts2, of a database
# cloned from cdb: the moved files share their extents with cdb's.
{
	my $before = used_kb();
	$node->safe_psql('postgres', q(
SET file_copy_method = clone;
CREATE DATABASE moved TEMPLATE cdb STRATEGY FILE_COPY;
ALTER DATABASE moved SET TABLESPACE cts2;
));
	my $dir = dbdir('moved');
	my $files = compressed_files($dir);
	my ($missing, $differ) = copy_differences($srcdir, $src, $dir, $files);
	is($missing, '', 'moved to cts2: every compressed segment is copied compressed');
	is($differ, '', 'moved to cts2: with its source\'s length and bytes');
	cmp_ok(shared_share($dir, $files), '>=', 0.95,
		'moved to cts2: at least 95% of the bytes are in extents shared with cdb');
	my $grew = used_kb() - $before;
	cmp_ok($grew, '<', $grew{copy} / 5,
		"cloned and moved: the file system grew by $grew kB, less than a fifth of a copy");
}

# Every database reads back its ledger's rows, and amcheck is clean.
for my $db (qw(cdb by_copy by_clone moved))
{
	is( $node->safe_psql($db, q(
SELECT (SELECT count(*) FROM ((TABLE c EXCEPT TABLE ledger)
		UNION ALL (TABLE ledger EXCEPT TABLE c)) d) || ' '
	|| (SELECT count(*) FROM c))),
		$db eq 'by_clone' ? '0 190000' : '0 200000',
		"$db: the rows are the ledger's");
	is($node->safe_psql($db, PgStrata::Amcheck::clean_query(0)),
		'0 true', "$db: amcheck is clean");
}

$node->stop;
# the file system is small: give its space back for the next run
File::Path::rmtree($tsdir);
done_testing();
