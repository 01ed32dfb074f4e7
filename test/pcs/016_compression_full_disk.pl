
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

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use PgStrata::Util;
use Test::More;

# the preloaded library that takes fallocate() away
my $shim = PostgreSQL::Test::Utils::tempdir() . '/no_fallocate.so';
system(split(' ', PgStrata::Util::pg_config_value('--cc')),
	'-shared', '-fPIC', '-o', $shim,
	PgStrata::Util::top_dir() . '/test/common/no_fallocate.c') == 0
  or die "could not build $shim";

my $node = PostgreSQL::Test::Cluster->new('nofallocate');
$node->init;
$node->append_conf('postgresql.conf', q(
wal_log_hints = on
allow_in_place_tablespaces = on
autovacuum = off
polar_bulk_extend_size = 0
));
{
	local $ENV{LD_PRELOAD} = $shim;
	$node->start;
}

$node->safe_psql('postgres', q(
CREATE EXTENSION injection_points;
CREATE EXTENSION pg_buffercache;
CREATE EXTENSION amcheck;
CREATE TABLESPACE cts LOCATION '' WITH (compression = 'zstd');
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
cmp_ok(-s $path, '>', 4 * 1024 * 1024,
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

# 3. A full file system
SKIP:
{
	my $smallfs = $ENV{PGSTRATA_SMALLFS};
	skip 'no small file system of its own (PGSTRATA_SMALLFS; make check mounts one when run by root)', 7
	  unless defined $smallfs;
	# given one, it must be usable: not a skip, a failure
	BAIL_OUT("PGSTRATA_SMALLFS is not a writable directory: $smallfs")
	  unless -d $smallfs && -w $smallfs;

	my $dir = "$smallfs/ts";
	mkdir $dir or die "mkdir $dir: $!";
	$node->safe_psql('postgres', qq(
CREATE EXTENSION test_pcs;
CREATE TABLESPACE small LOCATION '$dir' WITH (compression = 'zstd');
CREATE TABLE f (id int, v text) TABLESPACE small;
INSERT INTO f SELECT g, md5(g::text) FROM generate_series(1, 20000) g;
CHECKPOINT;
));
	# fill the file system up
	my $filler = "$smallfs/filler";
	open(my $fh, '>', $filler) or die "open $filler: $!";
	binmode $fh;
	my $chunk = 'x' x 65536;
	while (syswrite($fh, $chunk)) { }
	close($fh);
	note 'file system filled: ' . `df -k $smallfs | tail -1`;

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
	like($stderr, qr/pcs-map-chunk-allocate/,
		'the write got as far as the new part of the map');
	like($stderr, qr/could not extend file .*No space left on device/,
		'with an ERROR saying why');
	ok( !$node->log_contains('was terminated by signal'),
		'no process was killed');
	is($node->safe_psql('postgres', 'SELECT count(*) FROM f'),
		'20000', 'the server is up, the table intact');

	unlink($filler) or die "unlink: $!";
	$node->safe_psql('postgres',
		"SELECT injection_points_detach('pcs-map-chunk-allocate')");
	is($node->safe_psql('postgres', "SELECT test_pcs_extend_to('f', $far)"),
		$far + 1, 'with space again, the same extension works');
	$node->safe_psql('postgres', 'CHECKPOINT');
	$node->restart;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM f'),
		'20000', 'and survives a restart');
	$node->safe_psql('postgres', 'DROP TABLE f; DROP TABLESPACE small');
}

$node->stop;
done_testing();
