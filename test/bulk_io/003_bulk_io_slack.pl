
# Copyright (c) 2026, pgstrata developers

# Heap pre-extension leaves no permanent slack (issue 19).  Each table is
# compared with a twin loaded the same way with polar_bulk_extend_size = 0,
# which is stock PostgreSQL 17's behaviour:
#
# - one 200-row INSERT from one session into a table of about 1,230 pages
#   grows it as stock does (it once grew it to 1,742 pages, and VACUUM kept
#   them), and after VACUUM it is no larger than its twin;
# - a COPY into a large table pre-extends by the window; VACUUM gives back
#   the part nobody used, so that the table is no larger than its twin;
# - with a 512 kB window on a table more than 16 times larger, which stock
#   VACUUM does not truncate (it cuts tails of 1/16 of the table or 1,000
#   pages), VACUUM at the default gives back the window nobody used, and at
#   0 keeps it as stock does;
# - VACUUM does not cut a window that an open transaction is filling, nor
#   waits for the table's lock to try;
# - a backend that waited on the extension lock behind a pre-extension
#   takes its page from that window instead of extending again (the
#   injection point bulk-io-extension-locked holds the first backend with
#   the lock, after the buffer manager's extension, until the second one,
#   held at bulk-io-extension-prepare until then, queues behind it);
# - an insert that finds no page with room in the FSM while another backend
#   has zero-extended a window and not yet entered it into the FSM (held at
#   bulk-io-window-before-fsm) does not put its row on the window's last
#   page, which is then the relation's last page: VACUUM could not give
#   back the window below it;
# - nor does an insert that looked at the relation's size (held at
#   bulk-io-extension-sized) before another backend added a window extend
#   the relation past that window: it takes a page of the window;
# - a COPY that finds the table extended by another backend since its own
#   last extension, or whose window others took pages of (held at
#   bulk-io-window-entered meanwhile), extends as stock does, without a
#   window (several loads into one table share no window: that cost them
#   5-13 % of their time), and pre-extends again once it is the only one
#   loading;
# - nor does a COPY that filled pages of another's window extend with a
#   window of its own at its first extension;
# - amcheck is clean after each.

use strict;
use warnings FATAL => 'all';

use Digest::MD5 qw(md5_hex);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Held;

my $node = PostgreSQL::Test::Cluster->new('slack');
$node->init;
$node->append_conf('postgresql.conf', q(
shared_buffers = 32MB
autovacuum = off
checkpoint_timeout = 1h
log_statement = none
));
$node->start;
$node->safe_psql('postgres', q(
CREATE EXTENSION pgstrata;
CREATE EXTENSION amcheck;
CREATE EXTENSION injection_points;
));

# pages(REL): the number of main-fork pages
sub pages
{
	my ($rel) = @_;
	return $node->safe_psql('postgres',
		"SELECT pg_relation_size('$rel') / current_setting('block_size')::int");
}

# pre_extensions(): heap pre-extensions of all backends so far
sub pre_extensions
{
	return $node->safe_psql('postgres',
		'SELECT sum(heap_pre_extensions) FROM pgstrata_bulk_io');
}

# amcheck_clean(TABLE, LABEL): verify_heapam and the B-tree find nothing
sub amcheck_clean
{
	my ($table, $label) = @_;
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM verify_heapam('$table')"),
		'0', "$label: verify_heapam($table) is clean");
	is($node->safe_psql('postgres', "SELECT bt_index_check('${table}_id', true)"),
		'', "$label: bt_index_check(${table}_id, heapallindexed) is clean");
}

# row_page(TABLE): the page of the row whose id is 0
sub row_page
{
	my ($table) = @_;
	return $node->safe_psql('postgres',
		"SELECT (ctid::text::point)[0]::int FROM $table WHERE id = 0");
}

# window_given_back(TABLE, P0, ROWS, LABEL): VACUUM gives back the window
# nobody used (the table ends within 100 pages of P0, its size before the
# window), the table has ROWS rows, and amcheck is clean
sub window_given_back
{
	my ($table, $p0, $rows, $label) = @_;
	$node->safe_psql('postgres', "VACUUM $table");
	ok(pages($table) < $p0 + 100,
		'VACUUM gives back the window nobody used (' . pages($table)
		  . " pages, $p0 before the COPY)");
	is($node->safe_psql('postgres', "SELECT count(*) FROM $table"),
		$rows, 'every row is there');
	amcheck_clean($table, $label);
}

# A table of about 1,230 pages (9.6 MB, above the 8 MB of
# polar_min_bulk_extend_table_size), loaded without pre-extension.
my $base_rows = 75000;
sub make_big
{
	my ($name) = @_;
	$node->safe_psql('postgres', qq(
SET polar_bulk_extend_size = 0;
CREATE TABLE $name (id int, v text);
INSERT INTO $name SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, $base_rows) g;
CREATE INDEX ${name}_id ON $name (id);
VACUUM $name;
));
}

my $next_id = 1000000;

# insert_sql(TABLE, N): one INSERT of N new rows, without a bulk-insert state
sub insert_sql
{
	my ($table, $n) = @_;
	my $from = $next_id;
	$next_id += $n;
	return "INSERT INTO $table SELECT g, repeat(md5(g::text), 3) FROM generate_series($from, "
	  . ($from + $n - 1) . ") g";
}

# copy_file(N): a COPY file of N new rows
my $file_no = 0;
sub copy_file
{
	my ($n) = @_;
	my $file = $PostgreSQL::Test::Utils::tmp_check . '/slack_' . $file_no++ . '.copy';
	open my $fh, '>', $file or die "could not write $file: $!";
	for my $id ($next_id .. $next_id + $n - 1)
	{
		my $md5 = md5_hex($id);
		print $fh "$id\t$md5$md5$md5\n";
	}
	close $fh;
	$next_id += $n;
	return $file;
}

# --- loads that skip the free space map (CREATE TABLE AS, COPY into a
# table created in the same transaction) extend as before: a version of the
# change looped for ever there ---
my $ctas_file = $PostgreSQL::Test::Utils::tmp_check . '/ctas.copy';
$node->safe_psql('postgres', qq(
CREATE TABLE ctas AS SELECT g AS id, repeat(md5(g::text), 3) AS v
	FROM generate_series(1, 150000) g;
COPY ctas TO '$ctas_file';
BEGIN;
CREATE TABLE copied (LIKE ctas);
COPY copied FROM '$ctas_file';
COPY copied FROM '$ctas_file';
COMMIT;
));
is($node->safe_psql('postgres', 'SELECT count(*) FROM copied'),
	'300000', 'CREATE TABLE AS and a load into a new table past 8 MB finish');

# --- the case of the issue: one INSERT from one session ---
make_big('ins_on');
make_big('ins_off');
my $p0 = pages('ins_on');
is(pages('ins_off'), $p0, "the twins have the same size ($p0 pages)");
ok($p0 >= 1024, 'and are above polar_min_bulk_extend_table_size');

my $pre0 = pre_extensions();
my $sql = insert_sql('ins_on', 200);
(my $sql_off = $sql) =~ s/ins_on/ins_off/;
$node->safe_psql('postgres', $sql);
$node->safe_psql('postgres', "SET polar_bulk_extend_size = 0; $sql_off");
is(pre_extensions() - $pre0, 0,
	'one INSERT from one session, nobody waiting: no pre-extension');
is(pages('ins_on'), pages('ins_off'),
	"the 200-row INSERT grows the $p0-page table as stock does ("
	  . pages('ins_on') . ' pages, stock ' . pages('ins_off') . ')');
$node->safe_psql('postgres', 'VACUUM ins_on; VACUUM ins_off');
is(pages('ins_on'), pages('ins_off'),
	'after VACUUM the table is as large as stock (' . pages('ins_on') . ' pages)');
amcheck_clean('ins_on', 'after the INSERT and VACUUM');

# --- COPY pre-extends; VACUUM gives back the part of the window nobody used ---
make_big('copy_on');
make_big('copy_off');
my $file = copy_file(20000);
$pre0 = pre_extensions();
$node->safe_psql('postgres', "COPY copy_on FROM '$file'");
ok(pre_extensions() - $pre0 >= 1, 'COPY into a large table pre-extends');
$node->safe_psql('postgres',
	"SET polar_bulk_extend_size = 0; COPY copy_off FROM '$file'");
my ($on, $off) = (pages('copy_on'), pages('copy_off'));
ok($on > $off, "before VACUUM the window is there ($on pages, stock $off)");
$node->safe_psql('postgres', 'VACUUM copy_on; VACUUM copy_off');
($on, $off) = (pages('copy_on'), pages('copy_off'));
ok($on <= $off,
	"after VACUUM the COPY's table is no larger than stock's ($on pages, stock $off)");
is($node->safe_psql('postgres', 'SELECT count(*), sum(hashtext(v)) FROM copy_on'),
	$node->safe_psql('postgres', 'SELECT count(*), sum(hashtext(v)) FROM copy_off'),
	'and holds the same rows');
amcheck_clean('copy_on', 'after the COPY and VACUUM');

# --- a window that stock VACUUM would keep: a 512 kB window on a table
# more than 16 times larger, below 1,000 pages ---
make_big('small_win');
$file = copy_file(1000);
$pre0 = pre_extensions();
# (committed asynchronously, so that VACUUM right after may not be able to
# set the page all-visible, as after a load with synchronous_commit = off)
$node->safe_psql('postgres',
	"SET synchronous_commit = off; SET polar_bulk_extend_size = '512kB'; COPY small_win FROM '$file'");
is(pre_extensions() - $pre0, 1, 'COPY pre-extends by a 512 kB window');
my $with_window = pages('small_win');
$node->safe_psql('postgres',
	'SET polar_bulk_extend_size = 0; VACUUM small_win');
is(pages('small_win'), $with_window,
	"at 0, VACUUM keeps the empty tail as stock does ($with_window pages)");
$node->safe_psql('postgres', 'VACUUM small_win');
ok(pages('small_win') <= $with_window - 40,
	'at the default, VACUUM gives back the window nobody used ('
	  . pages('small_win') . ' pages)');
amcheck_clean('small_win', 'after the small window was cut');

# The same with an open transaction filling the window: VACUUM does not try
# to take the table's lock (which would fail for 5 s) and keeps it.
$file = copy_file(1000);
my $writer = $node->background_psql('postgres');
$writer->query_safe(
	"BEGIN; SET LOCAL polar_bulk_extend_size = '512kB'; COPY small_win FROM '$file'");
$with_window = pages('small_win');
my ($ret, $out, $err) = $node->psql('postgres', 'VACUUM (VERBOSE) small_win');
unlike($err, qr/stopping truncate/,
	'VACUUM does not try to truncate a window an open transaction is filling');
is(pages('small_win'), $with_window, 'and keeps it');
$writer->query_safe('COMMIT');
$writer->quit;
$node->safe_psql('postgres', 'VACUUM small_win');
ok(pages('small_win') < $with_window,
	'once the transaction committed, VACUUM gives back the rest');
is($node->safe_psql('postgres', 'SELECT count(*) FROM small_win'),
	$base_rows + 2000, 'with every row');
amcheck_clean('small_win', 'after the filled window was cut');

# --- a window that an open transaction is filling stays ---
$file = copy_file(5000);
$writer = $node->background_psql('postgres');
$pre0 = pre_extensions();
$writer->query_safe("BEGIN; COPY copy_on FROM '$file'");
is(pre_extensions() - $pre0, 1, 'an open transaction COPYs into a new window');
my $filling = pages('copy_on');
$node->safe_psql('postgres', 'VACUUM copy_on');
is(pages('copy_on'), $filling,
	'VACUUM does not cut the window the open transaction is filling');
$writer->query_safe('COMMIT');
$writer->quit;
is($node->safe_psql('postgres', 'SELECT count(*) FROM copy_on'),
	$base_rows + 20000 + 5000, 'the transaction committed every row');
$node->safe_psql('postgres', 'VACUUM copy_on');
ok(pages('copy_on') < $filling,
	'once it committed, VACUUM gives back the rest of the window ('
	  . pages('copy_on') . " pages, $filling before)");
amcheck_clean('copy_on', 'after the window was filled and cut');

# --- a backend waiting on the extension lock uses the window ---
make_big('conc');
$p0 = pages('conc');
$pre0 = pre_extensions();
# The second backend stops before it extends (bulk-io-extension-prepare),
# having found the last page full; the first one extends and stops with
# the extension lock held (bulk-io-extension-locked); the second one then
# queues on the lock, and the first one, seeing it, adds the window.
my $second = PgStrata::Held::session($node, 'bulk-io-extension-prepare',
	insert_sql('conc', 200), 'second done');
my $first = PgStrata::Held::session($node, 'bulk-io-extension-locked',
	insert_sql('conc', 200), 'first done');
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-extension-prepare')");
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND wait_event = 'extend'"
) or die 'the second inserter did not queue on the extension lock';
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-extension-locked')");
$first->query_until(qr/first done/, '');
$second->query_until(qr/second done/, '');
$first->quit;
$second->quit;
is(pre_extensions() - $pre0, 1,
	'a backend queued on the extension lock: one pre-extension');
is(pages('conc') - $p0, 512,
	'the waiter took its page from the window: the table grew by the window only');
is($node->safe_psql('postgres', 'SELECT count(*) FROM conc'),
	$base_rows + 400, 'both inserts are there');
amcheck_clean('conc', 'after the concurrent extension');

# --- an insert does not take the last page of a window not yet in the FSM ---
make_big('race');
$p0 = pages('race');
my $race_file = copy_file(2000);
# The COPY stops after zero-extending its window, holding the extension
# lock, before the window is in the FSM.
my $copier = PgStrata::Held::session($node, 'bulk-io-window-before-fsm',
	"COPY race FROM '$race_file'", 'copied');
is(pages('race'), $p0 + 512, 'the window is in the file, not yet in the FSM');
# A row of 2 kB, for which no page but the window's has room.  Stock takes
# the relation's last page when the FSM knows none: here the window's last.
my $inserter = $node->background_psql('postgres');
$inserter->query_until(qr/started/,
	"\\echo started\nINSERT INTO race VALUES (0, repeat('x', 2000));\n\\echo inserted\n");
$node->poll_query_until('postgres', q(
SELECT EXISTS (SELECT FROM race WHERE id = 0)
    OR EXISTS (SELECT FROM pg_locks WHERE locktype = 'extend' AND NOT granted)))
  or die 'the insert neither finished nor waited for the extension lock';
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-window-before-fsm')");
$copier->query_until(qr/copied/, '');
$inserter->query_until(qr/inserted/, '');
$copier->quit;
$inserter->quit;
my $row_page = row_page('race');
ok($row_page < $p0 + 511,
	"the insert did not take the window's last page (page $row_page, the window "
	  . "$p0 to " . ($p0 + 511) . ')');
window_given_back('race', $p0, $base_rows + 2001,
	'after the insert beside the window');

# --- an insert that saw the size before another backend's window does not
# extend past that window ---
make_big('late');
# rows stored as they are: a row of 7,000 bytes fits only on an empty page
$node->safe_psql('postgres', 'ALTER TABLE late ALTER v SET STORAGE PLAIN');
$p0 = pages('late');
$pre0 = pre_extensions();
# The insert of such a row stops once it has looked at the relation's
# size, on its way to extend it.
my $late = PgStrata::Held::session($node, 'bulk-io-extension-sized',
	"INSERT INTO late VALUES (0, repeat('x', 7000))", 'inserted');
# Meanwhile a COPY pre-extends: its window goes into the FSM.
$node->safe_psql('postgres', "COPY late FROM '" . copy_file(1000) . "'");
is(pre_extensions() - $pre0, 1, 'the COPY added a window');
is(pages('late'), $p0 + 512, 'the table is the window longer');
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-extension-sized')");
$late->query_until(qr/inserted/, '');
$late->quit;
is(pages('late'), $p0 + 512,
	'the insert did not extend the table past the window it did not see');
$row_page = row_page('late');
ok($row_page >= $p0 && $row_page < $p0 + 512,
	"its row went into the window (page $row_page, the window $p0 to "
	  . ($p0 + 511) . ')');
window_given_back('late', $p0, $base_rows + 1001,
	'after the insert that waited');

# --- a COPY that another backend's extension interrupts adds no window ---
make_big('loads');
$p0 = pages('loads');
$pre0 = pre_extensions();
# about 650 pages of rows: a window (512 pages), one extension more, and
# another
$file = copy_file(40000);
# The COPY stops each time it is about to extend (bulk-io-extension-prepare,
# attached for it alone); the first time, before its first extension.
$copier = PgStrata::Held::session($node, 'bulk-io-extension-prepare',
	"COPY loads FROM '$file'", 'copied');

# stopped_again(SIZE): wait until the COPY has grown the table past SIZE
# pages and stopped before extending it once more, or has added a second
# window without stopping (a version of the change that adds windows
# regardless)
sub stopped_again
{
	my ($size) = @_;
	$node->poll_query_until('postgres', qq(
SELECT (pg_relation_size('loads') / current_setting('block_size')::int > $size
		AND EXISTS (SELECT FROM pg_stat_activity
					WHERE wait_event = 'bulk-io-extension-prepare'))
	OR (SELECT sum(heap_pre_extensions) FROM pgstrata_bulk_io) >= $pre0 + 2))
	  or die 'the COPY neither stopped before its next extension nor pre-extended twice';
}

$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-extension-prepare')");
stopped_again($p0);
is(pre_extensions() - $pre0, 1, 'the COPY, extending alone, added a window');
is(pages('loads'), $p0 + 512, 'of 512 pages, which it filled');

# Another backend extends the table meanwhile, by a few pages of its own.
$node->safe_psql('postgres', insert_sql('loads', 200));
my $interrupted = pages('loads');
ok($interrupted > $p0 + 512,
	'another backend extended the table (' . ($interrupted - $p0 - 512) . ' pages)');
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-extension-prepare')");
stopped_again($interrupted);
is(pre_extensions() - $pre0, 1,
	'the COPY, whose last extension another one followed, added no window');
my $stock_like = pages('loads') - $interrupted;
ok($stock_like >= 1 && $stock_like <= 64,
	"it extended by stock's amount ($stock_like pages, at most 64)");

# released_alone(TABLE, COPIER, POINTS, ROWS, LABEL): detach the injection
# points POINTS and wake the COPY of COPIER where it waits; alone now, it
# adds a window at its next extension (a second pre-extension since $pre0
# was taken, the table 512 pages longer) and finishes; TABLE then has ROWS
# rows, and amcheck is clean after VACUUM
sub released_alone
{
	my ($table, $copier, $points, $rows, $label) = @_;
	my $before = pages($table);
	my $held_at = $node->safe_psql('postgres',
		"SELECT wait_event FROM pg_stat_activity WHERE wait_event LIKE 'bulk-io-%'");
	$node->safe_psql('postgres',
		join('', map { "SELECT injection_points_detach('$_');" } @$points)
		  . "SELECT injection_points_wakeup('$held_at')");
	$copier->query_until(qr/copied/, '');
	$copier->quit;
	is(pre_extensions() - $pre0, 2,
		"$label: alone again, the COPY added a window at its next extension");
	is(pages($table), $before + 512,
		"$label: the table grew by that extension and its window ("
		  . pages($table) . " pages, $before before)");
	is($node->safe_psql('postgres', "SELECT count(*) FROM $table"),
		$rows, "$label: every row of both loads is there");
	$node->safe_psql('postgres', "VACUUM $table");
	amcheck_clean($table, $label);
}

released_alone('loads', $copier, ['bulk-io-extension-prepare'],
	$base_rows + 40000 + 200, 'after the interrupted COPY');

# --- a COPY whose window others took pages of adds no window next ---
make_big('shared');
$p0 = pages('shared');
$pre0 = pre_extensions();
# about 560 pages of rows: a window, of which another backend takes 100
# pages, one extension more, and another
$file = copy_file(34000);
$copier = $node->background_psql('postgres');
$copier->query_safe(q(
SELECT injection_points_set_local();
SELECT injection_points_attach('bulk-io-extension-prepare', 'wait');
SELECT injection_points_attach('bulk-io-window-entered', 'wait')));
$copier->query_until(qr/started/,
	"\\echo started\nCOPY shared FROM '$file';\n\\echo copied\n");

# held_at(POINTS, SIZE): wait until the COPY has grown the table past SIZE
# pages and waits at one of POINTS (a list, 'a', 'b')
sub held_at
{
	my ($points, $size) = @_;
	$node->poll_query_until('postgres', qq(
SELECT pg_relation_size('shared') / current_setting('block_size')::int > $size
	AND EXISTS (SELECT FROM pg_stat_activity WHERE wait_event IN ($points))))
	  or die "the COPY did not stop at $points past $size pages";
}
$node->poll_query_until('postgres',
	"SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event = 'bulk-io-extension-prepare')")
  or die 'the COPY did not stop before its first extension';
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-extension-prepare')");
held_at("'bulk-io-window-entered'", $p0);
is(pre_extensions() - $pre0, 1, 'the COPY added a window');
is(pages('shared'), $p0 + 512, 'of 512 pages, in the FSM');
# another backend takes 100 of its pages (61 of these rows fill a page)
$node->safe_psql('postgres', insert_sql('shared', 6100));
is(pages('shared'), $p0 + 512, 'another backend took its pages from the window');
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-window-entered')");
held_at("'bulk-io-extension-prepare'", $p0 + 511);
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-extension-prepare')");
# (at its next extension, or, with a window, after it)
held_at("'bulk-io-extension-prepare', 'bulk-io-window-entered'", $p0 + 512);
is(pre_extensions() - $pre0, 1,
	'the COPY whose window others shared added no window at its next extension');
$stock_like = pages('shared') - $p0 - 512;
ok($stock_like >= 1 && $stock_like <= 64,
	"it extended by stock's amount ($stock_like pages, at most 64)");
released_alone('shared', $copier,
	[ 'bulk-io-extension-prepare', 'bulk-io-window-entered' ],
	$base_rows + 34000 + 6100, 'after the shared window');

# --- a COPY that used another's window adds none at its first extension ---
make_big('cons');
$p0 = pages('cons');
$pre0 = pre_extensions();
# The first COPY stops once its window is in the FSM.
my $owner = PgStrata::Held::session($node, 'bulk-io-window-entered',
	"COPY cons FROM '" . copy_file(1000) . "'", 'owner done');
is(pre_extensions() - $pre0, 1, 'the first COPY added a window');
# The second one takes the window's pages, and stops each time it is about
# to extend the table.
my $consumer = PgStrata::Held::session($node, 'bulk-io-extension-prepare',
	"COPY cons FROM '" . copy_file(33000) . "'", 'consumer done');
is(pages('cons'), $p0 + 512,
	'the second COPY filled pages of the window before it had to extend');
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-extension-prepare')");
$node->poll_query_until('postgres', qq(
SELECT (pg_relation_size('cons') / current_setting('block_size')::int > $p0 + 512
		AND EXISTS (SELECT FROM pg_stat_activity
					WHERE wait_event = 'bulk-io-extension-prepare'))
	OR (SELECT sum(heap_pre_extensions) FROM pgstrata_bulk_io) >= $pre0 + 2))
  or die 'the second COPY neither stopped before its next extension nor pre-extended';
is(pre_extensions() - $pre0, 1,
	'the COPY that filled pages of that window added no window at its first extension');
my $extra = pages('cons') - $p0 - 512;
ok($extra >= 1 && $extra <= 64,
	"it extended by stock's amount ($extra pages, at most 64)");
$node->safe_psql('postgres', q(
SELECT injection_points_detach('bulk-io-extension-prepare');
SELECT injection_points_wakeup('bulk-io-extension-prepare')));
$consumer->query_until(qr/consumer done/, '');
$consumer->quit;
$node->safe_psql('postgres',
	"SELECT injection_points_wakeup('bulk-io-window-entered')");
$owner->query_until(qr/owner done/, '');
$owner->quit;
is($node->safe_psql('postgres', 'SELECT count(*) FROM cons'),
	$base_rows + 1000 + 33000, 'every row of both COPYs is there');
$node->safe_psql('postgres', 'VACUUM cons');
amcheck_clean('cons', 'after the COPY into another one\'s window');

done_testing();
