
# Copyright (c) 2026, pgstrata developers

# Asynchronous reads of compressed forks (PostgreSQL 18; README.pcs,
# "Asynchronous reads"), with each io_method this build has:
#
# 1. Rows read back through AIO are a plain ledger's, with images
#    compressed with and without a dictionary, after the buffers were
#    evicted; with io_method = worker the I/O workers perform the reads
#    (they open the segment: the synchronous fallback never makes them),
#    also of pages whose images need a dictionary (decoded in the worker
#    with the copy in shared memory).
# 2. Reads after updates, checkpoints and evictions (pages move in the
#    file) still give the ledger's rows, and amcheck is clean.
# 3. Rows whose pages do not compress (stored raw) read back as a ledger's,
#    and with io_method = worker an I/O worker reads them: a run of raw
#    images is read straight into its buffers, not by the fallback; a
#    damaged raw page fails its page checksum (XX001 naming the block),
#    and a raw image of zeros, which the page checksum takes for a new
#    page, is XX001 naming its block too.
# 4. A damaged image of the main fork is an ERROR with
#    ERRCODE_DATA_CORRUPTED naming the relation and block, the server stays
#    up; a damaged FSM image is zeroed with a WARNING and inserts go on; an
#    image cut short by the end of the file is an ERROR naming its block.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $probe = PostgreSQL::Test::Cluster->new('aio_probe');
if ($probe->pg_version < 18)
{
	plan skip_all => 'asynchronous I/O exists from PostgreSQL 18 on';
}

# io_uring where the build has it and the kernel lets the server start
# with it; worker and sync always
my @methods = ('worker', 'sync');
{
	$probe->init;
	$probe->append_conf('postgresql.conf', "io_method = io_uring\n");
	if ($probe->start(fail_ok => 1))
	{
		push @methods, 'io_uring';
		$probe->stop;
	}
	else
	{
		note 'io_uring: this build or kernel cannot start with it';
	}
}

# Rows of varying length from a small vocabulary (numbers, a date, a
# comment of 10 to 80 words), in t (compressed) and ledger (plain)
sub fill
{
	my ($node, $from, $to) = @_;
	$node->safe_psql('postgres', qq(
INSERT INTO t SELECT g, (g * 7919 % 100000) / 100.0,
	date '1992-01-01' + (g * 31 % 2500),
	(SELECT string_agg((ARRAY['carefully','final','deposits','detect',
		'slyly','furiously','regular','accounts','ironic','packages',
		'quickly','pending','requests','express','theodolites','boost'])
		[1 + (g * k * 13) % 16], ' ')
	 FROM generate_series(1, 10 + g % 70) k)
	FROM generate_series($from, $to) g;
INSERT INTO ledger SELECT * FROM t WHERE id BETWEEN $from AND $to;
));
}

# same(NODE): do t and the plain ledger hold the same rows?
sub same
{
	my ($node) = @_;
	return $node->safe_psql('postgres', q(
SELECT (SELECT md5(string_agg(t::text, '|' ORDER BY id)) FROM t) =
	   (SELECT md5(string_agg(l::text, '|' ORDER BY id)) FROM ledger l)));
}

# evict(NODE): t's pages leave shared buffers, so that reads go to storage
sub evict
{
	my ($node) = @_;
	$node->safe_psql('postgres', q(
SELECT pg_buffercache_evict_relation('t');
SELECT pg_buffercache_evict_relation('t_pkey');));
}

# worker_has_open(NODE, PATH): does an I/O worker have PATH open?
sub worker_has_open
{
	my ($node, $path) = @_;
	my @pids = split /\n/, $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'io worker'");
	for my $pid (@pids)
	{
		opendir(my $dh, "/proc/$pid/fd") or next;
		for my $fd (readdir $dh)
		{
			my $target = readlink("/proc/$pid/fd/$fd");
			next unless defined $target;
			return 1 if $target eq $path;
		}
		closedir $dh;
	}
	return 0;
}

for my $method (@methods)
{
	my $node = PgStrata::Node::compressed_node("aio_$method",
		conf => qq(
io_method = $method
wal_log_hints = on
autovacuum = off
shared_buffers = 16MB
),
		extensions =>
		  [qw(amcheck pgstrata pg_buffercache pg_freespacemap pg_prewarm)]);
	$node->safe_psql('postgres', q(
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts, qty numeric,
				placed date, note text) TABLESPACE cts;
CREATE TABLE ledger (LIKE t);
));
	fill($node, 1, 30000);
	$node->safe_psql('postgres', 'CHECKPOINT');
	my $path = PgStrata::PcsFile::relation_path($node, 'postgres', 't');
	my $pages = $node->safe_psql('postgres',
		"SELECT pg_relation_size('t') / 8192");

	# 1. without a dictionary, then with one on every page
	evict($node);
	is(same($node), 't', "$method: rows read back without a dictionary are the ledger's");
	$node->safe_psql('postgres',
		"SELECT count(*) FROM pgstrata_train_dictionary('t', true); CHECKPOINT;");
	is($node->safe_psql('postgres', q(
SELECT dictionary_pages > stored_pages / 2 FROM pgstrata_relation_compression('t')
WHERE fork = 'main')), 't', "$method: most images of t use a dictionary now");

	# the I/O workers start with nothing open
	$node->restart;
	evict($node);
	if ($method eq 'worker')
	{
		is(worker_has_open($node, $path), 0,
			'worker: no I/O worker has the segment open after a restart');
		# only pages past the first half, whose images use the dictionary
		$node->safe_psql('postgres',
			"SELECT pg_prewarm('t', 'buffer', 'main', $pages / 2, $pages - 1)");
		is(worker_has_open($node, $path), 1,
			'worker: an I/O worker read pages of t that need a dictionary');
	}
	is(same($node), 't', "$method: rows read back with a dictionary are the ledger's");

	# 2. reads after updates that move pages, checkpoints and evictions
	for my $round (1 .. 8)
	{
		$node->safe_psql('postgres', qq(
UPDATE t SET note = note || ' again', qty = qty + 1 WHERE id % 97 = $round;
UPDATE ledger SET note = note || ' again', qty = qty + 1 WHERE id % 97 = $round;
));
		$node->safe_psql('postgres', 'CHECKPOINT') if $round % 2 == 0;
		evict($node);
		is(same($node), 't', "$method: round $round, rows are the ledger's after pages moved");
	}
	is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('t')"),
		'0', "$method: verify_heapam finds nothing");
	$node->safe_psql('postgres', "SELECT bt_index_check('t_pkey', true)");
	pass("$method: bt_index_check with heapallindexed is clean");

	# 3. incompressible rows, whose pages are stored raw: a run of raw
	# images is read by one I/O straight into its buffers (with data
	# checksums, initdb's default, which verify them), in an I/O worker too
	is($node->safe_psql('postgres', 'SHOW data_checksums'), 'on',
		"$method: data checksums are on");
	$node->safe_psql('postgres', q(
CREATE TABLE r (id int, b bytea) TABLESPACE cts;
INSERT INTO r SELECT g, (SELECT string_agg(decode(md5(g || ':' || k), 'hex'), ''::bytea)
	FROM generate_series(1, 60) k) FROM generate_series(1, 3000) g;
CREATE TABLE r_ledger AS SELECT * FROM r;
CHECKPOINT;
));
	is($node->safe_psql('postgres', q(
SELECT raw_pages >= stored_pages * 0.95 AND stored_pages > 100
FROM pgstrata_relation_compression('r') WHERE fork = 'main')),
		't', "$method: the pages of r are stored raw");
	my $rpath = PgStrata::PcsFile::relation_path($node, 'postgres', 'r');
	$node->restart;
	is(worker_has_open($node, $rpath), 0,
		"$method: no I/O worker has r's segment open after a restart")
	  if $method eq 'worker';
	is($node->safe_psql('postgres', q(
SELECT (SELECT md5(string_agg(r::text, '|' ORDER BY id)) FROM r) =
	   (SELECT md5(string_agg(l::text, '|' ORDER BY id)) FROM r_ledger l))),
		't', "$method: raw rows read back are the ledger's");
	is(worker_has_open($node, $rpath), 1,
		'worker: an I/O worker read the raw pages (not the synchronous fallback)')
	  if $method eq 'worker';
	# a damaged raw page fails the page checksum, as a page of md.c does
	$node->stop;
	PgStrata::PcsFile::flip_image($rpath, 3);
	$node->start;
	my ($rret, $rout, $rerr) = $node->psql('postgres', 'SELECT count(*) FROM r',
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($rerr, qr/ERROR:  XX001: invalid page in block 3 of relation \S+/,
		"$method: a damaged raw page is XX001 naming its block");
	is($node->safe_psql('postgres', 'SELECT 1'), '1',
		"$method: the server is up after it");

	# a raw image whose bytes are zeros (a run lost, or punched) is no new
	# page, though an all-zero page passes the page checksum: a read of
	# its block only is XX001 naming it, never an empty block
	my $zq = "SELECT count(*) FROM r WHERE ctid >= '(7,0)' AND ctid < '(8,0)'";
	ok($node->safe_psql('postgres', $zq) > 0, "$method: block 7 of r holds rows");
	$node->stop;
	my $ze = PgStrata::PcsFile::entry($rpath, 7);
	is($ze->{stored}, 8192, "$method: block 7 of r is stored raw");
	PgStrata::PcsFile::write_bytes($rpath,
		PgStrata::PcsFile::image_offset($ze, $rpath),
		"\0" x 8192);
	$node->start;
	($rret, $rout, $rerr) = $node->psql('postgres', $zq,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($rerr,
		qr/ERROR:  XX001: invalid compressed page in block 7 of relation \S+\nDETAIL:  The checksum of the block's image does not match/,
		"$method: a raw image of zeros is XX001 naming its block, not an empty page");

	# 4. damaged images, read asynchronously
	$node->safe_psql('postgres', 'VACUUM t; CHECKPOINT');
	my $fsm = "${path}_fsm";
	ok(-s $fsm && PgStrata::PcsFile::is_compressed($fsm),
		"$method: t has a compressed FSM");
	$node->stop;
	PgStrata::PcsFile::flip_image($path, 5);
	PgStrata::PcsFile::flip_image($fsm, 0);
	$node->start;
	my ($ret, $out, $err) = $node->psql('postgres',
		"SELECT sum(length(note)) FROM t", extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err, qr/ERROR:  XX001: invalid compressed page in block 5 of relation (pg_tblspc|base)\S+/,
		"$method: a damaged image is XX001 naming relation and block");
	is($node->safe_psql('postgres', 'SELECT 1'), '1',
		"$method: the server is up after it");
	($ret, $out, $err) = $node->psql('postgres',
		"SELECT count(*) > 0 FROM pg_freespace('t'); INSERT INTO t VALUES (0, 0, NULL, 'x');");
	is($ret, 0, "$method: a damaged FSM image does not stop reads of the FSM nor inserts");
	like($err, qr/WARNING:  invalid page in block 0 of relation "?\S+_fsm"?; zeroing out page/,
		"$method: ... it is zeroed with the buffer manager's WARNING");
	like(slurp_file($node->logfile),
		qr/invalid compressed page in block 0 of relation \S+_fsm\n.*DETAIL:  The checksum of the block's image does not match/,
		"$method: ... and the server's log says what was wrong with the image");

	# a file shorter than its map says (the end of the image that ends
	# last cut off): the blocks before come in, and the one cut is XX001
	# naming it (its entry now points past the file's allocated data, so
	# it is found before any read is planned)
	$node->stop;
	my ($last, $end) = (-1, 0);
	my $ph = PgStrata::PcsFile::header($path);
	for my $be (PgStrata::PcsFile::entries($ph))
	{
		my ($b, $e) = @$be;
		next if $e->{stored} == 0;
		my $stop = PgStrata::PcsFile::image_offset($e, $ph) + $e->{stored};
		($last, $end) = ($b, $stop) if $stop > $end;
	}
	truncate($path, $end - 10) or die "truncate $path: $!";
	$node->start;
	($ret, $out, $err) = $node->psql('postgres',
		"SET enable_seqscan = off; SELECT sum(length(note)) FROM t WHERE ctid >= '($last,0)'",
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	like($err,
		qr/ERROR:  XX001: invalid compressed page in block $last of relation \S+\nDETAIL:  The block's (image is cut short|map entry points past the allocated data)/,
		"$method: an image cut short by the end of the file is XX001 naming block $last");
	$node->stop;
}

done_testing();
