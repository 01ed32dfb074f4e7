
# Copyright (c) 2026, pgstrata developers

# Units freed by truncation and by relocation are reused, and the space
# that stays free goes back to the file system (README.pcs, "Reusing freed
# units"):
#
# 1. A queue table filled and emptied in a loop (insert, checkpoint,
#    delete, VACUUM, which truncates it): its physical size stays near that
#    of its first fill.  Compressed storage used to keep every freed unit
#    as garbage until VACUUM FULL, so each cycle added to the file.
# 2. Freed units are not reused before an fsync of their segment that
#    began after the free: a refill before any checkpoint lands above the
#    units the truncation freed, a refill after one lands in them.
# 3. Pages that outgrow their units move; the units they leave are reused
#    and given back, so an update-heavy loop does not grow the file either;
#    the early fsync of a segment that has a megabyte of them waiting is
#    the background writer's, never a backend's.
# 4. A server restart finds the free units again from the map, reuses them
#    only after the segment's first fsync of the new generation, which its
#    first write asks the background writer for, and the units of a table
#    dropped in between are never handed to another; crashes one after the
#    other do not grow the file by more than the moved pages need.
# 0. Before all that, the rules of the pool of free runs, on a segment of
#    no relation (test_pcs_free_pool(): best fit, the wait for an fsync,
#    merging, 5,000 runs in one segment, the early fsync of a segment with
#    a megabyte waiting, a full pool), a full table of segments, which
#    takes no shared memory beyond its own, and forgetting relations that
#    keep no runs without walking the table.
# After each: amcheck is clean, the rows are those of a plain ledger, and
# no two blocks share a unit.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('reuse',
	# fsync on: without it, freed units are reused at once (an operating
	# system crash is not survived anyway), and the rule of 2. is not tested
	conf => q(
fsync = on
wal_log_hints = on
autovacuum = off
shared_buffers = 16MB
checkpoint_timeout = 1h
),
	extensions => [qw(amcheck pgstrata test_pcs injection_points)]);
$node->safe_psql('postgres', q(
CREATE TABLE q (id int PRIMARY KEY, payload text) TABLESPACE cts;
CREATE TABLE ledger (id int PRIMARY KEY, payload text);
));
my $path = PgStrata::PcsFile::relation_path($node, 'postgres', 'q');

# 0. The pool's rules, while nothing else frees units (it fills the pool)
is($node->safe_psql('postgres', 'SELECT test_pcs_free_pool()'),
	'5029', 'the free-unit pool follows its rules (5,029 checks)');
is($node->safe_psql('postgres',
		'SELECT kept_runs, forgotten_runs > 0 FROM pgstrata_free_units()'),
	'0|t', 'the pool is empty again, and counted what it forgot when full');

# 0b. The table of segments is fixed in size: the runs of more segments
# than it holds are forgotten (and counted), and it takes no shared memory
# beyond its own, which the lock manager's tables grow into.  It used to
# grow there: 3,500 small tables that had each moved a page left a
# transaction locking 3,000 tables "out of shared memory".
my $anonymous = q(SELECT allocated_size FROM pg_shmem_allocations
	WHERE name = '<anonymous>');
my $anonymous_before = $node->safe_psql('postgres', $anonymous);
my $forgotten_before = $node->safe_psql('postgres',
	'SELECT forgotten_runs FROM pgstrata_free_units()');
my $kept = $node->safe_psql('postgres', 'SELECT test_pcs_free_segments(3000)');
ok($kept >= 1024 && $kept < 3000,
	"runs of 3,000 segments at once: $kept kept, the others forgotten");
is($node->safe_psql('postgres',
		'SELECT forgotten_runs FROM pgstrata_free_units()') - $forgotten_before,
	3000 - $kept, '... and counted as forgotten');
is($node->safe_psql('postgres', $anonymous), $anonymous_before,
	'the table of segments took no shared memory beyond its own');

# 0c. Forgetting the runs of a relation (every unlink of a fork, plain ones
# included, and every creation of a compressed one) took every partition
# lock and walked the whole table; a filter of the relations that keep
# runs spares the walk for the others.  With 2,000 relations keeping runs,
# forgetting 1,000 that keep none walks the table only for those that
# share a slot of the filter with one of the 2,000 (about one in sixteen).
my $walks = $node->safe_psql('postgres', 'SELECT test_pcs_forget_walks(2000, 1000)');
ok($walks < 250,
	"forgetting 1,000 relations that keep no runs walked the table $walks times, not 1,000");

# fill(FROM, N): N rows of mixed payload into q and into the plain ledger
sub fill
{
	my ($from, $n) = @_;
	my $to = $from + $n - 1;
	$node->safe_psql('postgres', qq(
INSERT INTO q SELECT g, repeat(md5(g::text), 1 + g % 3) || ' item ' || g || ' ' ||
	to_char(timestamp '2026-01-01' + g * interval '7 minutes', 'YYYY-MM-DD HH24:MI')
	FROM generate_series($from, $to) g;
INSERT INTO ledger SELECT * FROM q WHERE id BETWEEN $from AND $to;
));
}

# empty(): what a queue consumer does: delete everything, VACUUM (which
# truncates the table to nothing)
sub empty
{
	$node->safe_psql('postgres', 'DELETE FROM q; DELETE FROM ledger');
	$node->safe_psql('postgres', 'VACUUM q');
}

# physical(): the bytes the file system holds for q's main fork
sub physical
{
	return $node->safe_psql('postgres', "SELECT pg_relation_size('q')");
}

# reserve(): the bytes of q's file past the units handed out: the growth
# reserve, which is allocated on purpose and not free space
sub reserve
{
	my $h = PgStrata::PcsFile::header($path);
	return (-s $path) - PgStrata::PcsFile::data_offset($h)
	  - $h->{next_unit} * $h->{unit_size};
}

# check(LABEL): amcheck is clean, the rows match the ledger, no two blocks
# share a unit
sub check
{
	my ($label) = @_;
	is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('q')"),
		'0', "$label: verify_heapam is clean");
	is($node->safe_psql('postgres', "SELECT bt_index_check('q_pkey', true)"),
		'', "$label: the primary key matches the heap");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM (SELECT * FROM q EXCEPT SELECT * FROM ledger "
			  . "UNION ALL SELECT * FROM ledger EXCEPT SELECT * FROM q) d"),
		'0', "$label: the rows are those of the ledger");
	is(PgStrata::PcsFile::overlaps($path), '', "$label: no two blocks share a unit");
}

# next_unit(): the first unit of q's segment not handed out yet
sub next_unit
{
	return PgStrata::PcsFile::header($path)->{next_unit};
}

# 1. The queue loop, as a queue runs: emptied, then filled again before
# the next checkpoint, so the units of one cycle become reusable at the
# checkpoint after the next fill, and are reused by the fill after that.
fill(1, 20000);
$node->safe_psql('postgres', 'CHECKPOINT');
my $fresh = physical();
my $fresh_units = next_unit();
cmp_ok($fresh, '>', 100_000, "the first fill takes $fresh bytes");
my (@sizes, @units);
for my $cycle (1 .. 12)
{
	empty();
	fill($cycle * 100_000, 20000);
	$node->safe_psql('postgres', 'CHECKPOINT');
	push @sizes, physical();
	push @units, next_unit();
}
note "physical bytes after each fill: $fresh @sizes";
note "units handed out after each fill: $fresh_units @units";
my $worst = (sort { $b <=> $a } @sizes)[0];
cmp_ok($worst, '<=', 1.15 * $fresh,
	"after 12 cycles the table never took more than 1.15 times its first fill ($worst bytes)");
cmp_ok($units[-1], '<=', 2.5 * $fresh_units,
	"the units handed out stop growing after two fills ($units[-1], first fill $fresh_units): the space is reused, not only given back");
check('queue loop');

# Emptied, the table's pages are holes again at once, as md's ftruncate()
# gives them back (reuse still waits for the fsync).
# Format 5 keeps its map pages and their directory in the data area, and
# never frees them: a truncation empties their entries.  Each is 4 kB of
# units wherever they were free, so it keeps at most two 4 kB pages of the
# file system (PcsFile::metadata_units()).
empty();
my $reserve = reserve();
my $map_kept = 2 * 4096 * PgStrata::PcsFile::metadata_units($path)
  * PgStrata::PcsFile::header($path)->{unit_size} / 4096;
cmp_ok(physical(), '<=', 64 * 1024 + $reserve + $map_kept,
	'emptied, before any checkpoint, the file gives its space back ('
	  . physical()
	  . " bytes, $reserve of them the growth reserve, at most $map_kept the map's pages)"
);
$node->safe_psql('postgres', 'CHECKPOINT');

# highest_end(): the end of the highest units an entry of q's segment on
# disk points to; lowest_first(): the first unit of the lowest
sub highest_end
{
	my $high = 0;
	for my $e (PgStrata::PcsFile::entries($path))
	{
		my $end = $e->[1]{first} + $e->[1]{units};
		$high = $end if $end > $high;
	}
	return $high;
}

sub lowest_first
{
	my $lowest;
	for my $e (PgStrata::PcsFile::entries($path))
	{
		$lowest = $e->[1]{first}
		  if !defined $lowest || $e->[1]{first} < $lowest;
	}
	return $lowest;
}

# 2. No reuse before an fsync: a refill right after the truncation, with
# no checkpoint in between, lands above every unit the last fill used.
fill(2_000_000, 20000);
$node->safe_psql('postgres', 'CHECKPOINT');
my $high = highest_end();
empty();
fill(3_000_000, 2000);
$node->safe_psql('postgres', 'CHECKPOINT');
my $lowest = lowest_first();
cmp_ok($lowest, '>=', $high,
	'a refill before any fsync of the truncated segment does not reuse what the truncation freed');
check('refill before an fsync');

# After a checkpoint the freed units are reused.
empty();
$node->safe_psql('postgres', 'CHECKPOINT');
fill(4_000_000, 2000);
$node->safe_psql('postgres', 'CHECKPOINT');
$lowest = lowest_first();
cmp_ok($lowest, '<', $high,
	'after an fsync of the segment, a refill reuses the freed units');
check('refill after an fsync');

# 3. Relocations: rows that grow make their pages' images move; the units
# they leave are reused and given back.
empty();
$node->safe_psql('postgres', 'CHECKPOINT');
fill(5_000_000, 20000);
$node->safe_psql('postgres', 'CHECKPOINT');
my $before = physical();
note "before the updates: $before bytes";
my $forgotten = $node->safe_psql('postgres',
	'SELECT forgotten_runs FROM pgstrata_free_units()');
my $most_kept = 0;
for my $round (1 .. 8)
{
	$node->safe_psql('postgres', qq(
UPDATE q SET payload = md5((id * $round)::text) || payload WHERE id % 8 = $round - 1;
UPDATE ledger SET payload = md5((id * $round)::text) || payload WHERE id % 8 = $round - 1;
VACUUM q;
));
	my $kept = $node->safe_psql('postgres',
		'SELECT kept_runs FROM pgstrata_free_units()');
	$most_kept = $kept if $kept > $most_kept;
	$node->safe_psql('postgres', 'CHECKPOINT');
}
my $after = physical();
note "runs kept at most before a checkpoint: $most_kept";
is($node->safe_psql('postgres', 'SELECT forgotten_runs FROM pgstrata_free_units()'),
	$forgotten, 'no run was forgotten while rows grew');
my $live = $node->safe_psql('postgres',
	"SELECT stored_bytes + slack_bytes FROM pgstrata_relation_compression('q') WHERE fork = 'main'");
# Pages that grow leave a run each time they move, and the pool keeps them
# all (no run was forgotten, above), so the file holds little more than its
# live images: 1.09 times them here (1.43 MB for 1.31 MB).  With 64 runs
# per segment, as the first version kept, it held 2.1 MB; before reuse,
# 13 MB.
$reserve = reserve();
cmp_ok($after, '<=', 1.25 * $live + $reserve + 64 * 1024,
	"after rows grew in 8 rounds the file holds at most 1.25 times its live images ($after bytes, $live live, $reserve reserve)");
check('relocations');

# 3b. The early fsync of a segment with a megabyte of freed units waiting
# is the background writer's.  A writer that frees units holds the
# buffer's content lock and has its I/O in progress; it used to fsync the
# whole segment right there, so everything that needed the buffer waited.
# Now it asks the background writer (pcs_free_want_sync()).  Backends write
# the pages here (the background writer writes none), which outgrow their
# units and move: no client backend fsyncs, the background writer does,
# with no checkpoint in between.
$node->safe_psql('postgres', q(
ALTER SYSTEM SET bgwriter_lru_maxpages = 0;
SELECT pg_reload_conf();
CREATE TABLE big (id int, payload text) WITH (fillfactor = 50) TABLESPACE cts;
INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 200000) g;
CHECKPOINT;
SELECT pg_stat_reset_shared('io');
));
$node->safe_psql('postgres',
	"UPDATE big SET payload = md5(id::text) || md5((id + 1)::text) || md5((id + 2)::text)");
$node->poll_query_until('postgres', q(
SELECT fsyncs > 0 FROM pg_stat_io
WHERE backend_type = 'background writer' AND object = 'relation' AND context = 'normal'))
  or diag('the background writer did no fsync');
is( $node->safe_psql(
		'postgres', q(
SELECT sum(fsyncs) FROM pg_stat_io
WHERE backend_type = 'client backend' AND object = 'relation')),
	'0',
	'no client backend fsyncs a segment, however many units its writes free');
cmp_ok(
	$node->safe_psql(
		'postgres', q(
SELECT fsyncs FROM pg_stat_io
WHERE backend_type = 'background writer' AND object = 'relation' AND context = 'normal')),
	'>', 0,
	'the background writer fsyncs them early, with no checkpoint');
$node->safe_psql('postgres', q(
DROP TABLE big;
ALTER SYSTEM RESET bgwriter_lru_maxpages;
SELECT pg_reload_conf();
));

# 4. A restart: the free units are found again from the map by the first
# write of the new generation in the segment, and reused only once the
# segment has been fsynced in this generation: the map they were found in
# came from the page cache, which need not be durable (a standby shut down
# in recovery skips its restartpoint, and its next start fsyncs nothing).
# A refill right after the restart lands above every unit the last fill
# used; after a checkpoint the refill reuses them.  A table dropped
# meanwhile leaves nothing behind that another could be given.
fill(10_000_000, 20000);
$node->safe_psql('postgres', 'CHECKPOINT');
$high = highest_end();
empty();
$node->safe_psql('postgres', 'CHECKPOINT');
$node->restart;
# The first write of the generation asks the background writer to fsync the
# segment at once (4b.); held here, so that the checkpoint's writes come
# before any fsync of the segment
$node->safe_psql('postgres',
	"SELECT injection_points_attach('pcs-early-sync', 'wait')");
fill(11_000_000, 2000);
$node->safe_psql('postgres', 'CHECKPOINT');
$lowest = lowest_first();
cmp_ok($lowest, '>=', $high,
	'after a restart, a refill before any fsync of the segment does not reuse the units found free');
ok( $node->poll_query_until(
		'postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity
			WHERE backend_type = 'background writer' AND wait_event = 'pcs-early-sync'"),
	"the generation's first write asked the background writer for the segment's fsync");
$node->safe_psql('postgres', q(
SELECT injection_points_detach('pcs-early-sync');
SELECT injection_points_wakeup('pcs-early-sync');
));
fill(11_100_000, 18000);
$node->safe_psql('postgres', 'CHECKPOINT');
$lowest = lowest_first();
cmp_ok($lowest, '<', $high,
	'after a restart and an fsync of the segment, a refill reuses them');
cmp_ok(physical(), '<=', 1.25 * $fresh,
	'after a restart the table takes at most 1.25 times its first fill (' . physical() . ' bytes)');
check('after a restart');

$node->safe_psql('postgres', q(
CREATE TABLE d (id int, payload text) TABLESPACE cts;
INSERT INTO d SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
DELETE FROM d WHERE id > 100;
VACUUM d;
DROP TABLE d;
CHECKPOINT;
));
fill(7_000_000, 20000);
$node->safe_psql('postgres', 'CHECKPOINT');
check('after a dropped table');

# A crash (kill -9) after units were reused: redo and amcheck agree.
empty();
$node->safe_psql('postgres', 'CHECKPOINT');
fill(8_000_000, 20000);
$node->stop('immediate');
$node->start;
check('after a crash');

# 4b. Crashes one after the other, each after a few rows grew and before any
# checkpoint.  Every start begins a generation above the file's end, and
# everything the map does not use waits there for the segment's first fsync
# of the generation.  The file used to grow by a chunk of a sixteenth of its
# data area at each start (the first allocation's preallocation), a
# sixteenth more each time: the OS-crash harness found a 2,002-row table at
# 988 MB after 199 crashes.  Now growth is what the moved pages need while
# that much space waits to come back, and the fsync is asked for at once.
$node->safe_psql('postgres', 'CHECKPOINT');
my $end_before = -s $path;
my $rounds = 6;
for my $round (1 .. $rounds)
{
	# two rows, in two pages, grow by 1.3 kB of hex each: their pages move
	$node->safe_psql('postgres', qq(
UPDATE q SET payload = payload || repeat(md5((id * $round)::text), 40)
	WHERE id IN (8000001, 8019999);
UPDATE ledger SET payload = payload || repeat(md5((id * $round)::text), 40)
	WHERE id IN (8000001, 8019999);
));
	$node->stop('immediate');
	$node->start;
	note "crash $round: the file ends at " . (-s $path)
	  . ' bytes, units handed out: '
	  . PgStrata::PcsFile::header($path)->{next_unit};
}
my $grown = (-s $path) - $end_before;
# each round changes at most four pages (the two rows' pages, and those
# their new versions go to), of at most PCS_MAX_UNITS 128-byte units each
cmp_ok($grown, '<=', $rounds * 4 * 80 * 128,
	"$rounds crashes with two pages moved before each grew the file by $grown bytes, what the moves need ("
	  . ($end_before - PgStrata::PcsFile::data_offset($path))
	  . ' bytes of data area)');
check('after crashes one after the other');

$node->stop;
done_testing();
