
# Copyright (c) 2026, pgstrata developers

# Crash and fail a compressed tablespace at each of its named crash points
# (injection points, README.pcs "Crash points, one by one"), under
# concurrent writers, and show that after the restart:
#
# - amcheck is clean (verify_heapam, bt_index_check with heapallindexed);
# - the table holds exactly the committed rows: every writer transaction
#   also updates a plain (uncompressed) ledger table, and both must agree;
# - no space is lost beyond what README.pcs documents: every allocated byte
#   of a compressed segment is a live image, its slack, garbage that the
#   pgstrata extension reports, or the current preallocation step;
# - VACUUM FULL reclaims the garbage the crashes left.
#
# A crash is a SIGKILL of the process that waits at the point (action
# 'wait'), which makes the postmaster reinitialise and run crash recovery;
# a failure is the action 'error'.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PgStrata::PcsFile;
use PgStrata::Node;

# The project's build always has injection points (--enable-injection-points
# and the injection_points module installed): a build without them fails
# here rather than skipping.
my $node = PgStrata::Node::compressed_node('crashpoints',
	# wal_level = replica: new relfilenodes are WAL-logged, as in production
	init => { allows_streaming => 1 },
	# fsync = on: the checkpointer skips its fsyncs, and so the sync crash
	# point, when fsync is off (as PostgreSQL::Test::Cluster sets it)
	conf => q(
fsync = on
wal_log_hints = on
autovacuum = off
checkpoint_timeout = 1h
max_wal_size = 1GB
restart_after_crash = on
bgwriter_lru_maxpages = 0
shared_buffers = 64MB
log_min_messages = warning
),
	extensions => [qw(injection_points amcheck pgstrata)]);

$node->safe_psql('postgres', q(
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts, k int, v text)
	TABLESPACE cts;
CREATE INDEX t_k ON t (k) TABLESPACE cts;
CREATE TABLE ledger (id int PRIMARY KEY, vlen int);
INSERT INTO t SELECT g, g % 100, md5(g::text) FROM generate_series(1, 20000) g;
INSERT INTO ledger SELECT id, length(v) FROM t;
CHECKPOINT;
));

# The writers: each transaction makes a row longer with bytes that do not
# compress (so that its page grows out of its allocation and moves) and
# inserts a row, in t and in the ledger alike.
my $script = $node->basedir . '/writes.sql';
append_to_file($script, q(
\set id random(1, 20000)
BEGIN;
UPDATE t SET v = v || md5(random()::text) WHERE id = :id;
UPDATE ledger SET vlen = vlen + 32 WHERE id = :id;
INSERT INTO t VALUES (100000 + :client_id * 1000000 + (random() * 999999)::int, :id % 100, md5(:id::text))
	ON CONFLICT DO NOTHING;
INSERT INTO ledger SELECT id, length(v) FROM t WHERE id NOT IN (SELECT id FROM ledger) AND id > 100000
	ON CONFLICT DO NOTHING;
COMMIT;
));

# start_writers([SECONDS]): pgbench in the background, for SECONDS or until
# a crash ends it
sub start_writers
{
	my ($seconds) = @_;
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[
			'pgbench', '-n', '-c', '3', '-T', $seconds // 60, '-f', $script,
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
}

# background_sql(SQL...): run each SQL as a transaction of its own, in a
# psql in the background
sub background_sql
{
	my @sql = map { ('-c', $_) } @_;
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[
			'psql', '-X', '-h', $node->host, '-p', $node->port,
			@sql, 'postgres'
		],
		'>', \$out, '2>', \$err);
}

# waiter(POINT): the pid of a process waiting at the injection point
sub waiter
{
	my ($point) = @_;
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = '$point'")
	  or die "no process reached injection point $point";
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE wait_event = '$point' LIMIT 1");
}

# crash_at(POINT, TRIGGER...): attach a wait at POINT, run the writers and
# the SQL statements TRIGGER (in the background), kill the first process
# that waits there, and wait for crash recovery to finish.
sub crash_at
{
	my ($point, @trigger) = @_;
	$node->safe_psql('postgres',
		"SELECT injection_points_attach('$point', 'wait')");
	my $bench = start_writers();
	usleep(1_000_000);
	my $sql = background_sql(@trigger);
	my $pid = waiter($point);
	my $type = $node->safe_psql('postgres',
		"SELECT backend_type FROM pg_stat_activity WHERE pid = $pid");
	my $offset = -s $node->logfile;
	kill 'KILL', $pid;
	$sql->finish;
	$bench->finish;
	# the postmaster's own messages, rather than connection attempts that
	# may meet the server in the middle of its restart
	$node->wait_for_log(qr/terminated by signal 9: Killed/, $offset);
	$node->wait_for_log(qr/database system is ready to accept connections/,
		$offset);
	ok(1, "crashed the $type at $point; the server recovered");
}

# check_consistent(LABEL): amcheck is clean and t holds the ledger's rows
sub check_consistent
{
	my ($label) = @_;
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM verify_heapam('t')"),
		'0', "$label: verify_heapam finds nothing");
	is( $node->safe_psql('postgres',
			"SELECT bt_index_check('t_pkey', true), bt_index_check('t_k', true)"),
		'|', "$label: bt_index_check with heapallindexed passes");
	is( $node->safe_psql('postgres',
			'SELECT count(*), sum(id::bigint), sum(length(v)) FROM t'),
		$node->safe_psql('postgres',
			'SELECT count(*), sum(id::bigint), sum(vlen) FROM ledger'),
		"$label: the table holds exactly the committed rows");
}

# space(REL): the main fork's statistics from the pgstrata extension
sub space
{
	my ($rel) = @_;
	my @f = split /\|/, $node->safe_psql('postgres',
		"SELECT physical_bytes, stored_bytes, slack_bytes, garbage_bytes, logical_pages
		 FROM pgstrata_relation_compression('$rel') WHERE fork = 'main'");
	return {
		physical => $f[0], stored => $f[1], slack => $f[2],
		garbage => $f[3], pages => $f[4] };
}

# check_space(REL, LABEL): every allocated byte of the relation's segment
# is accounted for (README.pcs, "Space a crash leaves behind"): the
# garbage reported is exactly the units handed out (the allocation word in
# the segment header) that no entry uses, nor (format 5) the map's pages
# and directory, which are units of the data area; the units the file
# holds beyond those are at most one preallocation step (a sixteenth of the
# data area, at least 8 kB); and the bytes the file system allocated are
# the header block, the map's pages (formats 2 to 4: below the data area),
# that data area, and at most 16 kB of the file system's own (ext4 counts
# its extent blocks in st_blocks).
sub check_space
{
	my ($rel, $label) = @_;
	my $path = PgStrata::PcsFile::relation_path($node, 'postgres', $rel);
	my $h = PgStrata::PcsFile::header($path);
	my $next_unit = $h->{next_unit};
	my $unit = $h->{unit_size};
	my $s = space($rel);
	my $live_units = ($s->{stored} + $s->{slack}) / $unit
	  + PgStrata::PcsFile::metadata_units($h);
	my $file_units =
	  ((-s $path) - PgStrata::PcsFile::data_offset($h)) / $unit;
	my $min_step = 8192 / $unit;
	my $step = $next_unit / 16 > $min_step ? $next_unit / 16 : $min_step;
	my $map =
	  $h->{has_directory} ? 0 : 4096 * int(($s->{pages} * 16 + 4095) / 4096);

	# Until the first allocation of a new server generation (a crash of a
	# process begins one) mends the allocation word, the file's end bounds
	# the units handed out, and the garbage counts up to it.
	ok($s->{garbage} == ($next_unit - $live_units) * $unit
		  || $s->{garbage} == ($file_units - $live_units) * $unit,
		"$label: the garbage reported is every unit handed out that no entry uses"
	) or diag "garbage $s->{garbage}, next unit $next_unit, file units $file_units, "
	  . "used units $live_units (" . PgStrata::PcsFile::metadata_units($h)
	  . ' of them the map\'s)';
	cmp_ok($file_units - $next_unit, '<=', $step + 20 * 512 / $unit,
		"$label: beyond them the file holds at most one preallocation step");
	cmp_ok($s->{physical}, '<=', 4096 + $map + $file_units * $unit + 16384,
		"$label: the file system holds nothing else ($s->{physical} bytes, "
		  . "garbage $s->{garbage})");
	return $s;
}

# 1. After a page image is written, before its map entry is switched: the
# checkpointer (or a backend evicting a page) stops there and is killed.
crash_at('pcs-write-after-image', 'CHECKPOINT');
check_consistent('crash after an image write');
check_space('t', 'crash after an image write');

# 2. A page that outgrew its allocation has been written to fresh units,
# its entry still points to the old ones.  A small table, not touched by
# the writers, makes sure some page grows: its page is written with 20
# rows, then gets 40 more before the checkpoint that writes it again.
$node->safe_psql('postgres', q(
CREATE TABLE r (id int, v text) TABLESPACE cts;
INSERT INTO r SELECT g, md5(g::text) FROM generate_series(1, 20) g;
CHECKPOINT;
));
crash_at('pcs-write-relocate',
	'INSERT INTO r SELECT g, md5(g::text) || md5(random()::text) FROM generate_series(21, 60) g',
	'CHECKPOINT');
check_consistent('crash during relocation');
check_space('t', 'crash during relocation');
my $r = check_space('r', 'crash during relocation');
cmp_ok($r->{garbage}, '>', 0,
	'the relocation interrupted by the crash left garbage, and it is reported');
is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('r')"),
	'0', 'verify_heapam finds nothing in the relocated table');
is($node->safe_psql('postgres', 'SELECT count(*) FROM r'),
	'60', 'the relocated table has its rows');

# 3. The checkpointer's fsync of a segment (md's sync handler, which pcs
# segments use).
crash_at('pcs-sync-segment', 'CHECKPOINT');
check_consistent('crash during the checkpoint fsync');
check_space('t', 'crash during the checkpoint fsync');

# 4. The same points failing with an error instead: the write or the
# checkpoint fails, the server stays up, and the next checkpoint succeeds.
for my $point ('pcs-write-after-image', 'pcs-sync-segment')
{
	my $bench = start_writers(3);
	usleep(1_000_000);
	$node->safe_psql('postgres',
		"SELECT injection_points_attach('$point', 'error')");
	my ($ret, $out, $err) = $node->psql('postgres', 'CHECKPOINT');
	like($err, qr/checkpoint request failed/,
		"an error at $point fails the checkpoint");
	$node->safe_psql('postgres', "SELECT injection_points_detach('$point')");
	$bench->finish;
	($ret, $out, $err) = $node->psql('postgres', 'CHECKPOINT');
	is($ret, 0, "after an error at $point the next checkpoint succeeds");
	check_consistent("error at $point");
}

# 5. Truncation (VACUUM cutting empty pages off the end), between lowering
# the block count and clearing the entries past it.  A plain table with the
# same rows and the same VACUUM says how many pages must remain.
# pcs_truncate() runs inside RelationTruncate()'s critical section, where
# nothing may allocate memory; the first run of an injection point in a
# backend loads its callback, which does, so the VACUUM's session loads it
# beforehand (injection_points_load, patch 0025).  Assert-enabled builds
# check that nothing allocates there.
{
	$node->safe_psql('postgres', q(
CREATE TABLE tt (id int, v text) TABLESPACE cts;
CREATE TABLE tt_plain (id int, v text);
INSERT INTO tt SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
INSERT INTO tt_plain SELECT * FROM tt;
DELETE FROM tt WHERE id > 3000;
DELETE FROM tt_plain WHERE id > 3000;
VACUUM tt_plain;
CHECKPOINT;
));
	crash_at('pcs-truncate',
		"SELECT injection_points_load('pcs-truncate')", 'VACUUM tt');
	check_consistent('crash during truncation');
	is($node->safe_psql('postgres', 'SELECT count(*), sum(id) FROM tt'),
		'3000|4501500', 'the truncated table has its rows');
	is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('tt')"),
		'0', 'verify_heapam finds nothing in the truncated table');
	$node->safe_psql('postgres', 'VACUUM tt');
	is(space('tt')->{pages},
		$node->safe_psql('postgres', "SELECT pg_relation_size('tt_plain') / 8192"),
		'the truncation completed: as many pages as the plain table');
	check_space('tt', 'crash during truncation');
}

# 6. Garbage reclaim: VACUUM FULL rewrites t into a new relfilenode.  A
# crash while the new files are being synced leaves the old relation in
# use; a crash after the commit, before the old files are removed, leaves
# the new one, and redo of the commit removes the old files.
my $file_before = $node->safe_psql('postgres', "SELECT pg_relation_filepath('t')");

# orphans(): files in t's directory that belong to no relation
sub orphans
{
	my ($dir) = $file_before =~ m{^(.*)/[^/]+$};
	my %known = map { $_ => 1 } split /\n/, $node->safe_psql('postgres',
		'SELECT pg_relation_filenode(oid) FROM pg_class
		 WHERE pg_relation_filenode(oid) IS NOT NULL');
	opendir my $dh, $node->data_dir . "/$dir" or die "opendir $dir: $!";
	my @files = grep { /^(\d+)/ && !$known{$1} } readdir $dh;
	closedir $dh;
	return sort @files;
}
my @orphans = orphans();
is("@orphans", '', 'no file of the tablespace belongs to no relation');
crash_at('pcs-rewrite-sync', 'VACUUM FULL t');
check_consistent('crash while VACUUM FULL syncs the new files');
is($node->safe_psql('postgres', "SELECT pg_relation_filepath('t')"),
	$file_before, 'the interrupted VACUUM FULL left the old relation in use');
# As for md relations, PostgreSQL does not remove the files of a
# transaction that a crash ended (README.pcs documents it); they are the
# only files that belong to no relation.
@orphans = orphans();
ok(@orphans > 0 && !grep({ !/^\d+(_(fsm|vm|init))?(\.\d+)?$/ } @orphans),
	"the interrupted rewrite left only its new relation files behind: @orphans");

crash_at('pcs-unlink', 'VACUUM FULL t');
check_consistent('crash before VACUUM FULL removes the old files');
isnt($node->safe_psql('postgres', "SELECT pg_relation_filepath('t')"),
	$file_before, 'the committed VACUUM FULL switched to the new relation');
$node->safe_psql('postgres', 'CHECKPOINT');
ok(!-e $node->data_dir . "/$file_before" || -s $node->data_dir . "/$file_before" == 0,
	'the old relation file is gone after recovery and a checkpoint');

# 7. Finally VACUUM FULL, uninterrupted, reclaims all garbage.  First
# some: rows added to the rewritten table's last page between two
# checkpoints make it outgrow the allocation of its first image.
$node->safe_psql('postgres', q(
INSERT INTO t SELECT -g, 0, md5(g::text) FROM generate_series(1, 20) g;
INSERT INTO ledger SELECT id, length(v) FROM t WHERE id < 0;
CHECKPOINT;
INSERT INTO t SELECT -g, 0, md5(g::text) || md5(random()::text) FROM generate_series(21, 60) g;
INSERT INTO ledger SELECT id, length(v) FROM t WHERE id < -20;
CHECKPOINT;
));
my $before = space('t');
cmp_ok($before->{garbage}, '>', 0, 'rows added since the rewrite left garbage');
$node->safe_psql('postgres', 'VACUUM FULL t; CHECKPOINT;');
my $after = check_space('t', 'after VACUUM FULL');
is($after->{garbage}, 0, 'VACUUM FULL leaves no garbage');
check_consistent('after VACUUM FULL');

$node->stop;
done_testing();
