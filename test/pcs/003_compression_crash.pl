
# Copyright (c) 2026, pgstrata developers

# Compressed tablespaces survive crashes, replicate, and refuse bad bytes:
#
# - kill -9 of the server under concurrent writes and during a checkpoint,
#   then restart: amcheck (verify_heapam, bt_index_check with heapallindexed)
#   is clean and index and heap agree on every row;
# - a streaming standby, made by pg_basebackup, gives the same answers and
#   stores the same relations compressed;
# - bytes flipped on disk in a page image, in a map entry and in a segment
#   header give ERRCODE_DATA_CORRUPTED naming relation and block (the
#   header's block count: naming the file), and the server stays up;
# - a segment header whose identity is damaged is restored from its copy,
#   with a warning, in a running server and in redo after a crash (the
#   server starts); with the copy damaged too, it is an error; a segment
#   made before the copy existed gets it when first opened.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgStrata::PcsFile;
use PgStrata::Node;

my $primary = PgStrata::Node::compressed_node('primary',
	init => { allows_streaming => 1 },
	conf => q(
wal_log_hints = on
checkpoint_timeout = 1h
shared_buffers = 16MB    # room for multi-block reads (the default 1MB allows few)
restart_after_crash = on
log_statement = none
),
	extensions => ['amcheck']);
# The tablespace version directory, PG_<major>_<catalog version>, which
# differs between the releases the project builds (17 and 18).
my $verdir = $primary->safe_psql('postgres',
	"SELECT 'PG_' || current_setting('server_version_num')::int / 10000 || '_' || catalog_version_no FROM pg_control_system()");

$primary->safe_psql('postgres', q(
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts,
	k int, v text) TABLESPACE cts;
CREATE INDEX t_k ON t (k) TABLESPACE cts;
INSERT INTO t SELECT g, g % 1000, md5(g::text) FROM generate_series(1, 50000) g;
CREATE DATABASE cdb TABLESPACE cts;
));
$primary->safe_psql('cdb', 'CREATE SEQUENCE s; SELECT nextval(\'s\');');

ok(PgStrata::PcsFile::relation_is_compressed($primary, 'postgres', 't'),
	'the table is compressed');
ok(PgStrata::PcsFile::relation_is_compressed($primary, 'postgres', 't_k'),
	'its index is compressed');
ok(PgStrata::PcsFile::relation_is_compressed($primary, 'cdb', 's'),
	'a sequence of a database in the tablespace is compressed');

# A standby from a base backup, streaming.
$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# Concurrent writers: updates that move rows between pages and inserts, so
# that pages grow, shrink and get relocated, while a checkpoint runs.
my $script = $primary->basedir . '/writes.sql';
PostgreSQL::Test::Utils::append_to_file($script, q(
\set id random(1, 50000)
UPDATE t SET k = k + 1, v = v || 'x' WHERE id = :id;
INSERT INTO t (id, k, v) VALUES (50000 + :client_id * 1000000 + :id * 10 + random(0, 9), :id % 1000, repeat(md5(:id::text), 3)) ON CONFLICT DO NOTHING;
));
# check_consistent(NODE, LABEL): amcheck is clean, heap and index agree
sub check_consistent
{
	my ($node, $label) = @_;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM verify_heapam(\'t\')'),
		'0', "$label: verify_heapam finds nothing");
	is( $node->safe_psql('postgres',
			"SELECT bt_index_check('t_pkey', true), bt_index_check('t_k', true)"),
		'|', "$label: bt_index_check with heapallindexed passes");
	my $seq = $node->safe_psql('postgres',
		'SET enable_indexscan = off; SET enable_bitmapscan = off; '
		  . 'SELECT count(*), sum(id::bigint), sum(length(v)) FROM t');
	my $idx = $node->safe_psql('postgres',
		'SET enable_seqscan = off; SET enable_bitmapscan = off; '
		  . 'SELECT count(*), sum(id::bigint), sum(length(v)) FROM t WHERE id >= -2147483648');
	is($seq, $idx, "$label: a heap scan and an index scan see the same rows");
	return $seq;
}

# run_writers(SECONDS): start the writers in the background
sub run_writers
{
	my ($seconds) = @_;
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[
			'pgbench', '-n', '-c', '4', '-T', $seconds, '-f', $script,
			'-h', $primary->host, '-p', $primary->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
}

# Crash 1: the checkpointer is killed in the middle of a checkpoint, under
# the writers; the postmaster then restarts every process and recovers.
my $bench = run_writers(60);
usleep(3_000_000);
my $ckpt_pid = $primary->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'");
my $ckpt = IPC::Run::start(
	[ 'psql', '-X', '-h', $primary->host, '-p', $primary->port,
	  '-c', 'CHECKPOINT', 'postgres' ],
	'>', \my $cout, '2>', \my $cerr);
usleep(200_000);
my $log_offset = -s $primary->logfile;
kill 'KILL', $ckpt_pid;
$ckpt->finish;
$bench->finish;
# Wait for the postmaster's own message: a query sent while the server
# restarts can meet a psql that already exited (IPC::Run dies of the broken
# pipe), which made this test fail now and then under load.
$primary->wait_for_log(qr/database system is ready to accept connections/,
	$log_offset);
ok(1, 'the server restarted after the checkpointer was killed mid-checkpoint');
check_consistent($primary, 'after killing the checkpointer');

# Crash 2: an immediate shutdown (no checkpoint, as after kill -9) under
# the writers, then a restart.
$bench = run_writers(60);
usleep(3_000_000);
$primary->stop('immediate');
$bench->finish;
$primary->start;

my $after_crash = check_consistent($primary, 'after an immediate shutdown');
cmp_ok((split /\|/, $after_crash)[0], '>=', 50000, 'no committed row was lost');

# The standby catches up and answers the same.
$primary->safe_psql('postgres', 'INSERT INTO t VALUES (-1, 0, \'marker\')');
$primary->wait_for_catchup($standby);
my $query = q(SELECT md5(string_agg(id || ':' || k || ':' || v, ',' ORDER BY id)) FROM t);
is($standby->safe_psql('postgres', $query),
	$primary->safe_psql('postgres', $query),
	'the standby answers as the primary');
ok(PgStrata::PcsFile::relation_is_compressed($standby, 'postgres', 't'),
	'the standby stores the table compressed');
ok( -f $standby->data_dir . '/pg_tblspc/'
	  . $primary->safe_psql('postgres',
		"SELECT oid FROM pg_tablespace WHERE spcname = 'cts'")
	  . "/$verdir/pgstrata_compression",
	'the standby has the tablespace marker');
check_consistent($standby, 'standby');

# Corruption: a small table, flipped on disk while the server is down.
$primary->safe_psql('postgres', q(
CREATE TABLE c (id int, v text) TABLESPACE cts;
INSERT INTO c SELECT g, md5(g::text) FROM generate_series(1, 2000) g;
CHECKPOINT;
));
my $cpath = PgStrata::PcsFile::relation_path($primary, 'postgres', 'c');
# a TID range scan reads the blocks of its range with vectored reads
my $range_5_13 = "SELECT count(*), sum(hashtext(ctid::text || v)) FROM c WHERE ctid >= '(5,0)' AND ctid < '(13,0)'";
my $range_5_13_before = $primary->safe_psql('postgres', $range_5_13);
$primary->stop;

PgStrata::PcsFile::flip_image($cpath, 0);
PgStrata::PcsFile::flip($cpath, PgStrata::PcsFile::entry_offset(1) + 5);
PgStrata::PcsFile::flip_image($cpath, 3);
$primary->start;

# read_block(N): an error reading block N of c, or '' if it reads
sub read_block
{
	my ($n) = @_;
	my ($ret, $stdout, $stderr) = $primary->psql('postgres',
		"SELECT count(*) FROM c WHERE ctid >= '($n,0)' AND ctid < '($n,1000)'",
		extra_params => ['-v', 'VERBOSITY=verbose']);
	return $stderr;
}

my $e0 = read_block(0);
like($e0, qr/ERROR:  XX001: invalid compressed page in block 0 of relation pg_tblspc\/\d+\/\Q$verdir\E\/\d+\/\d+/,
	'a flipped byte in a page image is a data-corruption error naming relation and block');
like($e0, qr/The checksum of the block's image does not match\./, 'and saying why');
my $e1 = read_block(1);
like($e1, qr/ERROR:  XX001: invalid compressed page in block 1 of relation/,
	'a flipped byte in a map entry is a data-corruption error');
like($e1, qr/The checksum of the block's map entry does not match\./, 'and saying why');
is(read_block(2), '', 'an intact block of the same relation still reads');
my ($ret, $stdout, $stderr) = $primary->psql('postgres',
	"SELECT count(*) FROM c WHERE ctid >= '(2,0)' AND ctid < '(6,0)'",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($stderr, qr/ERROR:  XX001: invalid compressed page in block 3 of relation/,
	'a damaged image inside a multi-block read names its own block');
is($primary->safe_psql('postgres', $range_5_13),
	$range_5_13_before, 'a multi-block read of intact blocks gives the rows written');
is($primary->safe_psql('postgres', 'SELECT count(*) > 0 FROM t'),
	't', 'the server is up and answers');

# zero_damaged_pages keeps its meaning.  (On 18 an asynchronous read hands
# the damaged image up as a page that fails verification, and the buffer
# manager zeroes it with its own warning, naming the relation as md's do;
# what was wrong with the image goes to the server's log.)
($ret, $stdout, $stderr) = $primary->psql('postgres',
	"SET zero_damaged_pages = on; SELECT count(*) FROM c WHERE ctid < '(1,0)'");
like($stderr, qr/WARNING:  invalid (compressed )?page in block 0 .*; zeroing out page/,
	'with zero_damaged_pages the page is zeroed with a warning');

# A damaged segment header: the fields that identify the file are restored
# from their copy in the dictionary sector, with a warning naming the file;
# with the copy damaged too, it is a data-corruption error.
my $identity = PgStrata::PcsFile::read_bytes($cpath, 0, 28);

# A segment made before the copy existed (zeros where it lies) gets it
# from the first server that opens it.
$primary->stop;
PgStrata::PcsFile::write_bytes($cpath,
	PgStrata::PcsFile::IDENTITY_COPY_OFFSET, "\0" x 32);
$primary->start;
unlike(read_block(2), qr/ERROR|WARNING/, 'a segment without the copy reads');
$primary->stop;
is(PgStrata::PcsFile::read_bytes($cpath, PgStrata::PcsFile::IDENTITY_COPY_OFFSET, 28),
	$identity, '... and holds the copy once opened');

PgStrata::PcsFile::flip($cpath, 20);    # inside the fields covered by the header CRC
$primary->start;
$stderr = read_block(2);
like($stderr, qr/WARNING:  XX001: restored the damaged header of compressed segment file "pg_tblspc\/\d+\/\Q$verdir\E\/\d+\/\d+" from its copy/,
	'a flipped byte in the segment header is restored from its copy, with a warning naming the file');
unlike($stderr, qr/ERROR/, 'and the block reads');
is(PgStrata::PcsFile::read_bytes($cpath, 0, 28), $identity,
	'the file holds the restored bytes');
$primary->stop;
PgStrata::PcsFile::flip($cpath, 20);
PgStrata::PcsFile::flip($cpath, PgStrata::PcsFile::IDENTITY_COPY_OFFSET + 3);
$primary->start;
$stderr = read_block(2);
like($stderr, qr/ERROR:  XX001: invalid compressed segment header in file/,
	'with its copy damaged too, it is a data-corruption error');
is($primary->safe_psql('postgres', 'SELECT 1'), '1', 'the server is still up');

# A damaged copy of the block count in the same header (the header's shared
# words have their own test: pcs/014_compression_header_words.pl): the other
# copy holds the count.
$primary->stop;
PgStrata::PcsFile::flip($cpath, 20);    # the fixed fields are sound again
PgStrata::PcsFile::flip($cpath, PgStrata::PcsFile::NBLOCKS_OFFSET + 1);
$primary->start;
$stderr = read_block(2);
like($stderr, qr/WARNING:  XX001: invalid block count in compressed segment file "pg_tblspc\/\d+\/\Q$verdir\E\/\d+\/\d+", replaced by \d+/,
	'a flipped byte in one copy of the block count is a warning naming the file');
unlike($stderr, qr/ERROR/, 'and the block reads');
is($primary->safe_psql('postgres', 'SELECT 1'), '1', 'the server is still up');

# A damaged identity after a crash with WAL for the segment: redo opens it
# first (full-page images need no read of the block, but the segment must
# be known), restores it from the copy, and the server starts.  It used to
# stop with "invalid compressed segment header" in the startup process,
# where md starts and redo repairs the page.
$primary->safe_psql('postgres', q(
CREATE TABLE h (id int PRIMARY KEY, v text) TABLESPACE cts;
INSERT INTO h SELECT g, repeat(md5(g::text), 4) FROM generate_series(1, 5000) g;
CHECKPOINT;
UPDATE h SET v = v || id WHERE id % 3 = 0;
));
my $hsum = $primary->safe_psql('postgres', 'SELECT count(*), md5(string_agg(v, \'|\' ORDER BY id)) FROM h');
my $hpath = PgStrata::PcsFile::relation_path($primary, 'postgres', 'h');
$primary->stop('immediate');
PgStrata::PcsFile::flip($hpath, 12);    # the algorithm byte
$log_offset = -s $primary->logfile;
ok($primary->start(fail_ok => 1),
	'after a crash, the server starts with a damaged segment header to replay into');
like(slurp_file($primary->logfile, $log_offset),
	qr/WARNING:  restored the damaged header of compressed segment file "pg_tblspc\/\d+\/\Q$verdir\E\/\d+\/\d+" from its copy/,
	'redo restored it from its copy, with a warning');
is($primary->safe_psql('postgres', 'SELECT count(*), md5(string_agg(v, \'|\' ORDER BY id)) FROM h'),
	$hsum, 'the rows are those committed before the crash');
is($primary->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('h')"),
	'0', 'verify_heapam is clean');

$standby->stop;
$primary->stop;
done_testing();
