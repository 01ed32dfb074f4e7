
# Copyright (c) 2026, pgstrata developers

# A copy of a running cluster restores to the same rows even when it holds
# two map entries that share units (README.pcs, "Recovery from a copy").
#
# A copy reads a segment front to back while the server runs: the entries
# of the first blocks, in the header, are read first; a block whose entry
# was already copied then moves, a checkpoint's fsync makes its old units
# reusable, and a later block, whose entry is read later, takes them.  The
# copy then holds the old entry of the first block and the new entry of
# the second, naming the same units.  Both blocks changed after the backup
# began, so redo restores both from full-page images; written back in
# place, the second write destroys the first block's image.
#
# The test makes that copy on purpose: a low-level backup (pg_backup_start,
# a file copy, pg_backup_stop) whose copy of the table's segment takes the
# header before the moves and the rest after them.  It checks that the copy
# does hold two entries sharing units, then restores it and compares rows,
# runs amcheck after a restart (so that pages are read from disk), and
# checks that once recovery's writes are durable the mode ends and no two
# blocks share a unit.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::RecursiveCopy;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $primary = PgStrata::Node::compressed_node('primary',
	init => { allows_streaming => 1 },
	conf => q(
fsync = on
wal_log_hints = on
autovacuum = off
shared_buffers = 16MB
checkpoint_timeout = 1h
wal_keep_size = 1GB
),
	extensions => [qw(amcheck pgstrata)]);

# 120 blocks of compressible rows; fillfactor leaves room for HOT updates,
# so that an update changes the block its rows are in
$primary->safe_psql('postgres', q(
CREATE TABLE t (id int, pad text) WITH (fillfactor = 40) TABLESPACE cts;
INSERT INTO t SELECT g, repeat('x', 40) FROM generate_series(1, 5000) g;
));
# (pg_relation_size reports physical bytes: ask the rows where they are)
my $nblocks = $primary->safe_psql('postgres',
	"SELECT max((ctid::text::point)[0])::int + 1 FROM t");
cmp_ok($nblocks, '>', 100, "t has more blocks ($nblocks) than the header holds entries of");

# the blocks: A's entry lies in the header, B's in the map beyond it
my $block_a = 10;
my $block_b = $nblocks - 5;

# change(BLOCK, PAD, FRACTION): update that share of the rows of a block
sub change
{
	my ($block, $pad, $share) = @_;
	$primary->safe_psql('postgres', qq(
UPDATE t SET pad = $pad
	WHERE (ctid::text::point)[0] = $block AND id % 100 < $share * 100;
));
}

# A holds a middling image before the backup
change($block_a, 'md5(random()::text) || md5(random()::text)', 1);
$primary->safe_psql('postgres', 'CHECKPOINT');

my $path = PgStrata::PcsFile::relation_path($primary, 'postgres', 't');
my $rel = $primary->safe_psql('postgres', "SELECT pg_relation_filepath('t')");
my $a_before = PgStrata::PcsFile::entry($path, $block_a);

# the backup begins; the copy of every file is taken now
my $session = $primary->background_psql('postgres');
# pg_backup_stop's notice about archiving is not a failure here
$session->query_safe('SET client_min_messages = warning');
$session->query_safe("SELECT pg_backup_start('live copy', true)");
my $copy_dir = $primary->backup_dir . '/live';
PostgreSQL::Test::RecursiveCopy::copypath($primary->data_dir, $copy_dir,
	filterfn => sub {
		my $src = shift;
		return $src ne 'postmaster.pid' && $src ne 'postmaster.opts';
	});

# A grows out of its units and moves, and the checkpoint's fsync makes its
# old units reusable; A shrinks again in its new units (VACUUM prunes its
# old row versions), so that its image would fit the old units its copied
# entry names; then B grows and takes those units
change($block_a, 'md5(random()::text) || md5(random()::text) || md5(random()::text)', 1);
$primary->safe_psql('postgres', 'CHECKPOINT');
my $a_after = PgStrata::PcsFile::entry($path, $block_a);
isnt($a_after->{first}, $a_before->{first}, 'block A moved during the backup');
change($block_a, "repeat('y', 40)", 1);
$primary->safe_psql('postgres', 'VACUUM t; CHECKPOINT');
change($block_b, 'md5(random()::text)', 0.5);
$primary->safe_psql('postgres', 'CHECKPOINT');

# the copy of t's segment: its header (A's entry) as the copy began, its
# map (B's entry) and data area as they are now
my $live = PgStrata::PcsFile::read_bytes($path);
my $copied = "$copy_dir/$rel";
PgStrata::PcsFile::write_bytes($copied, undef,
	substr(PgStrata::PcsFile::read_bytes($copied), 0, 4096)
	  . substr($live, 4096));
like(PgStrata::PcsFile::overlaps($copied), qr/\b$block_a\/$block_b\b|\b$block_b\/$block_a\b/,
	'the copy holds the old entry of A and the new entry of B, sharing units');

my $label = $session->query_safe('SELECT labelfile FROM pg_backup_stop()');
$session->quit;
open my $fh, '>', "$copy_dir/backup_label" or die $!;
print $fh $label;
close $fh;
# the WAL from the backup's start to its end
PostgreSQL::Test::RecursiveCopy::copypath($primary->data_dir . '/pg_wal',
	"$copy_dir/pg_wal.new");
PostgreSQL::Test::Utils::system_or_bail('rm', '-rf', "$copy_dir/pg_wal");
rename("$copy_dir/pg_wal.new", "$copy_dir/pg_wal") or die $!;

my $rows = q(SELECT count(*), md5(string_agg(id || ':' || pad, ',' ORDER BY id)) FROM t);
my $expected = $primary->safe_psql('postgres', $rows);

my $copy = PostgreSQL::Test::Cluster->new('copy');
$copy->init_from_backup($primary, 'live');
$copy->start;
ok($copy->log_contains('compressed pages are written out of place until recovery from a copy is durable'),
	'the copy is recovered as a copy');

# recovery's end-of-recovery checkpoint made its writes durable: the copy
# writes in place again, and its blocks no longer share units
ok($copy->log_contains('writes of compressed pages go in place again'),
	'the copy left recovery from a copy at its first checkpoint');
my $cpath = PgStrata::PcsFile::relation_path($copy, 'postgres', 't');
$copy->stop;
is(PgStrata::PcsFile::overlaps($cpath), '', 'no two blocks of the copy share a unit');
ok(!-e $copy->data_dir . '/pgstrata_copy_recovery', 'the mode\'s file is gone');

# restarted, the copy reads its pages from disk, not from the buffers
# redo filled
my $log_offset = -s $copy->logfile;
$copy->start;
my ($ret, $out, $err) = $copy->psql('postgres', $rows);
is($ret, 0, 'the copy reads every block of t') or diag($err);
is($out, $expected, 'the copy holds the rows the primary held at the backup\'s end');
($ret, $out, $err) = $copy->psql('postgres',
	"SELECT count(*) FROM verify_heapam('t')");
is($out, '0', 'amcheck finds nothing wrong in the copy') or diag($err);
ok(!$copy->log_contains('compressed pages are written out of place', $log_offset),
	'a restart of the copy does not enter the mode again');

$copy->stop;
$primary->stop;
done_testing();
