
# Copyright (c) 2026, pgstrata developers

# Damaged free-space-map and visibility-map images are zeroed, as md's are.
#
# PostgreSQL treats both maps as hints: their pages are read with
# RBM_ZERO_ON_ERROR, and a page that fails verification is zeroed with a
# WARNING.  Redo depends on it, because FSM pages are changed without
# full-page images (heap redo records free space in pages the record does
# not carry), so a torn FSM page after an OS crash is normal.  pcs must
# hand a damaged image up as a page the buffer manager rejects, not raise
# an ERROR of its own first.
#
#   1. On a running server: every FSM and VM image of a table damaged on
#      disk; INSERT, VACUUM and reads go on, with the WARNINGs.
#   2. In redo: the FSM images damaged while the server was down after an
#      immediate shutdown; recovery replays inserts that record free space
#      in them, and the server starts with every committed row.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('fsm',
	conf => q(
wal_log_hints = on
autovacuum = off
checkpoint_timeout = 1h
max_wal_size = 1GB
),
	extensions => ['amcheck']);
$node->safe_psql('postgres', q(
CREATE TABLE t (id int, v text) WITH (fillfactor = 50) TABLESPACE cts;
INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
DELETE FROM t WHERE id % 3 = 0;
CREATE TABLE u (id int, v text) TABLESPACE cts;
INSERT INTO u SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
DELETE FROM u WHERE id % 3 = 0;
VACUUM t, u;
CHECKPOINT;
));
my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM t');

# fork_path(TABLE, FORK): the path of a fork's segment 0
sub fork_path
{
	my ($table, $fork) = @_;
	return $node->data_dir . '/'
	  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('$table')")
	  . "_$fork";
}
my $fsm = fork_path('t', 'fsm');
my $vm = fork_path('t', 'vm');
ok(PgStrata::PcsFile::is_compressed($fsm), 'the FSM fork is compressed');
ok(PgStrata::PcsFile::is_compressed($vm), 'the VM fork is compressed');

# damage(PATH): flip a byte in every image of a fork, return how many
sub damage
{
	my ($path) = @_;
	my $n = 0;
	for my $pair (PgStrata::PcsFile::entries($path))
	{
		next if $pair->[1]{stored} == 0;
		PgStrata::PcsFile::flip_image($path, $pair->[0]);
		$n++;
	}
	return $n;
}

# 1. A running server.
$node->stop;
cmp_ok(damage($fsm), '>=', 3, 'every FSM image is damaged (root, inner, leaf)');
cmp_ok(damage($vm), '>=', 1, 'the VM image is damaged');
$node->start;
my $offset = -s $node->logfile;

my ($ret, $out, $err) = $node->psql('postgres',
	"INSERT INTO t SELECT g, 'after' FROM generate_series(20001, 20100) g");
is($ret, 0, 'INSERT succeeds over a damaged FSM') or diag $err;
# (to the client on 17; on 18 an asynchronous read says it in the server's
# log, from the process that completes the read)
like($err . slurp_file($node->logfile, $offset),
	qr/(WARNING|LOG):  invalid compressed page in block \d+ of relation \S+_fsm/,
	'pcs says what was wrong with the FSM image');
# (18 quotes the relation's path in the buffer manager's message, 17 does not)
like($err, qr/WARNING:  invalid page in block \d+ of relation "?\S+_fsm"?; zeroing out page/,
	'the buffer manager zeroes the FSM page, as on md');

my $insert_err = $err;
($ret, $out, $err) = $node->psql('postgres', 'VACUUM t');
is($ret, 0, 'VACUUM succeeds over a damaged VM') or diag $err;
# the INSERT already read the VM page, to clear the bits of the pages it
# changed; VACUUM reads it too
like($insert_err . $err,
	qr/WARNING:  invalid page in block 0 of relation "?\S+_vm"?; zeroing out page/,
	'the buffer manager zeroes the VM page');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t'),
	$rows + 100, 'every row is there');
is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('t')"),
	'0', 'verify_heapam finds nothing');

# The maps work again: the zeroed pages were rewritten, and a new VACUUM
# meets no damage.
$node->psql('postgres', 'VACUUM t');
$node->psql('postgres', 'CHECKPOINT');
($ret, $out, $err) = $node->psql('postgres', 'VACUUM t');
is($err, '', 'a second VACUUM meets no damaged page');

# 2. Redo, on another table, u.  Fill pages after a checkpoint (u has
# fillfactor 100), so that heap redo records their free space
# (XLogRecordPageWithFreeSpace: below a fifth of a page), stop without a
# checkpoint, and damage the FSM images the checkpoint left.
$node->safe_psql('postgres', 'CHECKPOINT');
$node->safe_psql('postgres',
	"INSERT INTO u SELECT g, md5(g::text) FROM generate_series(30001, 40000) g");
my $expected = $node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM u');
my $ufsm = fork_path('u', 'fsm');
$node->stop('immediate');
cmp_ok(damage($ufsm), '>=', 3, 'the FSM images are damaged before redo');
$offset = -s $node->logfile;
$ret = $node->start(fail_ok => 1);
ok($ret, 'the server starts: redo zeroes the damaged FSM pages');
ok($node->log_contains(qr/invalid compressed page in block \d+ of relation \S+_fsm/, $offset),
	'redo met the damaged FSM images');
if ($ret)
{
	is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM u'),
		$expected, 'every committed row is there after redo');
	is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('u')"),
		'0', 'verify_heapam finds nothing after redo');
	($ret, $out, $err) = $node->psql('postgres',
		"INSERT INTO u VALUES (0, 'last')");
	is($ret, 0, 'and INSERT works') or diag $err;
	$node->stop;
}

done_testing();
