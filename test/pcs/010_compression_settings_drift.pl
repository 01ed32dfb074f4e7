
# Copyright (c) 2026, pgstrata developers

# The settings that protect compressed pages from torn writes follow the
# compressed files, not the tablespaces, and not only the postmaster's
# start on a primary (README.pcs, "Hint bits and full-page images"):
#
# 1. A standby started with wal_log_hints = off, before the primary had any
#    compressed tablespace, meets compression in replay.  A read on it that
#    sets hint bits must not make the next restartpoint rewrite the
#    compressed page (there is no full-page image in WAL that could repair
#    that write if it were torn by an OS crash): the segment file stays as
#    the previous restartpoint left it.  Promoted without a restart, it logs
#    hint-bit-only changes as full-page images.
# 2. A database moved out of a compressed tablespace keeps its relations
#    compressed (the files are copied verbatim); once the tablespace is
#    dropped, full_page_writes = off is still ignored and wal_log_hints =
#    off is still turned on at start.
#
# Both clusters are made without data checksums: with them, hint-bit
# changes are WAL-logged anyway and there is nothing to test.

use strict;
use warnings FATAL => 'all';

use Digest::MD5 qw(md5_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

# file_md5(PATH): digest of a whole file
sub file_md5
{
	return md5_hex(PgStrata::PcsFile::read_bytes($_[0]));
}

# wal_count(NODE, DB, SQL, KIND): WAL records of kind 'fpi' (any block
# image) or 'hint' (FPI_FOR_HINT) that SQL writes, run after a checkpoint
sub wal_count
{
	my ($node, $db, $sql, $kind) = @_;
	my $count =
	  $kind eq 'hint'
	  ? "SELECT count(*) FROM pg_get_wal_records_info(:'l0', :'l1') WHERE record_type = 'FPI_FOR_HINT'"
	  : "SELECT count(*) FROM pg_get_wal_block_info(:'l0', :'l1') WHERE block_fpi_length > 0";
	return $node->safe_psql($db, qq(
CHECKPOINT;
SELECT pg_current_wal_insert_lsn() AS l0 \\gset
$sql \\g /dev/null
SELECT pg_current_wal_insert_lsn() AS l1 \\gset
CHECKPOINT;
SELECT CASE WHEN :'l0' = :'l1' THEN 0 ELSE ($count) END;
));
}

my $conf = q(
wal_log_hints = on
autovacuum = off
checkpoint_timeout = 1h
max_wal_size = 1GB
bgwriter_lru_maxpages = 0
);

# 1. A standby that meets compression in replay.
my $primary = PgStrata::Node::compressed_node('primary',
	init => { allows_streaming => 1, extra => ['--no-data-checksums'] },
	conf => $conf,
	extensions => ['pg_walinspect'],
	create_tablespace => 0);
$primary->backup('before_compression');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'before_compression',
	has_streaming => 1);
$standby->append_conf('postgresql.conf', 'wal_log_hints = off');
$standby->start;
is($standby->safe_psql('postgres', 'SHOW wal_log_hints'),
	'off', 'the standby starts with wal_log_hints = off');

PgStrata::Node::create_tablespace($primary);
$primary->safe_psql('postgres', q(
CREATE TABLE c (id int, v text) TABLESPACE cts;
INSERT INTO c SELECT g, md5(g::text) FROM generate_series(1, 2000) g;
CHECKPOINT;
));
$primary->wait_for_replay_catchup($standby);
# The restartpoint writes what replay left in shared buffers.
$standby->safe_psql('postgres', 'CHECKPOINT');
my $path = PgStrata::PcsFile::relation_path($standby, 'postgres', 'c');
ok(PgStrata::PcsFile::is_compressed($path),
	'the standby stores the replayed table compressed');
my $before = file_md5($path);
ok(-e $standby->data_dir . '/pgstrata_compressed_storage',
	'the standby records in replay that compressed relations may exist');

# Reading sets the hint bits of rows whose inserts committed; then a
# checkpoint on the primary lets the standby make another restartpoint.
is($standby->safe_psql('postgres', 'SELECT count(*) FROM c'),
	'2000', 'the standby reads the compressed table');
$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->wait_for_replay_catchup($standby);
$standby->safe_psql('postgres', 'CHECKPOINT');
is(file_md5($path), $before,
	'hint bits set on the standby are not written to the compressed page without a full-page image'
);

# Promoted, without a restart: a hint-bit-only change is WAL-logged.
$standby->promote;
$standby->safe_psql('postgres',
	'INSERT INTO c SELECT g, md5(g::text) FROM generate_series(1, 2000) g');
cmp_ok(wal_count($standby, 'postgres', 'SELECT count(*) FROM c', 'hint'),
	'>', 0,
	'the promoted standby logs a hint-bit-only change as FPI_FOR_HINT');
$standby->stop;
$primary->backup('after_compression');
ok(-e $primary->backup_dir . '/after_compression/pgstrata_compressed_storage',
	'a base backup carries that record');
$primary->stop;

# 2. Compressed relations left behind by ALTER DATABASE ... SET TABLESPACE.
my $node = PgStrata::Node::compressed_node('moved',
	init => { extra => ['--no-data-checksums'] },
	conf => $conf);
$node->safe_psql('postgres', q(
CREATE DATABASE moved TABLESPACE cts;
));
$node->safe_psql('moved', q(
CREATE EXTENSION pg_walinspect;
CREATE TABLE t (id int, v text);
INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
));
$node->safe_psql('postgres', q(
ALTER DATABASE moved SET TABLESPACE pg_default;
DROP TABLESPACE cts;
));
ok(PgStrata::PcsFile::relation_is_compressed($node, 'moved', 't'),
	'a table moved to pg_default with its database stays compressed');

my $offset = -s $node->logfile;
$node->safe_psql('postgres',
	"ALTER SYSTEM SET full_page_writes = off; SELECT pg_reload_conf();");
$node->wait_for_log(qr/parameter "full_page_writes" changed to "off"/,
	$offset);
cmp_ok(
	wal_count(
		$node, 'moved', "UPDATE t SET v = v || 'x' WHERE id = 1", 'fpi'),
	'>', 0,
	'after DROP TABLESPACE, full_page_writes = off is still ignored');

$node->safe_psql('postgres', 'ALTER SYSTEM RESET full_page_writes');
$node->append_conf('postgresql.conf', 'wal_log_hints = off');
$node->restart;
is($node->safe_psql('postgres', 'SHOW wal_log_hints'),
	'on', 'after DROP TABLESPACE, wal_log_hints = off is still turned on');
$node->safe_psql('moved',
	'INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 1000) g');
cmp_ok(wal_count($node, 'moved', 'SELECT count(*) FROM t', 'hint'),
	'>', 0, 'and a hint-bit-only change is logged as FPI_FOR_HINT');
is($node->safe_psql('moved', 'SELECT count(*) FROM t'),
	'2000', 'the moved table reads back');
$node->stop;

done_testing();
