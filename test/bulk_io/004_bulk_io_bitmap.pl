
# Copyright (c) 2026, pgstrata developers

# polar_bulk_read_size in bitmap heap scans, and in the copy of ALTER TABLE
# ... SET TABLESPACE for temporary tables.
#
# A bitmap heap scan reads each run of consecutive blocks of its bitmap
# with one read of up to polar_bulk_read_size blocks, and block by block at
# 0 on 17.  PostgreSQL 18 reads bitmap heap scans through a read stream of
# its own (the series for 18 drops 17's patch 0024): there, at 0, they
# combine reads up to io_combine_limit as stock 18 does, and that is what
# the test checks.  For every case below, on a plain and on a compressed tablespace, with
# the setting at 0 and at its default (ALTER SYSTEM + reload), the test
# checks the plan (a bitmap heap scan of the expected kind), the
# pgstrata_bulk_io counters around the query (no multi-block read at 0,
# combined reads at the default; the table's buffers are evicted first),
# and that the rows are those of a sequential scan:
#
# - an exact bitmap of a range (runs of consecutive blocks);
# - the same range with work_mem so small that the bitmap is lossy;
# - a BitmapOr of scattered blocks and a range;
# - parallel bitmap heap scans (shared iterator), exact and lossy;
# - count(*) on an all-visible table (the shape of the skip-fetch
#   optimisation, which 17.11 has turned off);
# - a bitmap scan on the inner side of a nested loop with a LIMIT, so that
#   every rescan drops blocks already read ahead;
# - a SCROLL cursor moved back and forth (the planner puts a Material node
#   on top; without SCROLL, moving back is refused);
# - a temporary table (local buffers);
# - a table of contrib/refdata (heap's scans under another access method).
#
# Then ALTER TABLE ... SET TABLESPACE of a temporary table: combined reads
# at the default, none at 0, the same rows and clean amcheck afterwards.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('main',
	conf => q(
shared_buffers = 32MB
wal_log_hints = on
autovacuum = off
synchronize_seqscans = off
max_worker_processes = 8
max_parallel_workers = 8
log_statement = none
),
	extensions => [qw(pgstrata amcheck pg_buffercache)]);
$node->safe_psql('postgres', "CREATE TABLESPACE ts2 LOCATION ''");
# 18 reads bitmap heap scans through its own read stream (see above)
my $pg18 = $node->safe_psql('postgres', 'SHOW server_version_num') >= 180000;

# set_read_size(VALUE): ALTER SYSTEM + reload, and wait until new sessions
# see it
sub set_read_size
{
	my ($value) = @_;
	my $blocks = $value eq 'DEFAULT' ? 16 : $value;
	$node->safe_psql('postgres',
		$value eq 'DEFAULT'
		? 'ALTER SYSTEM RESET polar_bulk_read_size'
		: "ALTER SYSTEM SET polar_bulk_read_size = $value");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	$node->poll_query_until('postgres',
		"SELECT setting = '$blocks' FROM pg_settings WHERE name = 'polar_bulk_read_size'")
	  or die "polar_bulk_read_size did not become $value";
}

# Plan settings: a bitmap heap scan, or a sequential scan for reference.
my $bitmap = q(
SET enable_seqscan = off;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_tidscan = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_material = off;
SET enable_memoize = off;
);
my $seqscan = q(
SET enable_bitmapscan = off;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_memoize = off;
);
my $parallel = q(
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET min_parallel_index_scan_size = 0;
SET parallel_leader_participation = off;
);
my $lossy = "SET work_mem = '64kB';\n";

# evict_sql(TABLE): SQL that drops the table's pages from shared buffers,
# so that the scan reads them
sub evict_sql
{
	my ($table) = @_;
	return qq(
SELECT count(pg_buffercache_evict(bufferid)) FROM pg_buffercache
 WHERE relfilenode = pg_relation_filenode('$table')
   AND reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
\\g /dev/null
);
}

my $snapshot =
  "SELECT sum(bulk_reads) || ' ' || sum(bulk_read_blocks) FROM pgstrata_bulk_io;\n";

# measure(SETUP, SQL): in one session, run SETUP, then SQL between two
# snapshots of the counters (of all backend types: parallel workers count
# as their own type); returns SQL's output, the bulk reads and blocks it
# issued, and what the session wrote to stderr (warnings such as those of
# buffer pins left behind)
sub measure
{
	my ($setup, $sql) = @_;
	my ($out, $err);
	$node->psql('postgres', "$setup\n$snapshot$sql;\n$snapshot",
		stdout => \$out,
		stderr => \$err,
		on_error_die => 1,
		on_error_stop => 1);
	my @lines = split /\n/, $out;
	my ($r0, $b0) = split / /, shift @lines;
	my ($r1, $b1) = split / /, pop @lines;
	return (join("\n", @lines), $r1 - $r0, $b1 - $b0, $err);
}

# check_case(LABEL, %case): run SQL as a bitmap scan with SETUP at both
# settings and as a sequential scan; compare the rows, the plan of PLAN_SQL
# (SQL by default) with PLAN and the counters.  EVICT runs first, so that
# the table is read.  BLOCKS, if given, is the number of heap blocks the
# bitmap covers; at the default, the blocks read in bulk must be at least
# half of them, in reads of more than two blocks on average.
sub check_case
{
	my ($label, %c) = @_;
	my $setup = $c{setup} // '';
	my $plan_sql = $c{plan_sql} // $c{sql};

	my $expected = $node->safe_psql('postgres', "$seqscan\n$c{sql}");
	my $plan = $node->safe_psql('postgres',
		"$bitmap\n$setup\nEXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $plan_sql"
	);
	like($plan, $c{plan}, "$label: the plan");

	for my $size (0, 'DEFAULT')
	{
		set_read_size($size);
		my ($rows, $reads, $bulk_blocks, $err) =
		  measure($c{evict} . $bitmap . $setup, $c{sql});
		is($rows, $expected,
			"$label, polar_bulk_read_size = $size: the rows of a sequential scan");
		is($err, '', "$label, polar_bulk_read_size = $size: no warning");
		if ($size eq '0' && $pg18)
		{
			ok($reads > 0,
				"$label, polar_bulk_read_size = 0: combined reads, as stock 18 ($reads reads of $bulk_blocks blocks)");
		}
		elsif ($size eq '0')
		{
			is($reads, 0, "$label, polar_bulk_read_size = 0: block by block");
		}
		elsif (defined $c{blocks})
		{
			ok($bulk_blocks >= $c{blocks} / 2 && $bulk_blocks > 2 * $reads,
				"$label, default: $bulk_blocks of $c{blocks} blocks in $reads combined reads"
			);
		}
		else
		{
			ok($reads > 0,
				"$label, default: $reads combined reads of $bulk_blocks blocks");
		}
	}
}

for my $ts ('pg_default', 'cts')
{
	my $t = "bm_$ts";

	# 70000 rows of about 120 bytes, 1200 pages; k follows the physical
	# order (runs), m scatters; updated and deleted rows leave dead
	# versions for the scans to skip.
	$node->safe_psql('postgres', qq(
CREATE TABLE $t (id int, k int, m int, v text) TABLESPACE $ts;
INSERT INTO $t SELECT g, g / 10, (g * 7919) % 1000, repeat(md5(g::text), 3)
  FROM generate_series(1, 70000) g;
CREATE INDEX ${t}_k ON $t (k) TABLESPACE $ts;
CREATE INDEX ${t}_m ON $t (m) TABLESPACE $ts;
VACUUM ANALYZE $t;
UPDATE $t SET v = v || 'x' WHERE id % 50 = 0;
DELETE FROM $t WHERE id % 77 = 0;
));

	my $evict = evict_sql($t);
	my $digest =
	  "SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM $t WHERE";
	my $blocks = sub {
		my ($cond) = @_;
		return $node->safe_psql('postgres',
			"$seqscan SELECT count(DISTINCT (ctid::text::point)[0]) FROM $t WHERE $cond");
	};

	my $range = 'k BETWEEN 1000 AND 3000';
	check_case("$ts: exact bitmap",
		sql => "$digest $range",
		plan => qr/Bitmap Heap Scan on $t.*\n.*Recheck Cond.*\n.*Heap Blocks: exact=\d+\n/,
		blocks => $blocks->($range),
		evict => $evict);

	my $wide = 'k BETWEEN 100 AND 6500';
	check_case("$ts: lossy bitmap",
		setup => $lossy,
		sql => "$digest $wide",
		plan => qr/Bitmap Heap Scan on $t.*\n.*Recheck Cond.*\n.*Rows Removed by Index Recheck.*\n.*Heap Blocks: exact=\d+ lossy=\d+\n/,
		blocks => $blocks->($wide),
		evict => $evict);

	check_case("$ts: BitmapOr of scattered blocks and a range",
		sql => "$digest m IN (3, 500) OR k BETWEEN 2000 AND 2300",
		plan => qr/Bitmap Heap Scan on $t(.*\n)*.*BitmapOr/,
		evict => $evict);

	# the workers share the iterator (the leader only builds the bitmap);
	# EXPLAIN of 17 shows only the leader's heap blocks, so rows removed by
	# the recheck show that the bitmap is lossy
	check_case("$ts: parallel bitmap heap scan",
		setup => $parallel,
		sql => "$digest $wide",
		plan => qr/Workers Launched: 2\n(.*\n)*.*Parallel Bitmap Heap Scan on $t/,
		blocks => $blocks->($wide),
		evict => $evict);
	check_case("$ts: parallel bitmap heap scan, lossy",
		setup => $parallel . $lossy,
		sql => "$digest $wide",
		plan => qr/Workers Launched: 2\n(.*\n)*.*Parallel Bitmap Heap Scan on $t.*\n.*Recheck Cond.*\n.*Rows Removed by Index Recheck: [1-9]/,
		blocks => $blocks->($wide),
		evict => $evict);

	check_case("$ts: rescans on the inner side of a nested loop",
		sql => qq(SELECT count(*), md5(string_agg(o.x || ':' || s.id, ',' ORDER BY o.x, s.id))
  FROM generate_series(1, 30) o(x),
  LATERAL (SELECT id FROM $t WHERE k BETWEEN o.x * 200 AND o.x * 200 + 150 LIMIT 300) s),
		plan => qr/Nested Loop(.*\n)*.*Bitmap Heap Scan on $t .*loops=30\)/,
		evict => $evict);

	my $cursor_query = "SELECT id, v FROM $t WHERE k BETWEEN 1000 AND 1500";
	check_case("$ts: SCROLL cursor moved back and forth",
		sql => qq(
BEGIN;
DECLARE c SCROLL CURSOR FOR $cursor_query;
FETCH 100 FROM c;
FETCH BACKWARD 40 FROM c;
FETCH ABSOLUTE 10 FROM c;
FETCH RELATIVE 2000 FROM c;
FETCH LAST FROM c;
FETCH BACKWARD 3 FROM c;
COMMIT;
),
		plan_sql => $cursor_query,
		plan => qr/Bitmap Heap Scan on $t/,
		evict => $evict);
	my ($ret, $out, $err) = $node->psql('postgres', qq(
$bitmap
BEGIN;
DECLARE c CURSOR FOR $cursor_query;
FETCH 5 FROM c;
FETCH BACKWARD 1 FROM c;
));
	like($err, qr/cursor can only scan forward/,
		"$ts: a bitmap scan cursor without SCROLL cannot move back");

	# all-visible pages: count(*) needs no column of the table
	$node->safe_psql('postgres', "VACUUM $t");
	check_case("$ts: count(*) on all-visible pages",
		sql => "SELECT count(*) FROM $t WHERE $range",
		plan => qr/Bitmap Heap Scan on $t/,
		blocks => $blocks->($range),
		evict => $evict);

	# a temporary table: local buffers, 128 of them (1 MB), so that the
	# scan reads most of the table from its file
	my $temp_setup = qq(
SET temp_buffers = '1MB';
CREATE TEMP TABLE tt (id int, k int, v text) TABLESPACE $ts;
INSERT INTO tt SELECT id, k, v FROM $t;
CREATE INDEX ON tt (k);
ANALYZE tt;
);
	my $temp_sql =
	  "SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM tt WHERE $range";
	my $expected = $node->safe_psql('postgres', "$temp_setup $seqscan $temp_sql");
	like($node->safe_psql('postgres',
			"$temp_setup $bitmap EXPLAIN (COSTS OFF) $temp_sql"),
		qr/Bitmap Heap Scan on tt/, "$ts: temporary table: the plan");
	for my $size (0, 'DEFAULT')
	{
		set_read_size($size);
		my ($rows, $reads, $bulk_blocks, $err) =
		  measure($temp_setup . $bitmap, $temp_sql);
		is($rows, $expected,
			"$ts: temporary table, polar_bulk_read_size = $size: the rows of a sequential scan");
		is($err, '', "$ts: temporary table, polar_bulk_read_size = $size: no warning");
		if ($size eq '0' && $pg18)
		{
			ok($reads > 0,
				"$ts: temporary table, polar_bulk_read_size = 0: combined reads, as stock 18 ($reads reads of $bulk_blocks blocks)");
		}
		elsif ($size eq '0')
		{
			is($reads, 0,
				"$ts: temporary table, polar_bulk_read_size = 0: block by block");
		}
		else
		{
			ok($reads > 0 && $bulk_blocks > 2 * $reads,
				"$ts: temporary table, default: $reads combined reads of $bulk_blocks blocks");
		}
	}

	# ALTER TABLE ... SET TABLESPACE of a temporary table, there and back
	my $other = $ts eq 'cts' ? 'ts2' : 'cts';
	for my $size (0, 'DEFAULT')
	{
		set_read_size($size);
		my $label = "$ts: SET TABLESPACE of a temporary table, polar_bulk_read_size = $size";
		my $content = "SELECT count(*), sum(hashtext(v)) FROM tt;\n";
		my ($pages, $reads, $bulk_blocks) = measure($temp_setup,
			"ALTER TABLE tt SET TABLESPACE $other;\n"
			  . "ALTER TABLE tt SET TABLESPACE $ts;\n"
			  . "SELECT coalesce((SELECT logical_pages FROM pgstrata_relation_compression('tt')\n"
			  . "  WHERE fork = 'main'), pg_relation_size('tt') / 8192);");

		# rows and amcheck in the same session as the table
		my @after = split /\n/, $node->safe_psql('postgres', qq(
$temp_setup
$content
ALTER TABLE tt SET TABLESPACE $other;
$content
SELECT count(*) FROM verify_heapam('tt');
SELECT 'checked' FROM (SELECT bt_index_check('tt_k_idx', true)) s;
));
		is($after[1], $after[0], "$label: the same rows after the copy");
		is($after[2], '0', "$label: verify_heapam is clean after the copy");
		is($after[3], 'checked', "$label: bt_index_check is clean after the copy");
		if ($size eq '0')
		{
			is($reads, 0, "$label: copied block by block");
		}
		else
		{
			# two copies of the table, in reads of up to 16 blocks
			ok($bulk_blocks >= 2 * $pages && $reads <= 2 * ($pages / 16 + 2),
				"$label: $reads combined reads of $bulk_blocks blocks ($pages pages, copied twice)");
		}
	}
}

# A table of contrib/refdata, which stores and scans as heap does (only
# writes differ): its bitmap scans read in bulk too.
$node->safe_psql('postgres', q(
CREATE EXTENSION refdata;
CREATE TABLE rd (id int, k int, m int, v text) USING refdata;
INSERT INTO rd SELECT * FROM bm_pg_default;
CREATE INDEX rd_k ON rd (k);
VACUUM ANALYZE rd;
));
check_case("refdata table: exact bitmap",
	sql => "SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM rd WHERE k BETWEEN 1000 AND 3000",
	plan => qr/Bitmap Heap Scan on rd/,
	blocks => $node->safe_psql('postgres',
		"$seqscan SELECT count(DISTINCT (ctid::text::point)[0]) FROM rd WHERE k BETWEEN 1000 AND 3000"),
	evict => evict_sql('rd'));

done_testing();
