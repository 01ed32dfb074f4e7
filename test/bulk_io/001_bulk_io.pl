
# Copyright (c) 2026, pgstrata developers

# The polar_bulk_* settings: bulk read-ahead and pre-extension.
#
# Every setting is flipped with ALTER SYSTEM + pg_reload_conf() and its
# effect is read from the counters of the pgstrata extension
# (pgstrata_bulk_io) and from relation sizes, on a plain and on a
# compressed tablespace:
#
# - polar_bulk_read_size: sequential scans, both of VACUUM's heap passes,
#   B-tree vacuum scans and ALTER TABLE SET TABLESPACE issue multi-block
#   reads at the default and none at 0 (on 18, which streams VACUUM and
#   B-tree vacuum itself, those two combine reads at 0 too, as stock 18);
# - polar_bulk_extend_size and polar_min_bulk_extend_table_size: a COPY
#   into a large table grows it by the window at once, into a small one
#   page by page, and VACUUM gives back the part of the window nobody used
#   (bulk_io/003_bulk_io_slack.pl compares with the setting at 0);
# - polar_index_create_bulk_extend_size: a B-tree build pre-extends and cuts
#   its unused tail, giving the same index as a build without it;
# - amcheck (verify_heapam, bt_index_check with heapallindexed) after
#   VACUUM, CREATE INDEX and concurrent single-row inserts with every
#   setting at 0 and at its default;
# - an immediate stop right after a pre-extension: after restart inserts go
#   on, VACUUM finds the zero pages and inserts reuse them;
# - a streaming standby gives the same answers.

use strict;
use warnings FATAL => 'all';

use Digest::MD5 qw(md5_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('primary',
	init => { allows_streaming => 1 },
	conf => q(
shared_buffers = 32MB
wal_log_hints = on
autovacuum = off
checkpoint_timeout = 1h
max_wal_size = 1GB
wal_keep_size = 2GB
log_statement = none
restart_after_crash = on
),
	extensions => [qw(pgstrata amcheck pg_prewarm injection_points)]);
$node->safe_psql('postgres', "CREATE TABLESPACE ts2 LOCATION ''");

$node->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'base', has_streaming => 1);
$standby->start;

# The settings, their defaults in blocks, their contexts and their ranges.
# They are storage policy: superusers (and roles granted SET on them) may
# override three per session, for a bulk load or an index build; the size
# threshold is server-wide.
my %default = (
	polar_bulk_read_size => 16,
	polar_bulk_extend_size => 512,
	polar_min_bulk_extend_table_size => 1024,
	polar_index_create_bulk_extend_size => 512);
my %context = (
	polar_bulk_read_size => 'superuser',
	polar_bulk_extend_size => 'superuser',
	polar_min_bulk_extend_table_size => 'sighup',
	polar_index_create_bulk_extend_size => 'superuser');

for my $name (sort keys %default)
{
	is($node->safe_psql('postgres',
			"SELECT setting || ' ' || unit || ' ' || context FROM pg_settings WHERE name = '$name'"),
		"$default{$name} 8kB $context{$name}", "$name: default, unit and context");
}

my ($ret, $out, $err);

# A role with only INSERT on another role's table could once grow it by
# any window it chose; now it can set none of them.
$node->safe_psql('postgres', q(
CREATE ROLE bulk_nobody LOGIN;
CREATE TABLE bulk_victim (id int);
INSERT INTO bulk_victim VALUES (0);
GRANT INSERT ON bulk_victim TO bulk_nobody;
));
for my $name (sort keys %default)
{
	($ret, $out, $err) = $node->psql('postgres',
		"SET $name = 0; SET polar_bulk_extend_size = '256MB'; INSERT INTO bulk_victim SELECT generate_series(1, 5)",
		extra_params => [ '-U', 'bulk_nobody' ]);
	my $why = $context{$name} eq 'sighup'
	  ? qr/parameter "$name" cannot be changed now/
	  : qr/permission denied to set parameter "$name"/;
	like($err, $why, "$name: a role without privileges cannot SET it");
}
is($node->safe_psql('postgres',
		"SELECT pg_relation_size('bulk_victim') / current_setting('block_size')::int"),
	'1', 'and the table it may insert into stayed one page');

# A superuser can delegate a per-session override with GRANT SET.
$node->safe_psql('postgres',
	'GRANT SET ON PARAMETER polar_bulk_extend_size TO bulk_nobody');
($ret, $out, $err) = $node->psql('postgres',
	"SET polar_bulk_extend_size = '1MB'; SHOW polar_bulk_extend_size",
	extra_params => [ '-U', 'bulk_nobody' ]);
is($out, '1MB', 'GRANT SET ON PARAMETER lets a role override it per session')
  or diag $err;
$node->safe_psql('postgres', q(
REVOKE SET ON PARAMETER polar_bulk_extend_size FROM bulk_nobody;
DROP TABLE bulk_victim;
DROP ROLE bulk_nobody;
));
is($node->safe_psql('postgres', 'SHOW polar_bulk_read_size'),
	'128kB', 'polar_bulk_read_size shows 128kB');
is($node->safe_psql('postgres', 'SHOW polar_bulk_extend_size'),
	'4MB', 'polar_bulk_extend_size shows 4MB');

# The largest combined read is one I/O of at most PG_IOV_MAX buffers: 32 on
# 17 (256kB), 128 on 18 (1MB), which raised it.
my $pg18 = $node->safe_psql('postgres', 'SHOW server_version_num') >= 180000;
my ($read_max, $read_over, $read_over_blocks) =
  $pg18 ? (128, '2MB', 256) : (32, '512kB', 64);
($ret, $out, $err) = $node->psql('postgres',
	"ALTER SYSTEM SET polar_bulk_read_size = '$read_over'");
like($err, qr/$read_over_blocks 8kB is outside the valid range for parameter "polar_bulk_read_size" \(0 8kB \.\. $read_max 8kB\)/,
	"polar_bulk_read_size above its maximum is refused with the range");
($ret, $out, $err) = $node->psql('postgres',
	"ALTER SYSTEM SET polar_bulk_extend_size = '2GB'");
like($err, qr/262144 8kB is outside the valid range for parameter "polar_bulk_extend_size" \(0 8kB \.\. 131072 8kB\)/,
	'polar_bulk_extend_size above 1GB is refused with the range');
($ret, $out, $err) = $node->psql('postgres',
	"ALTER SYSTEM SET polar_index_create_bulk_extend_size = -1");
like($err, qr/outside the valid range for parameter "polar_index_create_bulk_extend_size"/,
	'a negative polar_index_create_bulk_extend_size is refused');

# set_guc(NAME, VALUE): ALTER SYSTEM + reload, and wait until new sessions
# see it (pg_settings.setting is in blocks).
sub set_guc
{
	my ($name, $value) = @_;
	my $blocks = $value eq 'DEFAULT' ? $default{$name} : $value;
	if ($value eq 'DEFAULT')
	{
		$node->safe_psql('postgres', "ALTER SYSTEM RESET $name");
	}
	else
	{
		$node->safe_psql('postgres', "ALTER SYSTEM SET $name = $value");
	}
	$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
	$node->poll_query_until('postgres',
		"SELECT setting = '$blocks' FROM pg_settings WHERE name = '$name'")
	  or die "$name did not become $value";
}

my @counter_names = qw(bulk_reads bulk_read_blocks heap_pre_extensions
  heap_pre_extended_blocks index_pre_extensions index_pre_extended_blocks
  index_trimmed_blocks);

# counters(): the counters of all backend types (parallel workers do some of
# the reads) as a hash
sub counters
{
	my $row = $node->safe_psql('postgres',
		'SELECT ' . join(', ', map { "sum($_)" } @counter_names)
		  . ' FROM pgstrata_bulk_io');
	my %c;
	@c{@counter_names} = split /\|/, $row;
	return \%c;
}

# delta(SQL): run SQL in one session, return how the counters moved
sub delta
{
	my ($sql) = @_;
	my $before = counters();
	$node->safe_psql('postgres', $sql);
	my $after = counters();
	return { map { $_ => $after->{$_} - $before->{$_} } @counter_names };
}

# pages(REL): the logical number of main-fork pages (a compressed fork's
# physical size is smaller, see pgstrata_relation_compression)
sub pages
{
	my ($rel) = @_;
	return $node->safe_psql('postgres', qq(
SELECT coalesce((SELECT logical_pages FROM pgstrata_relation_compression('$rel')
				 WHERE fork = 'main'),
				pg_relation_size('$rel') / current_setting('block_size')::int)));
}

# amcheck_clean(NODE, TABLE, INDEX): verify_heapam finds nothing and the
# index holds every heap tuple
sub amcheck_clean
{
	my ($n, $table, $index, $label) = @_;
	is($n->safe_psql('postgres',
			"SELECT count(*) FROM verify_heapam('$table', check_toast => true)"),
		'0', "$label: verify_heapam($table) is clean");
	is($n->safe_psql('postgres',
			"SELECT bt_index_check('$index', true)"),
		'', "$label: bt_index_check($index, heapallindexed) is clean");
}

# A table of 1200 pages (9.4 MB), loaded without pre-extension.
sub make_big
{
	my ($name, $ts) = @_;
	$node->safe_psql('postgres', qq(
SET polar_bulk_extend_size = 0;
CREATE TABLE $name (id int, v text) TABLESPACE $ts;
INSERT INTO $name SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 70000) g;
CREATE INDEX ${name}_id ON $name (id) TABLESPACE $ts;
));
}

my $next_id = 1000000;

# planner settings that make count(*) a sequential scan
my $seqscan = 'SET enable_indexonlyscan = off; SET enable_bitmapscan = off;';

# An INSERT of N rows in one statement, one heap_insert per row.
sub insert_sql
{
	my ($table, $n) = @_;
	my $from = $next_id;
	$next_id += $n;
	return "INSERT INTO $table SELECT g, repeat(md5(g::text), 3) FROM generate_series($from, "
	  . ($from + $n - 1) . ") g";
}

# copy_sql(TABLE, N): a COPY of N new rows from a file.  A COPY has a
# bulk-insert state, which is what makes a single session pre-extend.
my $file_no = 0;
sub copy_sql
{
	my ($table, $n) = @_;
	my $file = $PostgreSQL::Test::Utils::tmp_check . '/bulk_' . $file_no++ . '.copy';
	open my $fh, '>', $file or die "could not write $file: $!";
	for my $id ($next_id .. $next_id + $n - 1)
	{
		my $md5 = md5_hex($id);
		print $fh "$id\t$md5$md5$md5\n";
	}
	close $fh;
	$next_id += $n;
	return "COPY $table FROM '$file'";
}

for my $ts ('pg_default', 'cts')
{
	my $big = "big_$ts";
	make_big($big, $ts);
	my $d;
	my $p0;

	# --- heap pre-extension ---
	set_guc('polar_bulk_extend_size', 0);
	$p0 = pages($big);
	$d = delta(insert_sql($big, 2000));
	is($d->{heap_pre_extensions}, 0,
		"$ts: polar_bulk_extend_size = 0: no pre-extension");
	my $grown = pages($big) - $p0;
	ok($grown > 0 && $grown < 64,
		"$ts: polar_bulk_extend_size = 0: the table grew page by page ($grown pages)");

	set_guc('polar_bulk_extend_size', 'DEFAULT');
	$p0 = pages($big);
	$d = delta(insert_sql($big, 2000));
	is($d->{heap_pre_extensions}, 0,
		"$ts: default: an INSERT from one session, nobody waiting, does not pre-extend");
	$p0 = pages($big);
	$d = delta(copy_sql($big, 2000));
	is($d->{heap_pre_extensions}, 1, "$ts: default: a COPY pre-extends once");
	is($d->{heap_pre_extended_blocks}, 512, "$ts: default: of 512 blocks");
	is(pages($big) - $p0, 512, "$ts: default: the table grew by 4 MB at once");

	# The first part of the window was added through shared buffers, so the
	# inserts that take those pages from the FSM read nothing from the file.
	my $read = $node->safe_psql('postgres',
		"BEGIN; " . insert_sql($big, 2000) . ";
		 SELECT pg_stat_get_xact_blocks_fetched('$big'::regclass) -
				pg_stat_get_xact_blocks_hit('$big'::regclass);
		 COMMIT;");
	is($read, 0, "$ts: inserts into the pre-extended pages read no block");

	$p0 = pages($big);
	$d = delta(insert_sql($big, 4000));
	is($d->{heap_pre_extensions}, 0,
		"$ts: the next inserts use the pre-extended pages");
	is(pages($big), $p0, "$ts: and the table does not grow");

	$d = delta("VACUUM $big");
	ok(pages($big) < $p0 - 300,
		"$ts: VACUUM gives back the part of the window nobody used ("
		  . pages($big) . " pages, $p0 before)");
	amcheck_clean($node, $big, "${big}_id", "$ts: after VACUUM, default");

	# a small table is below polar_min_bulk_extend_table_size
	my $small = "small_$ts";
	$node->safe_psql('postgres',
		"CREATE TABLE $small (id int, v text) TABLESPACE $ts");
	$d = delta(insert_sql($small, 2000));
	is($d->{heap_pre_extensions}, 0,
		"$ts: a table below polar_min_bulk_extend_table_size is not pre-extended");
	set_guc('polar_min_bulk_extend_table_size', 0);
	$p0 = pages($small);
	$d = delta(copy_sql($small, 2000));
	is($d->{heap_pre_extensions}, 1,
		"$ts: polar_min_bulk_extend_table_size = 0: the small table is pre-extended");
	ok(pages($small) - $p0 >= 500,
		"$ts: polar_min_bulk_extend_table_size = 0: by the window");
	set_guc('polar_min_bulk_extend_table_size', 'DEFAULT');

	# --- io_combine_limit, upstream's setting, bounds every read ---
	$node->restart;
	$d = delta("SET io_combine_limit = 1; $seqscan SELECT count(*) FROM $big");
	is($d->{bulk_reads}, 0,
		"$ts: io_combine_limit = 1: the seq scan reads block by block at the default polar_bulk_read_size");

	# --- read-ahead: sequential scan, VACUUM, SET TABLESPACE ---
	my $content = $node->safe_psql('postgres',
		"SELECT count(*), sum(hashtext(v)) FROM $big");
	for my $size (0, 'DEFAULT')
	{
		set_guc('polar_bulk_read_size', $size);
		my $label = "$ts: polar_bulk_read_size = $size";

		# a restart empties shared buffers, so that the blocks are read
		# A sequential scan is upstream's own read stream: at 0 it combines
		# reads up to io_combine_limit, as stock 17 and 18 do.
		# (a sequential scan: once VACUUM has given the window back, every
		# page is all-visible and count(*) would read the index instead)
		$node->restart;
		$d = delta("$seqscan SELECT count(*) FROM $big");
		ok($d->{bulk_reads} > 0 && $d->{bulk_read_blocks} > $d->{bulk_reads},
			"$label: seq scan reads in bulk ($d->{bulk_reads} reads, $d->{bulk_read_blocks} blocks)");

		$node->restart;
		$d = delta("VACUUM (DISABLE_PAGE_SKIPPING) $big");
		# 18 streams VACUUM itself: at 0 it combines up to
		# io_combine_limit, as stock 18 does; 17 read block by block.
		if ($size eq '0' && !$pg18)
		{
			is($d->{bulk_reads}, 0, "$label: VACUUM reads block by block");
		}
		else
		{
			ok($d->{bulk_reads} > 0,
				"$label: VACUUM reads in bulk ($d->{bulk_reads} reads, $d->{bulk_read_blocks} blocks)");
		}
		amcheck_clean($node, $big, "${big}_id", "$label: after VACUUM");

		for my $to ($ts eq 'cts' ? 'ts2' : 'cts', $ts)
		{
			$node->restart;
			$d = delta("ALTER TABLE $big SET TABLESPACE $to");
			if ($size eq '0')
			{
				is($d->{bulk_reads}, 0,
					"$label: SET TABLESPACE $to copies block by block");
			}
			else
			{
				ok($d->{bulk_reads} > 0,
					"$label: SET TABLESPACE $to reads in bulk ($d->{bulk_reads} reads, $d->{bulk_read_blocks} blocks)");
			}
			is($node->safe_psql('postgres',
					"SELECT count(*), sum(hashtext(v)) FROM $big"),
				$content, "$label: same rows after SET TABLESPACE $to");
		}
		amcheck_clean($node, $big, "${big}_id",
			"$label: after SET TABLESPACE");
	}

	# --- VACUUM's second heap pass: with a small ring, the pages with dead
	# items are read again after the index pass; in bulk, the blocks read in
	# bulk then exceed the heap and the index together ---
	my $p3 = "p3_$ts";
	$node->safe_psql('postgres', qq(
CREATE TABLE $p3 (id int, v text) TABLESPACE $ts;
INSERT INTO $p3 SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 50000) g;
CREATE INDEX ${p3}_id ON $p3 (id) TABLESPACE $ts;
VACUUM $p3;
DELETE FROM $p3 WHERE id % 2 = 0;
));
	$node->restart;
	my $p3_pages = pages($p3) + pages("${p3}_id");
	$d = delta("SET vacuum_buffer_usage_limit = '128kB'; VACUUM $p3");
	ok($d->{bulk_read_blocks} > $p3_pages + 100,
		"$ts: VACUUM's second heap pass reads in bulk ($d->{bulk_read_blocks} blocks in bulk, heap and index have $p3_pages)");
	amcheck_clean($node, $p3, "${p3}_id", "$ts: after the second heap pass");

	# --- B-tree vacuum scans: the heap is prewarmed, so that the bulk reads
	# of VACUUM are the index's ---
	my $bt = "bt_$ts";
	$node->safe_psql('postgres', qq(
CREATE TABLE $bt (id int) TABLESPACE $ts;
INSERT INTO $bt SELECT generate_series(1, 200000);
CREATE INDEX ${bt}_id ON $bt (id) TABLESPACE $ts;
VACUUM $bt;
));
	for my $size (0, 'DEFAULT')
	{
		set_guc('polar_bulk_read_size', $size);
		my $label = "$ts: polar_bulk_read_size = $size";
		$node->safe_psql('postgres',
			"DELETE FROM $bt WHERE id % 10 = " . ($size eq '0' ? 1 : 2));
		$node->restart;
		$node->safe_psql('postgres', "SELECT pg_prewarm('$bt')");
		$d = delta("VACUUM $bt");
		# as VACUUM's heap pass: 18 streams B-tree vacuum itself
		if ($size eq '0' && !$pg18)
		{
			is($d->{bulk_reads}, 0,
				"$label: the B-tree vacuum scan reads block by block");
		}
		else
		{
			ok($d->{bulk_reads} > 0,
				"$label: the B-tree vacuum scan reads in bulk ($d->{bulk_reads} reads, $d->{bulk_read_blocks} blocks)");
		}
		amcheck_clean($node, $bt, "${bt}_id", "$label: after index VACUUM");
	}

	# --- B-tree builds ---
	my %index_pages;
	for my $size (0, 'DEFAULT')
	{
		set_guc('polar_index_create_bulk_extend_size', $size);
		my $label = "$ts: polar_index_create_bulk_extend_size = $size";
		my $index = "${big}_v_" . ($size eq '0' ? 'off' : 'on');
		$d = delta("CREATE INDEX $index ON $big (v, id) TABLESPACE $ts");
		if ($size eq '0')
		{
			is($d->{index_pre_extensions}, 0, "$label: no pre-extension");
		}
		else
		{
			ok($d->{index_pre_extensions} > 0,
				"$label: the build pre-extends ($d->{index_pre_extensions} times, $d->{index_pre_extended_blocks} blocks)");
			ok($d->{index_trimmed_blocks} > 0 && $d->{index_trimmed_blocks} <= 512,
				"$label: the unused tail ($d->{index_trimmed_blocks} blocks) is cut at the end");
		}
		$index_pages{$size} = pages($index);
		amcheck_clean($node, $big, $index, "$label: after CREATE INDEX");
	}
	is($index_pages{DEFAULT}, $index_pages{0},
		"$ts: the index has the same size with and without pre-extension");

	# a build that never fills its write queue (the index of a new TOAST
	# table) extends only to its pages: no window to zero and cut
	$d = delta("CREATE TABLE toasty_$ts (id int, v text) TABLESPACE $ts");
	is($d->{index_pre_extensions} + $d->{index_trimmed_blocks}, 0,
		"$ts: the TOAST index of a new table is not pre-extended");

	# --- concurrent single-row inserts, every setting at 0 and default ---
	for my $size (0, 'DEFAULT')
	{
		set_guc($_, $size) for sort keys %default;
		my $base = $next_id;
		$next_id += 1000000;
		$node->pgbench(
			"--no-vacuum --client=4 --transactions=500",
			0, [qr{processed: 2000/2000}], [qr{^$}],
			"$ts: concurrent inserts with every setting at $size",
			{
				"020_insert_${ts}_$size" => qq(
INSERT INTO $big VALUES ($base + :client_id * 1000 + random(1, 999), repeat(md5(random()::text), 3));
)
			});
		$node->safe_psql('postgres', "VACUUM $big");
		amcheck_clean($node, $big, "${big}_id",
			"$ts: after concurrent inserts and VACUUM, settings at $size");
	}
	set_guc($_, 'DEFAULT') for sort keys %default;

	# --- VACUUM gives back a window nobody used, at 0 as stock does ---
	my $trunc = "trunc_$ts";
	make_big($trunc, $ts);
	$node->safe_psql('postgres', copy_sql($trunc, 2000));
	$p0 = pages($trunc);
	set_guc('polar_bulk_extend_size', 0);
	$node->safe_psql('postgres', "VACUUM $trunc");
	ok(pages($trunc) < $p0 - 400,
		"$ts: polar_bulk_extend_size = 0: VACUUM truncates the empty tail");
	set_guc('polar_bulk_extend_size', 'DEFAULT');
	$node->safe_psql('postgres', copy_sql($trunc, 2000));
	$p0 = pages($trunc);
	$node->safe_psql('postgres', "VACUUM $trunc");
	ok(pages($trunc) < $p0 - 400,
		"$ts: default: VACUUM gives back the window nobody used");

	# --- an immediate stop right after a pre-extension ---
	my $crash = "crash_$ts";
	make_big($crash, $ts);
	my $nonempty = pages($crash);
	$d = delta(copy_sql($crash, 2000));
	is($d->{heap_pre_extensions}, 1, "$ts: pre-extension before the crash");
	my $extended = pages($crash);
	$node->stop('immediate');
	$node->start;
	ok(pages($crash) >= $extended,
		"$ts: after the crash the zero pages are still there");
	# The FSM pages that knew the window were lost with the crash: the
	# inserts must find the window at the end of the table, not add one.
	my $from_crash = $next_id;
	$d = delta(copy_sql($crash, 2000));
	is($d->{heap_pre_extensions}, 0,
		"$ts: after the crash inserts do not pre-extend again");
	is(pages($crash), $extended,
		"$ts: after the crash inserts fill the window the crash left");
	ok($node->safe_psql('postgres',
			"SELECT min((ctid::text::point)[0]) FROM $crash WHERE id >= $from_crash")
		  >= $nonempty - 1,
		"$ts: after the crash the rows are on the window's pages");

	# A crash of the extending backend between the zero-extension and the
	# FSM update (injection point bulk-io-window-before-fsm): the window
	# was never in the FSM at all.
	my $crash2 = "crash2_$ts";
	make_big($crash2, $ts);
	my $nonempty2 = pages($crash2);
	$node->safe_psql('postgres',
		"SELECT injection_points_attach('bulk-io-window-before-fsm', 'wait')");
	my ($o, $e) = ('', '');
	my $bg = IPC::Run::start(
		[ 'psql', '-X', '-d', $node->connstr('postgres'), '-c',
			copy_sql($crash2, 2000) ],
		'>', \$o, '2>', \$e);
	$node->poll_query_until('postgres',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'bulk-io-window-before-fsm'")
	  or die 'no backend reached bulk-io-window-before-fsm';
	my $pid = $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE wait_event = 'bulk-io-window-before-fsm'");
	my $logpos = -s $node->logfile;
	kill 'KILL', $pid;
	$bg->finish;
	$node->wait_for_log(qr/database system is ready to accept connections/, $logpos);
	my $window2 = pages($crash2);
	ok($window2 >= $nonempty2 + 400,
		"$ts: killed between zero-extension and FSM update, the window is on disk ($window2 pages)");
	$from_crash = $next_id;
	$d = delta(copy_sql($crash2, 2000));
	is($d->{heap_pre_extensions}, 0,
		"$ts: the window the FSM never knew is used, not extended again");
	is(pages($crash2), $window2, "$ts: the table did not grow");
	ok($node->safe_psql('postgres',
			"SELECT min((ctid::text::point)[0]) FROM $crash2 WHERE id >= $from_crash")
		  >= $nonempty2 - 1,
		"$ts: the rows are on the window's pages");
	amcheck_clean($node, $crash2, "${crash2}_id", "$ts: after the crash at the injection point");
	# The first insert after the crash took the last page, so the rest of
	# the window is not at the end: VACUUM keeps it, and inserts use it.
	$node->safe_psql('postgres', "VACUUM $crash");
	my $before = pages($crash);
	my $from = $next_id;
	$node->safe_psql('postgres', insert_sql($crash, 2000));
	is(pages($crash), $before,
		"$ts: after VACUUM inserts do not extend the table");
	ok($node->safe_psql('postgres',
			"SELECT min((ctid::text::point)[0]) FROM $crash WHERE id >= $from")
		  >= $nonempty - 1,
		"$ts: the inserted rows are on pre-extended zero pages");
	amcheck_clean($node, $crash, "${crash}_id", "$ts: after crash recovery");
}

# The standby replays all of it.
$node->wait_for_catchup($standby);
for my $rel (map { ("big_$_", "crash_$_", "crash2_$_", "small_$_", "trunc_$_", "bt_$_", "p3_$_") }
	('pg_default', 'cts'))
{
	is($standby->safe_psql('postgres',
			"SELECT count(*), sum(hashtext(t::text)) FROM $rel t"),
		$node->safe_psql('postgres',
			"SELECT count(*), sum(hashtext(t::text)) FROM $rel t"),
		"standby: $rel has the same rows");
}
amcheck_clean($standby, 'big_cts', 'big_cts_v_on', 'standby');
amcheck_clean($standby, 'crash_pg_default', 'crash_pg_default_id', 'standby');

done_testing();
