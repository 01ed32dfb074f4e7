
# Copyright (c) 2026, pgstrata developers

# The background writer writes buffers of compressed relations ahead of the
# clock sweep (doc/compressed-tablespaces.md, "The background writer"), so
# that backends find them clean when they evict them and do not compress
# them on their way; buffers of plain relations keep PostgreSQL's
# background writer.
#
# Two twin tables, one in a compressed tablespace and one plain, each
# several times shared_buffers, take the same load of random single-row
# updates in turn (pgbench, two clients, a few seconds), then both at once.  pg_stat_io says
# who wrote the buffers of context normal during each load: the background
# writer, or the backends, which write what they evict dirty.  With
# PostgreSQL's background writer settings (200 ms, 100 buffers a round) the
# background writer writes about 1 % of the plain table's buffers, at most
# 100 per 200 ms, and several times that share of the compressed table's
# (about 30 % here); with both loaded the LRU scan keeps its pace.  With
# bgwriter_lru_maxpages = 0 it writes none of the compressed table's.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('node',
	conf => q(
autovacuum = off
shared_buffers = 16MB
checkpoint_timeout = 1h
max_wal_size = 4GB
polar_bulk_extend_size = 0
),
	compression => 'lz4');

# 64 MB of rows each, four times shared_buffers
$node->safe_psql('postgres', q(
CREATE TABLE c (id int PRIMARY KEY, n int, v text) TABLESPACE cts;
CREATE TABLE p (id int PRIMARY KEY, n int, v text);
INSERT INTO c SELECT g, 0, repeat(md5(g::text), 3)
	FROM generate_series(1, 400000) g;
INSERT INTO p SELECT * FROM c;
VACUUM (ANALYZE) c, p;
CHECKPOINT;
));
my $rows = 400000;

# writes: pg_stat_io's writes of relation buffers in context normal by the
# background writer, by client backends and by the checkpointer, then the
# LRU scans that stopped at bgwriter_lru_maxpages (pg_stat_bgwriter)
sub writes
{
	my $res = $node->safe_psql('postgres', q(
SELECT coalesce(sum(writes) FILTER (WHERE backend_type = 'background writer'), 0),
	coalesce(sum(writes) FILTER (WHERE backend_type = 'client backend'), 0),
	coalesce(sum(writes) FILTER (WHERE backend_type = 'checkpointer'), 0),
	(SELECT maxwritten_clean FROM pg_stat_bgwriter)
FROM pg_stat_io WHERE object = 'relation' AND context = 'normal'));
	return split /\|/, $res;
}

# load TABLES: random single-row updates of the tables (one script each,
# 150,000 transactions from two clients at once, a few seconds), counted in
# $updates;
# returns the background writer's and the backends' writes during it, the
# LRU scans stopped at bgwriter_lru_maxpages and the seconds it took
my $updates = 0;

sub load
{
	my @scripts;

	foreach my $table (@_)
	{
		my $script = $node->basedir . "/update_$table.sql";

		open my $fh, '>', $script or die "could not write $script: $!";
		print $fh "\\set id random(1, $rows)\n"
		  . "UPDATE $table SET n = n + 1 WHERE id = :id;\n";
		close $fh;
		push @scripts, '-f', $script;
	}
	# dirty buffers of the load before are written by the checkpoint
	$node->safe_psql('postgres', 'CHECKPOINT');
	my @before = writes();
	my $start = time;
	my ($stdout, $stderr) = run_command(
		[
			'pgbench', '-n', '-c', '2', '-j', '2', '-t', '75000',
			@scripts, '-h', $node->host, '-p', $node->port,
			'postgres'
		]);
	ok($stdout =~ /number of transactions actually processed: (\d+)/,
		"updates of @_") or diag($stderr);
	$updates += $1 // 0;
	# the background writer reports its I/O statistics each round
	sleep 1;
	my @after = writes();
	my $seconds = time - $start;
	is($after[2], $before[2], "no checkpoint during the updates of @_");
	return (
		$after[0] - $before[0], $after[1] - $before[1],
		$after[3] - $before[3], $seconds);
}

my ($bg_c, $be_c) = load('c');
my ($bg_p, $be_p, $stops_p, $seconds_p) = load('p');
note "compressed: background writer $bg_c, backends $be_c; "
  . "plain: background writer $bg_p, backends $be_p";
cmp_ok($be_p, '>', 1000, 'the plain load made backends evict dirty buffers');
cmp_ok($bg_c + $be_c, '>', 1000,
	'the compressed load wrote buffers of context normal');

# The background writer's share of the writes: of the compressed table's,
# several times its share of the plain table's (here, 30 % against 1 %;
# without cleaning ahead, about the same)
my $share_c = $bg_c / ($bg_c + $be_c);
my $share_p = $bg_p / ($bg_p + $be_p);
cmp_ok($share_c, '>', 3 * $share_p,
	'the background writer wrote a larger share of the compressed table');

# Plain buffers are written by the LRU scan alone, at most
# bgwriter_lru_maxpages (100) per bgwriter_delay (200 ms)
my $rounds_p = int($seconds_p / 0.2) + 2;
cmp_ok($bg_p, '<=', 100 * $rounds_p,
	'the plain table: at most 100 buffers per 200 ms from the background writer');

# Both at once: the short rounds that write compressed buffers between the
# LRU scan's rounds leave the LRU scan to its own pace (one round per 200
# ms, each stopping at 100 buffers here), while the background writer
# writes more than the LRU scan could
my ($bg_m, $be_m, $stops_m, $seconds_m) = load('c', 'p');
my $rounds_m = int($seconds_m / 0.2) + 2;
note "both: background writer $bg_m, backends $be_m, "
  . "LRU scans stopped at bgwriter_lru_maxpages $stops_m in $seconds_m s";
cmp_ok($stops_m, '<=', $rounds_m,
	'both: the LRU scan ran at most once per bgwriter_delay');
cmp_ok($bg_m, '>', 100 * $rounds_m,
	'both: the background writer wrote more than the LRU scan may');

# bgwriter_lru_maxpages = 0 turns cleaning ahead off, for compressed
# relations too
$node->append_conf('postgresql.conf', 'bgwriter_lru_maxpages = 0');
$node->reload;
my ($bg_off, $be_off) = load('c');
note "compressed, bgwriter_lru_maxpages = 0: background writer $bg_off, "
  . "backends $be_off";
is($bg_off, 0, 'bgwriter_lru_maxpages = 0: the background writer wrote nothing');
cmp_ok($be_off, '>', 1000, 'bgwriter_lru_maxpages = 0: backends wrote instead');

# What the background writer wrote is what the tables hold: after a
# restart, the tables' counters add up to the updates pgbench made, and
# amcheck finds nothing wrong.
$node->restart;
$node->safe_psql('postgres', 'CREATE EXTENSION amcheck');
is( $node->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM c), (SELECT sum(n) FROM c) + (SELECT sum(n) FROM p)'),
	"$rows|$updates",
	'every row and every update after a restart');
foreach my $table ('c', 'p')
{
	is( $node->safe_psql('postgres',
			"SELECT count(*) FROM verify_heapam('$table')"),
		'0', "$table: verify_heapam finds nothing");
	$node->safe_psql('postgres',
		"SELECT bt_index_check('${table}_pkey', true)");
}
$node->stop;
done_testing();
