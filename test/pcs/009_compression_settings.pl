
# Copyright (c) 2026, pgstrata developers

# Once compressed storage has been used, the server keeps the settings
# that protect compressed pages from torn writes, whatever postgresql.conf
# says (on a cluster without data checksums):
#
# - full_page_writes = off, reloaded, is ignored with a WARNING: a change
#   after a checkpoint still writes a full-page image;
# - wal_log_hints = off at a restart is turned on with a WARNING: SHOW and
#   pg_controldata say on, and a hint-bit-only change writes FPI_FOR_HINT;
# - both stay so after the last compressed tablespace is dropped.
#
# On a cluster that never used compression both settings work as
# configured; that part shows the checks can tell the difference, and that
# CREATE TABLESPACE with compression is refused there with its hint.  On a
# cluster made by initdb with its defaults (data checksums on) it works at
# once.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('settings',
	init => { extra => ['--no-data-checksums'] },
	conf => q(
wal_log_hints = on
checkpoint_timeout = 1h
autovacuum = off
),
	extensions => ['pg_walinspect']);

$node->safe_psql('postgres', q(
CREATE TABLE t (id int, v text) TABLESPACE cts;
INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
CREATE TABLE p (id int, v text);
INSERT INTO p SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
));

# wal_count(SQL, KIND): WAL records of kind 'fpi' (any block image) or
# 'hint' (FPI_FOR_HINT) written by SQL, run right after a checkpoint.  The
# checkpoint after SQL flushes the WAL that pg_walinspect is to read (a
# read-only statement does not); an empty range has nothing to read.
sub wal_count
{
	my ($sql, $kind) = @_;
	my $count =
	  $kind eq 'hint'
	  ? "SELECT count(*) FROM pg_get_wal_records_info(:'l0', :'l1') WHERE record_type = 'FPI_FOR_HINT'"
	  : "SELECT count(*) FROM pg_get_wal_block_info(:'l0', :'l1') WHERE block_fpi_length > 0";
	return $node->safe_psql('postgres', qq(
CHECKPOINT;
SELECT pg_current_wal_insert_lsn() AS l0 \\gset
$sql \\g /dev/null
SELECT pg_current_wal_insert_lsn() AS l1 \\gset
CHECKPOINT;
SELECT CASE WHEN :'l0' = :'l1' THEN 0 ELSE ($count) END;
));
}

# poll(CODE, WANT): CODE's answer once it is WANT, or its last answer
sub poll
{
	my ($code, $want) = @_;
	my $got;
	for (1 .. 100)
	{
		$got = $code->();
		return $got if $got eq $want;
		usleep(100_000);
	}
	return $got;
}

my $update_t = sub { wal_count("UPDATE t SET v = v || 'x' WHERE id = 1", 'fpi') };
my $update_p = sub { wal_count("UPDATE p SET v = v || 'x' WHERE id = 1", 'fpi') };

# full_page_writes = off, by reload.
my $offset = -s $node->logfile;
$node->safe_psql('postgres',
	"ALTER SYSTEM SET full_page_writes = off; SELECT pg_reload_conf();");
# The postmaster logs the change, then signals the checkpointer, which
# handles the signal before the checkpoint that wal_count() requests.
$node->wait_for_log(qr/parameter "full_page_writes" changed to "off"/,
	$offset);
cmp_ok($update_t->(), '>', 0,
	'full_page_writes = off: a change after a checkpoint still logs a full-page image');
cmp_ok($update_p->(), '>', 0,
	'... for every relation, since the setting is cluster-wide');
ok( $node->log_contains(
		qr/WARNING:  full_page_writes = off is ignored because compressed relations may exist/,
		$offset),
	'full_page_writes = off: the server says it ignores it');

# wal_log_hints = off, by restart; without pgstrata_compressed_storage, as
# in a cluster made before that file existed: the tablespace's marker
# brings it back at start.
my $in_use = $node->data_dir . '/pgstrata_compressed_storage';
ok(-e $in_use, 'CREATE TABLESPACE records that compressed relations may exist');
$node->safe_psql('postgres', "ALTER SYSTEM RESET full_page_writes");
$node->append_conf('postgresql.conf', "wal_log_hints = off");
$offset = -s $node->logfile;
$node->stop;
unlink $in_use or die "unlink $in_use: $!";
$node->start;
ok(-e $in_use, 'a compressed tablespace\'s marker recreates it at start');
ok( $node->log_contains(
		qr/WARNING:  wal_log_hints is turned on because compressed relations may exist/,
		$offset),
	'wal_log_hints = off at start: the server says it turns it on');
is($node->safe_psql('postgres', 'SHOW wal_log_hints'),
	'on', 'wal_log_hints = off at start: SHOW says on');
my ($controldata) = run_command([ 'pg_controldata', $node->data_dir ]);
like($controldata, qr/wal_log_hints setting:\s+on/,
	'... and so does the control file');

# A hint-bit-only change: rows committed before the checkpoint, read after.
$node->safe_psql('postgres',
	"INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 1000) g");
cmp_ok(wal_count('SELECT count(*) FROM t', 'hint'),
	'>', 0, 'a hint-bit-only change to a compressed page logs FPI_FOR_HINT');

# After the last compressed tablespace is dropped, both stay in effect.
$node->safe_psql('postgres', 'DROP TABLE t; DROP TABLESPACE cts');
$offset = -s $node->logfile;
$node->restart;
ok( $node->log_contains(qr/wal_log_hints is turned on/, $offset),
	'after DROP TABLESPACE: the warning at start again');
is($node->safe_psql('postgres', 'SHOW wal_log_hints'),
	'on', 'after DROP TABLESPACE: wal_log_hints is still on');
$node->stop;

# A cluster that never used compression: both settings apply as configured.
$node = PostgreSQL::Test::Cluster->new('plain');
$node->init(extra => ['--no-data-checksums']);
$node->append_conf('postgresql.conf', qq(
wal_log_hints = off
allow_in_place_tablespaces = on
checkpoint_timeout = 1h
autovacuum = off
));
$offset = -s $node->logfile;
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION pg_walinspect;
CREATE TABLE p (id int, v text);
INSERT INTO p SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
));
ok( !$node->log_contains(qr/wal_log_hints is turned on/, $offset),
	'no compressed storage: no warning at start');
is($node->safe_psql('postgres', 'SHOW wal_log_hints'),
	'off', 'no compressed storage: wal_log_hints stays off');
is(wal_count('SELECT count(*) FROM p', 'hint'),
	'0', 'no compressed storage: a hint-bit change logs nothing');

$node->safe_psql('postgres',
	"ALTER SYSTEM SET full_page_writes = off; SELECT pg_reload_conf();");
is(poll($update_p, '0'), '0',
	'no compressed storage: full_page_writes = off takes effect');

# Without data checksums and wal_log_hints, CREATE TABLESPACE refuses.
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"CREATE TABLESPACE cts LOCATION '' WITH (compression = 'zstd')");
like(
	$stderr,
	qr/compressed tablespaces require full_page_writes/,
	'full_page_writes = off: CREATE TABLESPACE with compression is refused');
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET full_page_writes; SELECT pg_reload_conf();");
is(poll(sub { $node->safe_psql('postgres', 'SHOW full_page_writes') }, 'on'),
	'on', 'full_page_writes is on again');
($ret, $stdout, $stderr) = $node->psql('postgres',
	"CREATE TABLESPACE cts LOCATION '' WITH (compression = 'zstd')");
like(
	$stderr,
	qr/compressed tablespaces require wal_log_hints or data checksums.*HINT:  Set wal_log_hints = on/s,
	'no data checksums, wal_log_hints = off: refused, with the hint');
ok(!-e $node->data_dir . '/pgstrata_compressed_storage',
	'a refused CREATE TABLESPACE leaves no trace of compressed storage');
$node->stop;

# First use: a cluster made by initdb with its defaults has data checksums,
# and CREATE TABLESPACE with compression works without a restart.
$node = PostgreSQL::Test::Cluster->new('defaults');
$node->init;
$node->append_conf('postgresql.conf', 'allow_in_place_tablespaces = on');
$node->start;
is($node->safe_psql('postgres', 'SHOW data_checksums'),
	'on', 'initdb with its defaults enables data checksums');
is( $node->safe_psql(
		'postgres', q(
CREATE TABLESPACE cts LOCATION '' WITH (compression = 'zstd');
CREATE TABLE t (id int) TABLESPACE cts;
INSERT INTO t SELECT generate_series(1, 100);
SELECT count(*) FROM t;
)),
	'100',
	'CREATE TABLESPACE with compression works on a default cluster');
ok(-e $node->data_dir . '/pgstrata_compressed_storage',
	'the cluster records that compressed storage may exist');
$node->stop;

done_testing();
