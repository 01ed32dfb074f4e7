
# Copyright (c) 2026, pgstrata developers

# Compressed tablespaces through replication, backup and whole-database
# copies, on a cluster with data checksums:
#
# - CREATE DATABASE ... STRATEGY FILE_COPY and ALTER DATABASE ... SET
#   TABLESPACE, from a compressed tablespace to a plain one and back: the
#   files are copied verbatim and keep their format (compressed files in
#   pg_default, plain files in the compressed tablespace), and read; new
#   relations take the format of where they are created; STRATEGY WAL_LOG
#   goes through the storage manager and converts;
# - pg_basebackup (which verifies data checksums) succeeds, and a streaming
#   standby and a copy started from the backup answer as the primary does:
#   their pg_dumpall outputs are the same;
# - an incremental backup combined with pg_combinebackup answers as the
#   primary did, with compressed segments sent whole;
# - after promoting the standby and writing on both sides, pg_rewind brings
#   the old primary back as a standby of the new one, with the same dump;
# - amcheck (verify_heapam, bt_index_check with heapallindexed) is clean on
#   every relation of every database, after each step;
# - segments of format 4 (t4 and inc4, rewritten so with the primary
#   stopped), which keep a sparse 2 MB map below their data area, go
#   through all of it as those of format 5 do, and their copies keep the
#   map sparse; the copies of format 5 segments, which have no map there,
#   are as long as their data.

use strict;
use warnings FATAL => 'all';

use File::Copy;
use File::Path qw(rmtree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $primary = PgStrata::Node::compressed_node('primary',
	init => { allows_streaming => 1, extra => ['--data-checksums'] },
	conf => q(
summarize_wal = on
wal_keep_size = 256MB
log_statement = none
),
	extensions => ['amcheck']);

# amcheck in every database made from now on
$primary->safe_psql('template1', 'CREATE EXTENSION amcheck');
$primary->safe_psql('postgres', q(
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts, k int, v text)
	TABLESPACE cts;
CREATE INDEX t_k ON t (k) TABLESPACE cts;
INSERT INTO t SELECT g, g % 100, repeat(md5(g::text), 1 + g % 5)
	FROM generate_series(1, 30000) g;
CREATE TABLE p (id int PRIMARY KEY, v text);
INSERT INTO p SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
CREATE TABLE inc (id int, v text) TABLESPACE cts;
CREATE TABLE t4 (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text)
	TABLESPACE cts;
INSERT INTO t4 SELECT g, repeat(md5(g::text), 1 + g % 3)
	FROM generate_series(1, 20000) g;
CREATE TABLE inc4 (id int, v text) TABLESPACE cts;
CREATE DATABASE plaindb;
));
$primary->safe_psql('plaindb', q(
CREATE TABLE c (id int PRIMARY KEY, v text);
INSERT INTO c SELECT g, md5(g::text) FROM generate_series(1, 5000) g;
));

# relpath(NODE, DB, REL): the path of a relation's segment 0
sub relpath
{
	return PgStrata::PcsFile::relation_path(@_);
}

# compressed(NODE, DB, REL): is the relation stored compressed?
sub compressed
{
	return PgStrata::PcsFile::relation_is_compressed(@_)
	  ? 'compressed' : 'plain';
}

# check_all(NODE, LABEL): amcheck on every permanent table and B-tree index
# of every database
sub check_all
{
	my ($node, $label) = @_;
	my @dbs = split /\n/, $node->safe_psql('postgres',
		'SELECT datname FROM pg_database WHERE datallowconn ORDER BY 1');
	my $problems = 0;
	my $checked = 0;
	for my $db (@dbs)
	{
		my ($ret, $r, $err) = $node->psql($db, q(
SELECT (SELECT count(*) FROM pg_class c, verify_heapam(c.oid)
		WHERE c.relkind IN ('r', 'm', 't') AND c.relpersistence = 'p')
	|| ' ' ||
	(SELECT count(*) FROM (SELECT bt_index_check(c.oid, true)
		FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		WHERE c.relkind = 'i' AND a.amname = 'btree' AND c.relpersistence = 'p') s)));
		if ($ret != 0)
		{
			diag "$db: $err";
			$problems++;
			next;
		}
		my ($bad, $indexes) = split / /, $r;
		$problems += $bad;
		$checked += $indexes;
	}
	is($problems, 0, "$label: verify_heapam finds nothing in any database");
	cmp_ok($checked, '>', 100,
		"$label: bt_index_check with heapallindexed passes on every index");
}

# sparse_map(PATH): does a format 4 segment keep its 2 MB map sparse (most
# of it a hole)?
sub sparse_map
{
	my ($path) = @_;
	return PgStrata::PcsFile::header($path)->{version} == 4
	  && -s $path > PgStrata::PcsFile::V4_DATA_OFFSET
	  && (stat $path)[12] * 512 < (-s $path) - 1024 * 1024;
}

# follows_data(PATH): is a format 5 segment as long as its data: the
# header, the units handed out (the allocation word's next free unit) and
# at most one growth step (a sixteenth of them, at least 8 kB: what the
# server preallocates), or a multiple of 8 kB at most 8 kB above that
# (inc's, below)?  And has it no hole, so that a copy that writes holes out
# takes no more space?
sub follows_data
{
	my ($path) = @_;
	my $h = PgStrata::PcsFile::header($path);
	my $units = $h->{next_unit};
	my $step = $units / 16 > 8192 / $h->{unit_size} ? $units / 16 : 8192 / $h->{unit_size};
	my $end = PgStrata::PcsFile::unit_offset($h, $units + $step) + 8192;
	note "$path: " . (-s $path) . " bytes, " . (stat $path)[12] * 512
	  . " allocated, $units units handed out";
	return $h->{version} == 5
	  && -s $path <= $end
	  && (stat $path)[12] * 512 >= (-s $path) - 8192;
}

# dumpall(NODE): pg_dumpall of the node, without the random \restrict key;
# its errors if it fails (which then differ from any dump)
sub dumpall
{
	my ($node) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_dumpall', '--no-sync', '-d', $node->connstr('postgres') ],
		'>', \$out, '2>', \$err)
	  or return "pg_dumpall failed: $err";
	$out =~ s/^\\(un)?restrict .*$//mg;
	return $out;
}

# An incremental backup sends the 8 kB blocks the WAL summaries name, by
# offset, from files whose size is a multiple of 8 kB.  Give inc's
# compressed segment such a size, so that only knowing the format keeps it
# whole.  With 128-byte units its growth steps reach one only past 200 MB,
# so the file is extended to the next multiple of 8 kB with the server
# stopped: bytes past the units handed out are the growth reserve, which
# the server takes as it finds it.
# inc4 likewise in format 4, rewritten so with t4 and its primary key
# while the server is stopped.
my $incpath = relpath($primary, 'postgres', 'inc');
my $inc4path = relpath($primary, 'postgres', 'inc4');
my $t4path = relpath($primary, 'postgres', 't4');
my $t4keypath = relpath($primary, 'postgres', 't4_pkey');
$primary->safe_psql('postgres', q(
INSERT INTO inc SELECT g, md5(g::text) || g FROM generate_series(1, 3000) g;
INSERT INTO inc4 SELECT g, md5(g::text) || g FROM generate_series(1, 3000) g;
CHECKPOINT;
));
my $t4sum = q(SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t4);
my $t4before = $primary->safe_psql('postgres', $t4sum);
$primary->stop;
for my $path ($t4path, $t4keypath, $inc4path)
{
	PgStrata::PcsFile::to_format_4($path);
}
for my $path ($incpath, $inc4path)
{
	my $steps = (8192 - (-s $path) % 8192) % 8192;
	truncate($path, (-s $path) + $steps) or die "truncate $path: $!";
	note "$path: " . (-s $path) . " bytes ($steps added)";
}
$primary->start;
is((-s $incpath) % 8192, 0, 'inc\'s compressed segment is a multiple of 8 kB long');
is((-s $inc4path) % 8192, 0, 'so is inc4\'s');
is(join(' ', map { PgStrata::PcsFile::header($_)->{version} } $t4path, $t4keypath, $inc4path),
	'4 4 4', 't4, its primary key and inc4 are of format 4');
cmp_ok(scalar(grep { $_->[0] >= PgStrata::PcsFile::HEADER_ENTRIES }
	  PgStrata::PcsFile::entries($t4path)), '>', 0,
	't4 has entries in its 2 MB map, beyond those in its header');
is($primary->safe_psql('postgres', $t4sum), $t4before, 't4 reads as before');

check_all($primary, 'primary');

# A base backup verifies data checksums; compressed segments are sent whole.
my $backup_dir = $primary->backup_dir . '/base';
my ($out, $err) = ('', '');
ok( IPC::Run::run(
		[ 'pg_basebackup', '-D', $backup_dir, '-d', $primary->connstr('postgres'),
		  '-X', 'stream', '-c', 'fast', '--no-sync' ],
		'>', \$out, '2>', \$err),
	'pg_basebackup with checksum verification succeeds');
unlike($err, qr/checksum/, 'and says nothing about checksums');
my $tcopy = "$backup_dir/"
  . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('t')");
ok(follows_data($tcopy),
	'the backup\'s copy of a compressed segment of format 5 is as long as its data, with no hole');
ok(sparse_map("$backup_dir/"
	  . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('t4')")),
	'the backup\'s copy of a compressed segment of format 4 keeps its 2 MB map sparse');
my $dump_at_backup = dumpall($primary);
# the reserve of the compressed tablespace is left out (pcs_reserve.c): it
# lies in the tablespace's pgsql_tmp, which backups leave out
my $reserve = 'pg_tblspc/*/PG_*/pgsql_tmp/pgstrata_reserve';
is(scalar(my @r1 = glob($primary->data_dir . "/$reserve")),
	1, 'the primary\'s compressed tablespace has its reserve');
is(scalar(my @r2 = glob("$backup_dir/$reserve")),
	0, 'the backup leaves the reserve out');

my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($primary, 'base');
$copy->start;
$copy->safe_psql('postgres', 'CHECKPOINT');
is(scalar(my @r3 = glob($copy->data_dir . "/$reserve")),
	1, 'a copy started from it makes the reserve at its first checkpoint');
is(dumpall($copy), $dump_at_backup, 'a copy started from the backup dumps as the primary');
check_all($copy, 'copy from the backup');
$copy->stop;
$copy->clean_node;

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;

# Changes after the backup, for the incremental one and the standby.
$primary->safe_psql('postgres', q(
UPDATE t SET v = v || 'u' WHERE id % 50 = 0;
INSERT INTO t SELECT g, g % 100, md5(g::text) FROM generate_series(30001, 32000) g;
CREATE TABLE t2 TABLESPACE cts AS SELECT * FROM t WHERE id < 3000;
UPDATE inc SET v = 'changed' WHERE ctid = '(0,1)';
UPDATE inc4 SET v = 'changed' WHERE ctid = '(0,1)';
UPDATE t4 SET v = v || 'u' WHERE id % 50 = 0;
CHECKPOINT;
));

my $incr_dir = $primary->backup_dir . '/incr';
$primary->command_ok(
	[ 'pg_basebackup', '-D', $incr_dir, '-d', $primary->connstr('postgres'),
	  '-X', 'stream', '-c', 'fast', '--no-sync',
	  '--incremental', "$backup_dir/backup_manifest" ],
	'an incremental backup succeeds');
my $dump_at_incr = dumpall($primary);
for my $rel (qw(inc inc4))
{
	my $increl = $primary->safe_psql('postgres', "SELECT pg_relation_filepath('$rel')");
	ok(-f "$incr_dir/$increl", "$rel: the compressed segment is in the incremental backup whole");
	$increl =~ s{/(\d+)$}{/INCREMENTAL.$1};
	ok(!-e "$incr_dir/$increl", "$rel: and not as an incremental file");
}
my $combined_dir = $primary->backup_dir . '/combined';
command_ok([ 'pg_combinebackup', '--no-sync', '-o', $combined_dir, $backup_dir, $incr_dir ],
	'pg_combinebackup combines them');
my $inccopy = "$combined_dir/"
  . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('inc')");
ok(follows_data($inccopy),
	'the combined copy of a compressed segment of format 5 is as long as its data, with no hole');
for my $rel (qw(inc4 t4))
{
	ok(sparse_map("$combined_dir/"
		  . $primary->safe_psql('postgres', "SELECT pg_relation_filepath('$rel')")),
		"the combined copy of $rel, a compressed segment of format 4, keeps its 2 MB map sparse");
}
my $combined = PostgreSQL::Test::Cluster->new('combined');
$combined->init_from_backup($primary, 'combined');
$combined->start;
is(dumpall($combined), $dump_at_incr,
	'a copy started from the combined backup dumps as the primary');
check_all($combined, 'copy from the combined backup');
$combined->stop;
$combined->clean_node;
rmtree($primary->backup_dir);

$primary->wait_for_catchup($standby);
is(dumpall($standby), dumpall($primary), 'the standby dumps as the primary');
check_all($standby, 'standby');

# Whole-database copies, both ways, replayed by the standby.
$primary->safe_psql('postgres', q(
CREATE DATABASE cdb TABLESPACE cts;
));
$primary->safe_psql('cdb', q(
CREATE TABLE c (id int PRIMARY KEY, v text);
INSERT INTO c SELECT g, md5(g::text) FROM generate_series(1, 5000) g;
CREATE SEQUENCE s;
CHECKPOINT;
));
# The source's length before the copies: pages the copies read (hint bits)
# are written back later, and with 128-byte units a page that grows by a
# few bytes moves, so the source may grow after it was copied.
my $src = relpath($primary, 'cdb', 'c');
my $src_before = -s $src;
$primary->safe_psql('postgres', q(
CREATE DATABASE fc_to_plain TEMPLATE cdb TABLESPACE pg_default STRATEGY FILE_COPY;
CREATE DATABASE fc_to_cts TEMPLATE plaindb TABLESPACE cts STRATEGY FILE_COPY;
CREATE DATABASE wl_to_plain TEMPLATE cdb TABLESPACE pg_default STRATEGY WAL_LOG;
CREATE DATABASE wl_to_cts TEMPLATE plaindb TABLESPACE cts STRATEGY WAL_LOG;
CREATE DATABASE mv_to_plain TEMPLATE cdb;
CREATE DATABASE mv_to_cts TEMPLATE plaindb;
ALTER DATABASE mv_to_plain SET TABLESPACE pg_default;
ALTER DATABASE mv_to_cts SET TABLESPACE cts;
CHECKPOINT;
));
my $dst = relpath($primary, 'fc_to_plain', 'c');
my ($src_after, $dst_after) = (-s $src, -s $dst);
$primary->wait_for_catchup($standby);
for my $node ($primary, $standby)
{
	my $n = $node->name;
	is(compressed($node, 'cdb', 'c'), 'compressed', "$n: the source in cts is compressed");
	is(compressed($node, 'plaindb', 'c'), 'plain', "$n: the source in pg_default is not");
	is(compressed($node, 'fc_to_plain', 'c'), 'compressed',
		"$n: FILE_COPY into pg_default copies compressed files verbatim");
	is(compressed($node, 'fc_to_cts', 'c'), 'plain',
		"$n: FILE_COPY into cts copies plain files verbatim");
	is(compressed($node, 'wl_to_plain', 'c'), 'plain',
		"$n: WAL_LOG into pg_default decompresses");
	is(compressed($node, 'wl_to_cts', 'c'), 'compressed',
		"$n: WAL_LOG into cts compresses");
	is(compressed($node, 'mv_to_plain', 'c'), 'compressed',
		"$n: ALTER DATABASE SET TABLESPACE pg_default keeps compressed files");
	is(compressed($node, 'mv_to_cts', 'c'), 'plain',
		"$n: ALTER DATABASE SET TABLESPACE cts keeps plain files");
}
my $sum = q(SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM c);
my $expect = $primary->safe_psql('cdb', $sum);
for my $db (qw(plaindb fc_to_plain fc_to_cts wl_to_plain wl_to_cts mv_to_plain mv_to_cts))
{
	is($primary->safe_psql($db, $sum), $expect, "$db reads back");
}

# A verbatim copy takes no more space than its source: it leaves holes as
# holes (the map of formats 2 to 4, 2 MB, is mostly one).
ok($dst_after >= $src_before && $dst_after <= $src_after,
	"the FILE_COPY copy of a compressed segment has the source's length ($src_before <= $dst_after <= $src_after)");
cmp_ok(((stat $dst)[12] - (stat $src)[12]) * 512, '<=', 64 * 1024,
	'and takes at most 64 kB more than the source');

# Writes into the copies, new relations in them, and moves back.
for my $db (qw(fc_to_plain fc_to_cts mv_to_plain mv_to_cts))
{
	$primary->safe_psql($db, q(
UPDATE c SET v = v || '+' WHERE id % 10 = 0;
CREATE TABLE n (id int PRIMARY KEY, v text);
INSERT INTO n SELECT g, md5(g::text) FROM generate_series(1, 2000) g;
CHECKPOINT;
));
}
is(compressed($primary, 'mv_to_plain', 'n'), 'plain',
	'a new table of a database moved to pg_default is plain');
is(compressed($primary, 'mv_to_cts', 'n'), 'compressed',
	'a new table of a database moved to cts is compressed');
$primary->safe_psql('postgres', q(
ALTER DATABASE mv_to_plain SET TABLESPACE cts;
ALTER DATABASE mv_to_cts SET TABLESPACE pg_default;
));
is(compressed($primary, 'mv_to_plain', 'c'), 'compressed', 'moved back: still compressed');
is(compressed($primary, 'mv_to_plain', 'n'), 'plain', 'moved back: still plain');
is(compressed($primary, 'mv_to_cts', 'n'), 'compressed',
	'moved back: the compressed table stays compressed in pg_default');
for my $db (qw(fc_to_plain fc_to_cts mv_to_plain mv_to_cts))
{
	is( $primary->safe_psql($db,
			q(SELECT (SELECT count(*) FROM c WHERE v LIKE '%+') || ' ' || (SELECT count(*) FROM n))),
		'500 2000', "$db reads back after writes and moves");
}
$primary->wait_for_catchup($standby);
is(dumpall($standby), dumpall($primary),
	'the standby dumps as the primary after the copies and moves');
check_all($primary, 'primary after the copies and moves');
check_all($standby, 'standby after the copies and moves');

# pg_rewind copies every compressed segment of the target whole: keep the
# compressed databases out of it, to keep the test short.
$primary->safe_psql('postgres', q(
DROP DATABASE cdb;
DROP DATABASE fc_to_plain;
DROP DATABASE wl_to_cts;
DROP DATABASE mv_to_plain;
));

# Failover, writes on both sides, then pg_rewind of the old primary.
$primary->wait_for_catchup($standby);
$standby->promote;
$standby->safe_psql('postgres', q(
UPDATE t SET v = 'new primary' WHERE id % 97 = 0;
INSERT INTO t SELECT g, 0, 'new primary' FROM generate_series(40001, 41000) g;
));
$standby->safe_psql('mv_to_cts', q(DELETE FROM n WHERE id > 1900));
$primary->safe_psql('postgres', q(
UPDATE t SET v = 'old primary' WHERE id % 89 = 0;
INSERT INTO t SELECT g, 0, 'old primary' FROM generate_series(50001, 52000) g;
DELETE FROM t WHERE id BETWEEN 1000 AND 1500;
VACUUM t;
UPDATE inc SET v = 'old primary' WHERE id % 10 = 0;
));
$primary->safe_psql('mv_to_cts', q(UPDATE n SET v = 'old primary' WHERE id < 1000));
$primary->stop;
$standby->safe_psql('postgres', 'CHECKPOINT');

# pg_rewind copies the configuration files from the source: keep ours
my $conf = $primary->data_dir . '/postgresql.conf';
my $keep = $primary->basedir . '/postgresql.conf.keep';
copy($conf, $keep) or die;
command_ok(
	[ 'pg_rewind', '--target-pgdata', $primary->data_dir,
	  '--source-server', $standby->connstr('postgres'), '--no-sync' ],
	'pg_rewind of the old primary');
copy($keep, $conf) or die;
ok(-e $primary->data_dir . '/pgstrata_compressed_storage',
	'the rewound node records that compressed relations may exist');
$primary->enable_streaming($standby);
$primary->start;
$standby->safe_psql('postgres', q(INSERT INTO t VALUES (-1, 0, 'after rewind')));
$standby->wait_for_catchup($primary);
is( $primary->safe_psql('postgres', q(SELECT count(*) FROM t WHERE v = 'old primary')),
	'0', 'the rewound node has none of the old primary\'s lost writes');
is(dumpall($primary), dumpall($standby),
	'the rewound old primary dumps as the new primary');
check_all($primary, 'rewound old primary');

$primary->stop;
$standby->stop;
done_testing();
