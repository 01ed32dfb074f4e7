
# Copyright (c) 2026, pgstrata developers
#
# An I/O error reading a relation is an ERROR for the statement that meets
# it, and the server stays up: no read may turn it into a signal.
#
# A disk's bad sector makes read() fail with EIO, which the storage
# manager reports as "could not read blocks ...: Input/output error"; but
# the same failure met by the page fault of a shared mapping is SIGBUS,
# which kills the backend and makes the postmaster restart every session,
# and again at each later query that touches those bytes.  The header and
# map of a compressed segment were read through such a mapping until
# 2026-12-02; they are read with pread now (pcs_meta.c).
#
# The tablespaces live on faultfs (test/fault/faultfs.c), a FUSE
# pass-through whose reads of chosen byte ranges of a file fail on
# command, mounted for the test user by the root service
# test/fault/faultfs-service.sh (PGSTRATA_FAULTFS; skipped without it).
# Three cases, each with the server restarted first so that nothing is in
# shared buffers or in the kernel's cache:
#
#   1. a plain table: reads of one data block fail;
#   2. a compressed table: reads of the map page that holds the entries
#      of blocks 256..511 fail (blocks 0..95 keep theirs in the header;
#      in format 5 map pages of 4 kB lie in the data area, found through
#      a directory that lies there too, located by a header word);
#   2b. a compressed table: reads of that directory fail;
#   3. a compressed table: reads of the image of one block fail.
#
# Each must give the query an ERROR naming "Input/output error", and the
# server must stay up: the same postmaster, a session opened before the
# query still answering, no "terminated by signal" in the log, other
# queries answered.  faultfs counts the reads it failed, so a case whose
# fault was never met fails too.
#
# Case 2 (then the map of format 4) failed while the map was mapped: SIGBUS ("terminated by signal 7:
# Bus error") and a restart of every session.  Case 3 used to be an ERROR
# that called a disk error corruption ("invalid compressed page ... cut
# short by the end of the file"): a pread that meets the error after some
# bytes returns those, and the image read took the short count for a short
# image; it now asks for the rest, as md.c does, and gets EIO.  On
# PostgreSQL 18 the asynchronous read's completion cannot ask again: a
# read that stops short below the end of a file seen to hold the image is
# "could not read block ...: the read stopped before the end of the file"
# (SQLSTATE 58030), where it too was called damage.
#
# test/fault/001_eio_metadata.pl

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);

use FindBin;
use lib "$FindBin::RealBin/..";
use PgStrata::FaultFS;
use PgStrata::Node;
use PgStrata::PcsFile;
use PgStrata::RootService;

my $svc = PgStrata::RootService::service_or_skip('PGSTRATA_FAULTFS', 'faultfs',
	PgStrata::FaultFS::service());

my $fs = PgStrata::FaultFS->new($svc, "eio$$");
$fs->mount;
my $mnt = $fs->mnt;
mkdir("$mnt/$_") or die "mkdir $mnt/$_: $!" for qw(cts pts);

# A node as PgStrata::Node makes them, but with its tablespaces on
# faultfs rather than in place.
my $node = PgStrata::Node::compressed_node(
	'eio',
	create_tablespace => 0,
	conf => q(
autovacuum = off
restart_after_crash = on
shared_buffers = 16MB
));
$node->safe_psql(
	'postgres', qq(
CREATE TABLESPACE cts LOCATION '$mnt/cts' WITH (compression = 'zstd');
CREATE TABLESPACE pts LOCATION '$mnt/pts';
));

# Rows of about 250 bytes that compress: about 30 to a block, so 15,000
# rows fill 500 blocks, past block 355 and its map page (page 1: blocks
# 256..511).
my $rows = 15000;
for my $t ([ 'plain_t', 'pts' ], [ 'comp_t', 'cts' ], [ 'other_t', 'pts' ])
{
	$node->safe_psql(
		'postgres', qq(
CREATE TABLE $t->[0] (id int, pad text) TABLESPACE $t->[1];
INSERT INTO $t->[0]
  SELECT i, md5(i::text) || repeat(chr(65 + i % 26), 200)
  FROM generate_series(1, $rows) i;
VACUUM (FREEZE, ANALYZE) $t->[0];
));
}
$node->safe_psql('postgres', 'CHECKPOINT');
my $blocks = $node->safe_psql('postgres',
	"SELECT relpages FROM pg_class WHERE relname = 'comp_t'");
cmp_ok($blocks, '>', 356, "the compressed table has $blocks blocks, past 355");
ok( PgStrata::PcsFile::relation_is_compressed($node, 'postgres', 'comp_t'),
	'comp_t is stored compressed');
ok( !PgStrata::PcsFile::relation_is_compressed($node, 'postgres', 'plain_t'),
	'plain_t is stored plain');
is(PgStrata::PcsFile::header(
		PgStrata::PcsFile::relation_path($node, 'postgres', 'comp_t'))
	  ->{version},
	PgStrata::PcsFile::FORMAT_VERSION,
	'the segment has the current format (entries of blocks 0..95 in the header)'
);

# postmaster_pid(): the first line of postmaster.pid
sub postmaster_pid
{
	open(my $f, '<', $node->data_dir . '/postmaster.pid') or return 0;
	my $pid = <$f>;
	close($f);
	chomp $pid;
	return $pid;
}

# eio_case(NAME, PATH, OFFSET, LENGTH, QUERY): restart the server with
# reads of [OFFSET, OFFSET + LENGTH) of PATH failing, run QUERY, which
# must read them, and check that it gets an I/O error and that the server
# stays up; then clear the fault and wait for the server
sub eio_case
{
	my ($name, $path, $offset, $len, $query) = @_;

	$node->stop;
	$fs->fail_range($path, $offset, $len);
	$node->start;
	my $pid = postmaster_pid();
	my $log_offset = -s $node->logfile;
	my $failed_before = $fs->failed_reads;
	my $held = $node->background_psql('postgres', timeout => 60);
	my $held_pid = $held->query_safe('SELECT pg_backend_pid()');

	my ($ret, $out, $err) = $node->psql('postgres', $query);
	note "$name: psql exit $ret, stderr: $err";
	cmp_ok($fs->failed_reads, '>', $failed_before,
		"$name: the query met the failed reads");
	is($ret, 3, "$name: the query gets an ERROR, not a lost connection");

	# PostgreSQL 18's asynchronous reads: a read that stops short inside
	# the file is an I/O error the completion cannot read again to name
	# (md.c's completion reports the same fault inside a block as "read
	# only N of M bytes"); it must still be a failed read, not damage.
	like(
		$err,
		qr/ERROR:  .*(Input\/output error|the read stopped before the end of the file)/,
		"$name: the ERROR names the I/O error");
	unlike($err, qr/invalid compressed page/,
		"$name: the ERROR does not call the failed read damage");

	# The postmaster learns of a dead backend a moment after its client:
	# give it that moment before looking.
	my $deadline = time + 5;
	while (time < $deadline)
	{
		last
		  if slurp_file($node->logfile, $log_offset) =~
		  /terminated by signal|reinitializing/;
		sleep 0.2;
	}

	my $held_after = eval { $held->query_safe('SELECT pg_backend_pid()') };
	is($held_after, $held_pid,
		"$name: a session opened before the query still answers");
	eval { $held->quit };
	is(postmaster_pid(), $pid, "$name: the same postmaster runs");
	my $log = slurp_file($node->logfile, $log_offset);
	unlike($log, qr/terminated by signal/,
		"$name: no server process was terminated by a signal");
	unlike($log, qr/all server processes terminated; reinitializing/,
		"$name: the server did not reinitialize");
	note "$name: server log lines:\n"
	  . join("\n",
		grep { /terminated|signal|reinitializ|ERROR|FATAL|PANIC/ }
		  split(/\n/, $log));
	my ($oret, $oout) =
	  $node->psql('postgres', 'SELECT count(*) FROM other_t');
	is($oout, $rows,
		"$name: another table is read, with the fault in place");

	# Clear, and let a server that crashed come back before the next case.
	$fs->clear;
	$node->poll_query_until('postgres', 'SELECT true')
	  or die "$name: the server did not come back";
	return;
}

# 1. A plain table: block 50 of its only segment.
my $plain = PgStrata::PcsFile::relation_path($node, 'postgres', 'plain_t');
eio_case('plain table, data block', $plain, 50 * 8192, 8192,
	'SELECT count(*) FROM plain_t');

# 2. A compressed table: the map page of the entries of blocks 256..511.
my $comp = PgStrata::PcsFile::relation_path($node, 'postgres', 'comp_t');
ok(defined PgStrata::PcsFile::map_pages($comp)->{1},
	'comp_t has map page 1 (blocks 256..511)');
eio_case(
	'compressed table, map page',
	$comp,
	PgStrata::PcsFile::entry_offset(256, $comp),
	PgStrata::PcsFile::MAP_PAGE_SIZE,
	'SELECT count(*) FROM comp_t');

# 2b. A compressed table: the map directory, which a reader of block 96
# and after reads to find its map page.
my $dir_at = PgStrata::PcsFile::directory_offset($comp);
ok(defined $dir_at, 'comp_t has a map directory');
eio_case(
	'compressed table, map directory',
	$comp,
	$dir_at,
	PgStrata::PcsFile::DIRECTORY_SIZE,
	'SELECT count(*) FROM comp_t');

# 3. A compressed table: the image of block 200 (a pread of the data area).
my $h = PgStrata::PcsFile::header($comp);
my $e = PgStrata::PcsFile::entry($comp, 200);
cmp_ok($e->{stored}, '>', 0, 'block 200 has an image');
eio_case(
	'compressed table, data image',
	$comp,
	PgStrata::PcsFile::image_offset($e, $h),
	$e->{stored},
	'SELECT count(*) FROM comp_t');

# With the faults gone, every table reads whole again.
is( $node->safe_psql(
		'postgres',
		'SELECT (SELECT count(*) FROM plain_t) || \',\' || (SELECT count(*) FROM comp_t)'
	),
	"$rows,$rows",
	'with the faults cleared, both tables read whole');

$node->stop;
my $r = $fs->destroy;
is($r, 'ok', 'faultfs unmounted and removed');

done_testing();
