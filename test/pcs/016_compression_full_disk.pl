
# Copyright (c) 2026, pgstrata developers

# A segment that cannot grow, and a full file system, are an ERROR for the
# write that needs the space, as they are for md; they destroy nothing and
# the server stays up.
#
# 1. Growth must not touch space another backend owns.  Where a file system
#    has no fallocate(), the file grows by writing zeros, and those used to
#    be written over a range computed from a size read without a lock: a
#    backend reads the segment's size and stops (injection point
#    pcs-grow-before-allocate), another grows the file and writes a page
#    into the new space, then the first one writes its zeros over that
#    page ("invalid compressed page ...", its image's checksum wrong).  Growth by
#    writing now happens only past the end, read under a lock.  The server
#    runs with test/common/no_fallocate.c preloaded, which makes every
#    fallocate() fail as such file systems do.
# 2. A file-size limit (RLIMIT_FSIZE, which the server turns into EFBIG,
#    "as disk full") that stops a segment from growing is an ERROR, and
#    nothing else happens; the growth used to fall back to writing zeros.
# 3. On a full file system, the first store into a part of the map that is
#    a hole used to kill the backend with SIGBUS, and the postmaster every
#    session with it.  It needs a small file system of its own: make check
#    mounts one when run by root (PGSTRATA_SMALLFS, test/lib.sh); without it
#    this part is skipped, and says so.
# 4. On a full file system, pages that grow after their extension must
#    still be written back, as md's are (md allocates a block's space when
#    it extends): a checkpoint that cannot write them fails, and after a
#    crash the end-of-recovery checkpoint fails the same way, so the server
#    would not start.  They take space from the tablespace's reserve
#    (compressed_tablespace_reserve, pcs_reserve.c); extensions do not.
#    Same small file system.
# 7. Writes into units reused from punched holes take from the reserve too.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use PgStrata::Util;
use PgStrata::Node;
use Test::More;

# the preloaded library that takes fallocate() away
my $shim = PostgreSQL::Test::Utils::tempdir() . '/no_fallocate.so';
system(split(' ', PgStrata::Util::pg_config_value('--cc')),
	'-shared', '-fPIC', '-o', $shim,
	PgStrata::Util::top_dir() . '/test/common/no_fallocate.c') == 0
  or die "could not build $shim";

my $node = PgStrata::Node::compressed_node('nofallocate',
	conf => q(
wal_log_hints = on
autovacuum = off
polar_bulk_extend_size = 0
compressed_tablespace_reserve = 4MB
),
	start => 0);
{
	local $ENV{LD_PRELOAD} = $shim;
	$node->start;
}
PgStrata::Node::create_tablespace($node,
	extensions => [qw(injection_points pg_buffercache amcheck)]);

$node->safe_psql('postgres', q(
-- rows of random bytes: every page is stored raw, 16 units
CREATE TABLE g (id int, v bytea) TABLESPACE cts;
CREATE FUNCTION noise(n int) RETURNS bytea LANGUAGE sql AS
  $$SELECT string_agg(decode(md5(random()::text || i), 'hex'), '') FROM generate_series(1, n / 16) i$$;
INSERT INTO g SELECT g, noise(1900) FROM generate_series(1, 1200) g;
CHECKPOINT;
-- dirty pages for the two sessions to write
INSERT INTO g SELECT g, noise(1900) FROM generate_series(1201, 1600) g;
));
my $path = $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('g')");
# 1200 rows of 1888 random bytes, four to a page: some 2.3 MB of images,
# which the file had to grow by writing zeros to hold (format 5 keeps no
# 2 MB map before its data area, which starts at 8 kB: the file's size
# follows its data)
cmp_ok(-s $path, '>', 8192 + 2 * 1024 * 1024,
	'without fallocate(), compressed segments grow by writing zeros');

# buffers of g that are dirty: the first half for one session, the rest for
# the other
my @dirty = split /\n/, $node->safe_psql('postgres', q(
SELECT bufferid FROM pg_buffercache
WHERE relfilenode = pg_relation_filenode('g') AND relforknumber = 0 AND isdirty
ORDER BY relblocknumber));
cmp_ok(scalar(@dirty), '>=', 40, 'dirty pages to write: ' . scalar(@dirty));
my $half = int(@dirty / 2);
my $a_list = join(',', @dirty[0 .. $half - 1]);
my $b_list = join(',', @dirty[$half .. $#dirty]);

# Session A writes its pages until it needs to grow the file, and stops
# there, having read the file's size.
my $a = $node->background_psql('postgres', on_error_stop => 0);
$a->query_safe(q(
SELECT injection_points_set_local();
SELECT injection_points_attach('pcs-grow-before-allocate', 'wait');
));
$a->query_until(qr/evicting/, qq(
\\echo evicting
SELECT count(*) FROM (SELECT pg_buffercache_evict(b) FROM unnest(ARRAY[$a_list]) b) s;
));
$node->wait_for_event('client backend', 'pcs-grow-before-allocate');
my $size_seen = -s $path;
note "session A stopped before growing the file, at $size_seen bytes";

# Session B writes its pages: it grows the file itself and writes into the
# new space.
$node->safe_psql('postgres',
	"SELECT count(*) FROM (SELECT pg_buffercache_evict(b) FROM unnest(ARRAY[$b_list]) b) s"
);
cmp_ok(-s $path, '>', $size_seen + 8192, 'session B grew the file');

# A goes on, and does not stop at its next growth
$node->safe_psql('postgres', q(
SELECT injection_points_detach('pcs-grow-before-allocate');
SELECT injection_points_wakeup('pcs-grow-before-allocate');
));
my ($a_out, $a_err) = $a->query('SELECT 1');
is($a_err, 0, 'session A wrote its pages too');
$a->quit;

is( $node->safe_psql(
		'postgres', q(
SELECT count(*), sum(length(v)) = count(*) * 1888 FROM g)),
	'1600|t', 'every row reads back, none was overwritten');
is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('g')"),
	'0', 'amcheck finds nothing');
$node->safe_psql('postgres', 'CHECKPOINT');
{
	local $ENV{LD_PRELOAD} = $shim;
	$node->restart;
}
is($node->safe_psql('postgres', 'SELECT count(*) FROM g'),
	'1600', 'and after a restart');

# 2. A file-size limit.  The session may not make the file any longer.
my $s = $node->background_psql('postgres', on_error_stop => 0);
my $s_pid = $s->query_safe('SELECT pg_backend_pid()');
chomp $s_pid;
$s->query_safe('INSERT INTO g SELECT g, noise(1900) FROM generate_series(1601, 2000) g');
my $size_before = -s $path;
system('prlimit', '--pid', $s_pid, '--fsize=' . $size_before) == 0
  or die "prlimit failed";
# 18's pg_buffercache_evict() returns (buffer_evicted, buffer_flushed),
# 17's a boolean: whether the buffer was evicted.
my $evicted =
  $node->safe_psql('postgres', 'SHOW server_version_num') >= 180000
  ? '(pg_buffercache_evict(bufferid)).buffer_evicted'
  : 'pg_buffercache_evict(bufferid)';
my ($s_out, $s_ret) = $s->query(qq(
SELECT count(*) FROM pg_buffercache
WHERE relfilenode = pg_relation_filenode('g') AND isdirty AND $evicted));
is($s_ret, 1, 'writing pages that need a longer file fails');
like($s->{stderr}, qr/could not extend file .*File too large/,
	'with an ERROR for the write that needed the space');
$s->quit;
is(-s $path, $size_before, 'the file did not change');
is( $node->safe_psql(
		'postgres', q(
SELECT count(*), sum(length(v)) = count(*) * 1888 FROM g)),
	'2000|t', 'the server is up, the rows are there');
$node->safe_psql('postgres', 'CHECKPOINT');
is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('g')"),
	'0', 'and written by the checkpointer, which has no limit');

# fill_up(DIR): fill the file system of DIR up, adding to DIR/filler, in
# steps of a page; returns the filler's path
sub fill_up
{
	my ($dir) = @_;
	my $filler = "$dir/filler";
	open(my $fh, '>>', $filler) or die "open $filler: $!";
	binmode $fh;
	my $chunk = 'x' x 4096;
	while (syswrite($fh, $chunk)) { }
	close($fh);
	note 'file system filled: ' . `df -k $dir | tail -1`;
	return $filler;
}

# ledger_checks(NODE): w holds every row as its plain ledger has it, and
# amcheck finds nothing wrong in it (two checks)
sub ledger_checks
{
	my ($n) = @_;
	is( $n->safe_psql(
			'postgres', q(
SELECT count(*) FROM w FULL JOIN w_ledger l USING (id)
WHERE w.v IS DISTINCT FROM l.v)),
		'0',
		'every row as the ledger has it');
	is($n->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('w')"),
		'0', 'amcheck finds nothing');
}

# 3. A full file system
SKIP:
{
	my $smallfs = $ENV{PGSTRATA_SMALLFS};
	skip 'no small file system of its own (PGSTRATA_SMALLFS; make check mounts one when run by root)', 9
	  unless defined $smallfs;
	# given one, it must be usable: not a skip, a failure
	BAIL_OUT("PGSTRATA_SMALLFS is not a writable directory: $smallfs")
	  unless -d $smallfs && -w $smallfs;

	my $dir = "$smallfs/ts";
	mkdir $dir or die "mkdir $dir: $!";
	$node->safe_psql('postgres', qq(
CREATE EXTENSION test_pcs;
CREATE EXTENSION IF NOT EXISTS pgstrata;
CREATE TABLESPACE small LOCATION '$dir' WITH (compression = 'zstd');
CREATE TABLE f (id int, v text) TABLESPACE small;
INSERT INTO f SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
CHECKPOINT;
));
	my $filler = fill_up($smallfs);

	# a page whose map entry lies in a part of the map that is a hole
	my $far = 256 * 7 + 5;
	my ($stdout, $stderr);
	my $ret = $node->psql(
		'postgres', qq(
SELECT injection_points_attach('pcs-map-chunk-allocate', 'notice');
SELECT test_pcs_extend_to('f', $far);),
		stdout => \$stdout,
		stderr => \$stderr);
	isnt($ret, 0, 'extending into a new part of the map fails on a full file system');
	like($stderr, qr/could not extend file .*No space left on device/,
		'with an ERROR saying why');
	like($stderr, qr/DETAIL:  The file system has \d+ kB free, less than the 1 new blocks may need/,
		'refused before anything is written, as md refuses an extension');
	ok( !$node->log_contains('was terminated by signal'),
		'no process was killed');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM f'),
		'20000', 'the server is up, the table intact');

	unlink($filler) or die "unlink: $!";
	$node->safe_psql('postgres',
		"SELECT injection_points_detach('pcs-map-chunk-allocate')");
	is($node->safe_psql('postgres', "SELECT test_pcs_extend_to('f', $far)"),
		$far + 1, 'with space again, the same extension works');

	# The statistics of a fork whose map has holes, read on a full file
	# system: through the mapping, reading a hole of tmpfs takes a page,
	# and on a full one the reader got SIGBUS.
	$filler = fill_up($smallfs);
	is( $node->safe_psql(
			'postgres',
			"SELECT logical_pages FROM pgstrata_relation_compression('f') WHERE fork = 'main'"
		),
		$far + 1,
		'its statistics read on a full file system');
	ok(!$node->log_contains('was terminated by signal'),
		'and no process was killed');
	unlink($filler) or die "unlink: $!";
	$node->safe_psql('postgres', 'CHECKPOINT');
	$node->restart;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM f'),
		'20000', 'and survives a restart');
	$node->safe_psql('postgres', 'DROP TABLE f; DROP TABLESPACE small');
}

# 4. Pages that grow on a full file system
SKIP:
{
	my $smallfs = $ENV{PGSTRATA_SMALLFS};
	skip 'no small file system of its own (PGSTRATA_SMALLFS; make check mounts one when run by root)', 20
	  unless defined $smallfs;

	my $dir = "$smallfs/ts4";
	my $mb = 1024 * 1024;
	mkdir $dir or die "mkdir $dir: $!";
	# 1,000 pages with room for a new version of each row (HOT updates),
	# stored in a unit each; a plain ledger of the same rows
	$node->safe_psql('postgres', qq(
CREATE TABLESPACE small4 LOCATION '$dir' WITH (compression = 'zstd');
CREATE TABLE w (id int, v text) WITH (fillfactor = 40) TABLESPACE small4;
INSERT INTO w SELECT g, repeat('a', 300) FROM generate_series(1, 9000) g;
CREATE TABLE w_ledger AS SELECT * FROM w;
CHECKPOINT;
));
	my ($reserve) = glob("$dir/PG_*/pgsql_tmp/pgstrata_reserve");
	is(-s $reserve, 4 * $mb, 'CREATE TABLESPACE makes the reserve, 4 MB');
	cmp_ok($node->safe_psql('postgres', "SELECT pg_tablespace_size('small4')"),
		'<', 2 * $mb, 'pg_tablespace_size() leaves the reserve out');

	my $filler = fill_up($smallfs);

	# Rows that compress worse: each page's image grows from one unit to
	# five, 2.5 MB in all.
	my $noisy = q(UPDATE w SET v = array_to_string(ARRAY(
  SELECT md5(random()::text || id || i) FROM generate_series(1, 10) i), '')
  WHERE %s;
UPDATE w_ledger l SET v = w.v FROM w WHERE w.id = l.id AND l.v <> w.v);
	$node->safe_psql('postgres', sprintf($noisy, 'true'));

	# A backend that writes them back takes from the first half of the
	# reserve only, then fails.
	my $offset = -s $node->logfile;
	my ($ret, $stdout, $stderr) = $node->psql('postgres', qq(
SELECT count(*) FROM pg_buffercache
WHERE relfilenode = pg_relation_filenode('w') AND isdirty AND $evicted));
	isnt($ret, 0, 'a backend writing back pages that grew fails on a full file system');
	like($stderr, qr/could not extend file .*No space left on device/,
		'with an ERROR saying why');
	is(-s $reserve, 2 * $mb,
		'after taking the first half of the reserve, and no more');

	# the checkpointer writes them back with the second half
	($ret, $stdout, $stderr) = $node->psql('postgres', 'CHECKPOINT');
	is($ret, 0, 'a checkpoint writes back pages that grew, on a full file system')
	  or diag $stderr;
	ok( $node->log_contains(
			qr/file system of tablespace \d+ is full, compressed pages written back take space from its reserve/,
			$offset),
		'from the reserve, and says so');
	my $left = -s $reserve;
	cmp_ok($left, '<', 2 * $mb, "the reserve shrank, to $left bytes");

	# Extending the table past the parts of the map that exist (its map
	# covers 1,024 blocks in four 4 kB pages): zero-extension reads the
	# map's entries, and on a full tmpfs reading a hole through the mapping
	# used to kill the backend with SIGBUS.  (Fill up again: what a write
	# takes from the reserve beyond its need is free for anybody.)
	# The INSERT itself is refused now, as on md: the statement that adds
	# data is the one that meets the full file system, not the write-backs
	# of what it added (they would spend the reserve).
	fill_up($smallfs);
	($ret, $stdout, $stderr) = $node->psql('postgres', q(
INSERT INTO w SELECT g, repeat('b', 300) FROM generate_series(9001, 10000) g;
INSERT INTO w_ledger SELECT * FROM w WHERE id > 9000;
));
	isnt($ret, 0, 'an INSERT that extends the table fails on a full file system');
	like($stderr, qr/could not extend file .*No space left on device/,
		'with the ERROR of an extension that cannot be backed');
	ok(!$node->log_contains('was terminated by signal', $offset),
		'extending on a full tmpfs kills no process');

	# A crash with pages that grew: redo and the end-of-recovery
	# checkpoint write them back.
	$node->safe_psql('postgres', sprintf($noisy, 'id <= 3000'));
	$node->stop('immediate');
	$offset = -s $node->logfile;
	$ret = $node->start(fail_ok => 1);
	ok($ret, 'the server starts after a crash on a full file system');
	ok( $node->log_contains(
			qr/compressed pages written back take space from its reserve/,
			$offset),
		'its end-of-recovery checkpoint took from the reserve');
	cmp_ok(-s $reserve, '<', $left, 'which shrank again');
	ledger_checks($node);
	ok(!$node->log_contains('was terminated by signal'),
		'no process was killed');

	# space again: the next checkpoint restores the reserve
	unlink($filler) or die "unlink: $!";
	$node->safe_psql('postgres', 'CHECKPOINT');
	is(-s $reserve, 4 * $mb, 'a checkpoint restores the reserve');

	$node->safe_psql('postgres', 'DROP TABLE w; DROP TABLESPACE small4');
	ok(!-e $reserve, 'DROP TABLESPACE removes the reserve');
	is(scalar(my @left = glob("$dir/PG_*")), 0,
		'and its version directory');
}

# 5. CREATE TABLESPACE on a nearly full file system: the tablespace is made, with
# a WARNING that its reserve could not be, and a checkpoint makes the
# reserve once there is space.
SKIP:
{
	my $smallfs = $ENV{PGSTRATA_SMALLFS};
	skip 'no small file system of its own (PGSTRATA_SMALLFS; make check mounts one when run by root)', 6
	  unless defined $smallfs;

	my $dir = "$smallfs/ts5";
	my $mb = 1024 * 1024;
	mkdir $dir or die "mkdir $dir: $!";
	my $filler = fill_up($smallfs);
	# room for the tablespace's directories and settings, not its reserve
	truncate($filler, (-s $filler) - 64 * 1024) or die "truncate: $!";
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"CREATE TABLESPACE small5 LOCATION '$dir' WITH (compression = 'zstd')");
	is($ret, 0, 'CREATE TABLESPACE succeeds on a nearly full file system');
	like(
		$stderr,
		qr/WARNING:  could not allocate 4 MB for the reserve "[^"]+pgsql_tmp\/pgstrata_reserve": No space left on device/,
		'with a WARNING that the reserve could not be made');
	my ($reserve) = glob("$dir/PG_*/pgsql_tmp/pgstrata_reserve");
	ok(!defined $reserve || (stat($reserve))[12] * 512 < 4 * $mb,
		'the reserve is not there, or short');
	unlink($filler) or die "unlink: $!";
	$node->safe_psql('postgres', qq(
CREATE TABLE r5 (id int, v text) TABLESPACE small5;
INSERT INTO r5 SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
CHECKPOINT;
));
	($reserve) = glob("$dir/PG_*/pgsql_tmp/pgstrata_reserve");
	ok(defined $reserve && -s $reserve == 4 * $mb
		  && (stat($reserve))[12] * 512 >= 4 * $mb,
		'with space again, a checkpoint makes the reserve, allocated');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM r5'),
		'1000', 'the tablespace holds a table');

	# An earlier build kept the reserve in the version directory itself: a
	# checkpoint removes it and keeps the one in pgsql_tmp, and a restart
	# leaves that one alone, without a word about an unexpected file.
	my ($vdir) = glob("$dir/PG_*");
	open my $old, '>', "$vdir/pgstrata_reserve" or die "open: $!";
	truncate($old, $mb) or die "truncate: $!";
	close $old;
	$node->safe_psql('postgres', 'CHECKPOINT');
	ok(!-e "$vdir/pgstrata_reserve",
		'a checkpoint removes the reserve an earlier build made');
	is(-s $reserve, 4 * $mb, 'and keeps the reserve in pgsql_tmp');
	my $offset = -s $node->logfile;
	$node->restart;
	is(-s $reserve, 4 * $mb, 'a restart keeps the reserve');
	ok(!$node->log_contains('unexpected file found in temporary-files directory', $offset),
		'and does not call it an unexpected temporary file');
	$node->safe_psql('postgres', 'DROP TABLE r5; DROP TABLESPACE small5');
	ok(!-e $reserve, 'DROP TABLESPACE removes the reserve');
}

# 6. The setting: its range, that only the configuration sets it, and its
# default, -1, which holds back as much as shared_buffers (what one
# checkpoint may have to write, each page grown by at most a block).
{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"ALTER SYSTEM SET compressed_tablespace_reserve = '2TB'");
	like($stderr,
		qr/2097152 MB is outside the valid range for parameter "compressed_tablespace_reserve" \(-1 MB \.\. 1048576 MB\)/,
		'a reserve above 1 TB is refused');
	($ret, $stdout, $stderr) = $node->psql('postgres',
		"ALTER SYSTEM SET compressed_tablespace_reserve = -2");
	like($stderr, qr/outside the valid range/, 'so is one below -1');
	($ret, $stdout, $stderr) = $node->psql('postgres',
		"SET compressed_tablespace_reserve = '8MB'");
	like($stderr,
		qr/parameter "compressed_tablespace_reserve" cannot be changed now/,
		'a session cannot change it');
	is($node->safe_psql('postgres', q(
SELECT setting, unit, context, min_val, max_val, boot_val FROM pg_settings
WHERE name = 'compressed_tablespace_reserve')),
		'4|MB|sighup|-1|1048576|-1',
		'pg_settings shows it in MB, reloadable, -1 to 1 TB, -1 by default');

	my ($reserve) = glob($node->data_dir . '/pg_tblspc/*/PG_*/pgsql_tmp/pgstrata_reserve');
	is(-s $reserve, 4 * 1024 * 1024, 'cts has a reserve of 4 MB');
	$node->safe_psql('postgres', q(
ALTER SYSTEM SET compressed_tablespace_reserve = -1;
SELECT pg_reload_conf();));
	$node->poll_query_until('postgres',
		"SELECT setting = '-1' FROM pg_settings WHERE name = 'compressed_tablespace_reserve'");
	$node->safe_psql('postgres', 'CHECKPOINT');
	is(-s $reserve,
		$node->safe_psql('postgres',
			"SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'"),
		'at -1, a checkpoint makes it as large as shared_buffers');
	$node->safe_psql('postgres', q(
ALTER SYSTEM RESET compressed_tablespace_reserve;
SELECT pg_reload_conf();));
}

$node->stop;

# 7. Writes into reused units on a full file system.  Units become reusable
# once a checkpoint's fsync has made a map without them durable, and their
# whole pages are punched then (pcs_free_pool.c).  A page that grows later
# may take them: its write into the hole needs new space, and used to fail
# with ENOSPC without touching the reserve, so every checkpoint failed,
# and every restart's end-of-recovery checkpoint.  It takes from the
# reserve now, as growth does.  A node of its own: the one above has no
# fallocate(), so it punches no holes.
SKIP:
{
	my $smallfs = $ENV{PGSTRATA_SMALLFS};
	skip 'no small file system of its own (PGSTRATA_SMALLFS; make check mounts one when run by root)', 6
	  unless defined $smallfs;

	my $mb = 1024 * 1024;
	my $dir = "$smallfs/ts7";
	mkdir $dir or die "mkdir $dir: $!";
	my $real = PgStrata::Node::compressed_node('reuse',
		conf => q(
fsync = on
wal_log_hints = on
autovacuum = off
polar_bulk_extend_size = 0
compressed_tablespace_reserve = 4MB
checkpoint_timeout = 1h
),
		extensions => [qw(amcheck)]);
	# 1,000 pages of a unit each, with room for new row versions; a
	# plain ledger of the same rows
	$real->safe_psql('postgres', qq(
CREATE TABLESPACE small7 LOCATION '$dir' WITH (compression = 'zstd');
CREATE TABLE w (id int, v text) WITH (fillfactor = 40) TABLESPACE small7;
INSERT INTO w SELECT g, repeat('a', 300) FROM generate_series(1, 9000) g;
CREATE TABLE w_ledger AS SELECT * FROM w;
CHECKPOINT;
));
	my $noisy = q(UPDATE w SET v = array_to_string(ARRAY(
  SELECT md5(random()::text || id || i) FROM generate_series(1, 10) i), '')
  WHERE %s;
UPDATE w_ledger l SET v = w.v FROM w WHERE w.id = l.id AND l.v <> w.v);

	# The first half of the pages grow and move; the checkpoint's fsync
	# makes their old units reusable, and punches them.
	$real->safe_psql('postgres', sprintf($noisy, 'id <= 4500') . '; CHECKPOINT');
	my ($reserve) = glob("$dir/PG_*/pgsql_tmp/pgstrata_reserve");
	is(-s $reserve, 4 * $mb, 'the reserve is whole');

	# The other half grow on a full file system: they move into the holes.
	my $filler = fill_up($smallfs);
	my $offset = -s $real->logfile;
	$real->safe_psql('postgres', sprintf($noisy, 'id > 4500'));
	my ($ret, $stdout, $stderr) = $real->psql('postgres', 'CHECKPOINT');
	is($ret, 0, 'a checkpoint writes pages into reused units on a full file system')
	  or diag $stderr;
	cmp_ok(-s $reserve, '<', 4 * $mb, 'taking space from the reserve');
	$real->stop('immediate');
	$ret = $real->start(fail_ok => 1);
	ok($ret, 'the server starts again');
	ledger_checks($real);
	unlink($filler) or die "unlink: $!";
	$real->safe_psql('postgres', 'DROP TABLE w; DROP TABLESPACE small7');
	$real->stop;
}

done_testing();
