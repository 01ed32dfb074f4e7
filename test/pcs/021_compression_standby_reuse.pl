
# Copyright (c) 2026, pgstrata developers

# A standby reuses the units its own replay frees (README.pcs, "Reusing
# freed units"): it compresses its own files, its truncations and
# relocations free units, and its restartpoints' fsyncs (md's sync handler,
# patch 0030) make them reusable, as checkpoints do on a primary.  A queue
# table filled and emptied on the primary stays near its first fill on the
# standby too; the standby's rows match the primary's, amcheck is clean
# there, no two blocks share a unit, and after promotion the former standby
# goes on reusing.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $primary = PgStrata::Node::compressed_node('primary',
	init => { allows_streaming => 1 },
	# fsync on everywhere: without it units are reused at once, untested here
	conf => q(
fsync = on
wal_log_hints = on
autovacuum = off
shared_buffers = 16MB
checkpoint_timeout = 1h
),
	extensions => [qw(amcheck pgstrata)]);
$primary->safe_psql('postgres', q(
CREATE TABLE q (id int PRIMARY KEY USING INDEX TABLESPACE cts, payload text)
	TABLESPACE cts;
));
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
# restartpoints only when asked, as the primary's checkpoints
$standby->append_conf('postgresql.conf', q(
checkpoint_timeout = 1h
));
$standby->start;

# fill(FROM, N) and empty(): the queue, on the primary
sub fill
{
	my ($from, $n) = @_;
	my $to = $from + $n - 1;
	$primary->safe_psql('postgres', qq(
INSERT INTO q SELECT g, repeat(md5(g::text), 1 + g % 3) || ' item ' || g
	FROM generate_series($from, $to) g;
));
}

sub empty
{
	$primary->safe_psql('postgres', 'DELETE FROM q; VACUUM q');
}

# sync(): the primary checkpoints, the standby replays it and makes its own
# restartpoint, whose fsyncs make the units freed before it reusable there
sub sync
{
	$primary->safe_psql('postgres', 'CHECKPOINT');
	$primary->wait_for_replay_catchup($standby);
	$standby->safe_psql('postgres', 'CHECKPOINT');
}

# standby_size(): what the standby's file system holds for q's main fork
sub standby_size
{
	return $standby->safe_psql('postgres', "SELECT pg_relation_size('q')");
}

my $spath = PgStrata::PcsFile::relation_path($standby, 'postgres', 'q');

# standby_units(): the units of the standby's segment handed out so far
sub standby_units
{
	return PgStrata::PcsFile::header($spath)->{next_unit};
}

fill(1, 20000);
sync();
my $fresh = standby_size();
my $fresh_units = standby_units();
cmp_ok($fresh, '>', 100_000, "the first fill takes $fresh bytes on the standby");
my (@sizes, @units);
for my $cycle (1 .. 8)
{
	empty();
	fill($cycle * 100_000, 20000);
	sync();
	push @sizes, standby_size();
	push @units, standby_units();
}
note "standby's physical bytes after each fill: $fresh @sizes";
note "standby's units handed out after each fill: $fresh_units @units";
my $worst = (sort { $b <=> $a } @sizes)[0];
cmp_ok($worst, '<=', 1.15 * $fresh,
	"on the standby, 8 cycles never took more than 1.15 times the first fill ($worst bytes)");
cmp_ok($units[-1], '<=', 2.5 * $fresh_units,
	"on the standby, the units handed out stop growing ($units[-1], first fill $fresh_units): its replay reuses them");

# relocations replayed on the standby free units too
for my $round (1 .. 4)
{
	$primary->safe_psql('postgres', qq(
UPDATE q SET payload = md5((id * $round)::text) || payload WHERE id % 4 = $round - 1;
VACUUM q;
));
	sync();
}

is($standby->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('q')"),
	'0', 'verify_heapam is clean on the standby');
is($standby->safe_psql('postgres', "SELECT bt_index_check('q_pkey', true)"),
	'', "the standby's primary key matches its heap");
is($standby->safe_psql('postgres',
		"SELECT md5(string_agg(q::text, '|' ORDER BY id)) FROM q"),
	$primary->safe_psql('postgres',
		"SELECT md5(string_agg(q::text, '|' ORDER BY id)) FROM q"),
	"the standby's rows are the primary's");
is(PgStrata::PcsFile::overlaps($spath), '', 'no two blocks of the standby share a unit');

# promoted, it goes on reusing what it frees: a refill after emptying the
# table and a checkpoint takes no units beyond those handed out before
$standby->promote;
my $units_before = PgStrata::PcsFile::header($spath)->{next_unit};
$standby->safe_psql('postgres', 'DELETE FROM q; VACUUM q; CHECKPOINT');
$standby->safe_psql('postgres', q(
INSERT INTO q SELECT g, repeat(md5(g::text), 1 + g % 3) || ' item ' || g
	FROM generate_series(9000001, 9020000) g;
CHECKPOINT;
));
my $units_after = PgStrata::PcsFile::header($spath)->{next_unit};
cmp_ok($units_after, '<=', $units_before,
	"promoted, a refill reuses freed units ($units_after units handed out, $units_before before)");
is($standby->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('q')"),
	'0', 'verify_heapam is clean after promotion');
is(PgStrata::PcsFile::overlaps($spath), '', 'and no two blocks share a unit');

$standby->stop;
$primary->stop;
done_testing();
