
# Copyright (c) 2026, pgstrata developers

# pg_combinebackup's copy modes with compressed segments in the backups:
# a full and an incremental backup of a cluster with a compressed
# tablespace, combined with --copy, --copy-file-range, --clone (where the
# file system can clone) and, on PostgreSQL 18, --link (last: a cluster
# started from its output writes into the incremental backup's files):
#
# 1. every compressed segment of the output has the length and the bytes
#    of its copy in the incremental backup, and keeps the map sparse: the
#    output's compressed segments together take at most 1 MB more than the
#    backup's; with --link they are the backup's files (hard links);
# 2. a cluster started from each output reads back the rows of a plain
#    ledger table written in the same transactions, in tables made before
#    and after the full backup, takes writes, and amcheck (verify_heapam,
#    bt_index_check with heapallindexed) is clean.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Amcheck;
use PgStrata::Node;
use PgStrata::PcsFile qw(compressed_files allocated copy_differences);

my $primary = PgStrata::Node::compressed_node('primary',
	init => { allows_streaming => 1 },
	conf => q(
summarize_wal = on
autovacuum = off
log_statement = none
),
	extensions => ['amcheck']);

# t and its indexes are compressed, ledger plain, written together
$primary->safe_psql('postgres', q(
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts, k int, v text)
	TABLESPACE cts;
CREATE INDEX t_k ON t (k) TABLESPACE cts;
CREATE TABLE ledger (id int PRIMARY KEY, k int, v text);
BEGIN;
INSERT INTO t SELECT g, g % 100, repeat(md5(g::text), 1 + g % 4)
	FROM generate_series(1, 20000) g;
INSERT INTO ledger SELECT * FROM t;
COMMIT;
CHECKPOINT;
));

my $full = $primary->backup_dir . '/full';
$primary->command_ok(
	[ 'pg_basebackup', '-D', $full, '-d', $primary->connstr('postgres'),
	  '-X', 'stream', '-c', 'fast', '--no-sync' ],
	'a full backup');

# Changes after the full backup: updates that move pages, a new table,
# and a truncation that punches holes into t2's segment
$primary->safe_psql('postgres', q(
BEGIN;
UPDATE t SET v = v || 'u' WHERE id % 7 = 0;
UPDATE ledger SET v = v || 'u' WHERE id % 7 = 0;
INSERT INTO t SELECT g, g % 100, md5(g::text) FROM generate_series(20001, 23000) g;
INSERT INTO ledger SELECT * FROM t WHERE id > 20000;
COMMIT;
CREATE TABLE t2 TABLESPACE cts AS SELECT * FROM t WHERE id <= 10000;
DELETE FROM t2 WHERE id > 3000;
VACUUM t2;
CHECKPOINT;
));

my $incr = $primary->backup_dir . '/incr';
$primary->command_ok(
	[ 'pg_basebackup', '-D', $incr, '-d', $primary->connstr('postgres'),
	  '-X', 'stream', '-c', 'fast', '--no-sync',
	  '--incremental', "$full/backup_manifest" ],
	'an incremental backup');

my $in = compressed_files($incr);
cmp_ok(scalar(keys %$in), '>=', 6,
	'the incremental backup holds the compressed segments whole');
my $in_alloc = allocated($in);
note "incremental backup: " . scalar(keys %$in)
  . " compressed segments, $in_alloc bytes allocated";

my $ledger_sum =
  q(SELECT (SELECT count(*) FROM t) || ' '
	|| (SELECT count(*) FROM ((TABLE t EXCEPT TABLE ledger)
		UNION ALL (TABLE ledger EXCEPT TABLE t)) d) || ' '
	|| (SELECT count(*) FROM t2));
my $amcheck = PgStrata::Amcheck::clean_query(100);

# --link (PostgreSQL 18) last: a cluster started from its output changes
# the files it shares with the incremental backup
my @modes = qw(copy copy-file-range clone);
push @modes, 'link' if $primary->pg_version >= 18;
for my $mode (@modes)
{
	my $name = "combined_$mode";
	my $out_dir = $primary->backup_dir . "/$name";
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run(
		[ 'pg_combinebackup', "--$mode", '--no-sync', '-o', $out_dir,
		  $full, $incr ],
		'>', \$stdout, '2>', \$stderr);
	if (!$ok && $mode eq 'clone' && $stderr =~ /clon/)
	{
		note "--clone: not on this file system: $stderr";
		next;
	}
	ok($ok, "pg_combinebackup --$mode") or diag $stderr;
	next unless $ok;

	my $outf = compressed_files($out_dir);
	my ($missing, $differ) = copy_differences($incr, $in, $out_dir, $outf);
	is($missing, '', "--$mode: every compressed segment is in the output");
	is($differ, '', "--$mode: with the incremental backup's length and bytes");
	my $alloc = allocated($outf);
	cmp_ok($alloc, '<=', $in_alloc + 1024 * 1024,
		"--$mode: the maps stay sparse: $alloc bytes allocated, the backup's $in_alloc"
	);
	if ($mode eq 'link')
	{
		my @copied = grep { $outf->{$_}[2] != $in->{$_}[2] } sort keys %$in;
		is("@copied", '', '--link: the compressed segments are the backup\'s files');
	}

	my $node = PostgreSQL::Test::Cluster->new("node_$mode");
	$node->init_from_backup($primary, $name);
	$node->start;
	ok(PgStrata::PcsFile::relation_is_compressed($node, 'postgres', 't'),
		"--$mode: t is compressed");
	is($node->safe_psql('postgres', $ledger_sum), '23000 0 3000',
		"--$mode: the rows are the ledger's");
	is($node->safe_psql('postgres', $amcheck), '0 true',
		"--$mode: verify_heapam and bt_index_check are clean");
	$node->safe_psql('postgres', q(
BEGIN;
UPDATE t SET v = v || '+' WHERE id % 10 = 0;
UPDATE ledger SET v = v || '+' WHERE id % 10 = 0;
INSERT INTO t2 SELECT * FROM t WHERE id > 22000;
COMMIT;
CHECKPOINT;
));
	is($node->safe_psql('postgres', $ledger_sum), '23000 0 4000',
		"--$mode: after writes, the rows are the ledger's");
	is($node->safe_psql('postgres', $amcheck), '0 true',
		"--$mode: after writes, amcheck is clean");
	$node->stop;
	$node->clean_node;
}

$primary->stop;
done_testing();
