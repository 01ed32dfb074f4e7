
# Copyright (c) 2026, pgstrata developers

# A fault-injection matrix for compressed storage (doc: faults.md of the
# design notes; README.pcs, "Crash points, one by one").  Each crash or
# failure used to get a test of its own, written when a bug was found; this
# one runs the faults of two classes through one loop, against every fork
# kind (main, free space map, visibility map, an unlogged relation's init
# fork) and against segment 0 and segment 1 of the main fork:
#
# (a) process crashes: a session stops at a named injection point of the
#     write, relocation, reuse, truncation, unlink, fork and segment
#     creation, map chunk, map page (format 5: between a new map page's
#     zeros and its directory slot), growth and sync paths (action
#     'wait') and the
#     server is killed there ($node->stop('immediate')), or the point fails
#     the operation (action 'error': an I/O error or a full disk there),
#     and for failed writes the server is then killed before the page is
#     written again, or after a checkpoint has written it again;
# (b) operating system crashes that lose unsynced writes, staged with the
#     server stopped: the segment file spliced from its copy at the last
#     checkpoint and its current bytes at 512-byte or 4 kB boundaries,
#     or with only its metadata (header, map; in format 5 the directory
#     and the map pages, which lie among the images) or only its images
#     written, or with a map page made since the checkpoint and its
#     directory slot reaching disk one without the other, its growth
#     dropped, a file created since the checkpoint left empty, or left at
#     its size with a header that never reached disk.
#
# After each fault the server starts, verify_heapam and bt_index_check
# (heapallindexed) are clean, no two blocks share a unit, and every table
# holds the rows of a plain ledger table in pg_default that the same
# transactions wrote; for faults that break data md would not survive
# either (a checkpointed image damaged), the read is an ERROR with
# SQLSTATE XX001 naming the relation and block, and the server stays up.
#
# A streaming standby replays the primary's WAL throughout, with its own
# compressed files (every server compresses its own): after each case it
# has caught up, its tables hold the rows of its copy of the ledger, and
# verify_heapam, bt_index_check and the unit check are clean there too.
# The faults hit the primary only; the standby meets what redo makes of
# them (new forks and segments made at their first replayed extension,
# pages relocated by the writes redo does).
#
# The build has no small segment size, so segment 1 is reached as in
# pcs/017: test_pcs_extend_to() makes segment 0 of the main fork full
# without writing it, and rows then go into segment 1.  A free space map,
# visibility map or init fork past its first segment needs a relation of
# terabytes; those forks are covered at segment 0.
#
# Each case lists what runs before the checkpoint that the OS crashes go
# back to, what runs after it, and the fault; the cases are chosen to take
# distinct code paths (in place, relocated, reused units, new forks, new
# segments), not every combination, so that the whole runs in a few
# minutes.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use PgStrata::PcsFile;
use PgStrata::Node;

my $RELSEG_SIZE = PgStrata::PcsFile::RELSEG_SIZE;
my %FORKNUM = (main => 0, fsm => 1, vm => 2, init => 3);

my $node = PgStrata::Node::compressed_node('fault_matrix',
	# wal_level = replica: new relfilenodes are WAL-logged, as in production
	init => { allows_streaming => 1 },
	# fsync = on: freed units wait for an fsync before they are reused (an
	# OS crash is not survived otherwise), and the checkpointer reaches the
	# sync crash point
	# wal_keep_size: the standby, which has no slot, may lag behind a
	# primary killed after a large write (the map page cases write 20,000
	# rows); the primary's end-of-recovery checkpoint must not remove the
	# WAL it still needs ("requested WAL segment ... has already been
	# removed")
	conf => q(
fsync = on
wal_log_hints = on
autovacuum = off
checkpoint_timeout = 1h
max_wal_size = 1GB
wal_keep_size = 512MB
bgwriter_lru_maxpages = 0
shared_buffers = 32MB
),
	extensions => [qw(injection_points amcheck pg_buffercache test_pcs)]);

# The ledger holds, for each table, the rows the table must have; the
# functions change a table and the ledger in the caller's transaction.
$node->safe_psql(
	'postgres', q(
CREATE TABLE ledger (tab text, id int, v text, PRIMARY KEY (tab, id));
CREATE FUNCTION add_rows(tab regclass, lo int, hi int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('INSERT INTO %s SELECT g, md5(g::text) FROM generate_series($1, $2) g', tab)
	USING lo, hi;
	INSERT INTO ledger SELECT tab::text, g, md5(g::text) FROM generate_series(lo, hi) g;
END $$;
-- rows made longer by bytes that do not compress: their pages outgrow
-- their units and move
CREATE FUNCTION grow_rows(tab regclass, lo int, hi int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('UPDATE %s SET v = v || md5(random()::text) WHERE id BETWEEN $1 AND $2', tab)
	USING lo, hi;
	EXECUTE format('UPDATE ledger l SET v = x.v FROM %s x
		WHERE l.tab = %L AND l.id = x.id AND x.id BETWEEN $1 AND $2', tab, tab::text)
	USING lo, hi;
END $$;
CREATE FUNCTION del_rows(tab regclass, lo int, hi int) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('DELETE FROM %s WHERE id BETWEEN $1 AND $2', tab) USING lo, hi;
	DELETE FROM ledger WHERE ledger.tab = del_rows.tab::text AND id BETWEEN lo AND hi;
END $$;
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text)
	WITH (fillfactor = 50) TABLESPACE cts;
CREATE INDEX t_v ON t (v) TABLESPACE cts;
SELECT add_rows('t', 1, 5000);
VACUUM t;
CREATE UNLOGGED TABLE u (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text)
	TABLESPACE cts;
INSERT INTO u SELECT g, md5(g::text) FROM generate_series(1, 100) g;
));

# Tables whose rows the checks compare with the ledger, and those of them
# whose rows lie in segment 1 (block 0, the last block of segment 0 and
# what follows: read by TID ranges, not by scanning a gigabyte of zeros)
my @tables = ('t');
my %seg1;

# make_seg1(TABLE): a compressed table whose segment 0 is full: a row in
# block 0, one filling its last block; the next rows go into segment 1
sub make_seg1
{
	my ($tab, $skip) = @_;
	my $last = $RELSEG_SIZE - 1 + ($skip // 0);
	$node->safe_psql(
		'postgres', qq(
CREATE TABLE $tab (id int, v text) TABLESPACE cts;
ALTER TABLE $tab ALTER v SET STORAGE plain;
SELECT add_rows('$tab', 0, 0);
SELECT test_pcs_extend_to('$tab', $last);
));
	# a session of its own: the one above would try block 0 first
	$node->safe_psql(
		'postgres', qq(
SET polar_bulk_extend_size = 0;
BEGIN;
INSERT INTO $tab VALUES (-1, repeat('x', 8120));
INSERT INTO ledger VALUES ('$tab', -1, repeat('x', 8120));
COMMIT;
));
	is( $node->safe_psql('postgres', "SELECT ctid FROM $tab WHERE id = -1"),
		"($last,1)",
		"$tab: block $last is full, the next rows go to the block after");
	push @tables, $tab;
	$seg1{$tab} = 1;
}
make_seg1('s');
$node->safe_psql('postgres',
	"SET polar_bulk_extend_size = 0; SELECT add_rows('s', 1, 400)");
$node->safe_psql('postgres', 'CHECKPOINT');

# The standby, from a base backup of the primary as it is now
$node->backup('matrix_backup');
my $standby = PostgreSQL::Test::Cluster->new('fault_matrix_standby');
$standby->init_from_backup($node, 'matrix_backup', has_streaming => 1);
$standby->append_conf('postgresql.conf', q(
max_standby_streaming_delay = -1
));
$standby->start;

# rel_path(REL, FORK [, SEGNO]): the path of a segment of a fork, '' if
# the relation does not exist
sub rel_path
{
	my ($rel, $fork, $segno) = @_;
	my $p = $node->safe_psql('postgres',
		"SELECT pg_relation_filepath(to_regclass('$rel'))");
	return '' if $p eq '';
	$p = $node->data_dir . "/$p";
	$p .= "_$fork" if $fork ne 'main';
	$p .= ".$segno" if $segno;
	return $p;
}

# evict(REL, FORK): write the dirty buffers of a fork through the storage
# manager, in this session
sub evict_sql
{
	my ($rel, $fork) = @_;
	return qq(SELECT count(pg_buffercache_evict(bufferid)) FROM pg_buffercache
	WHERE relfilenode = pg_relation_filenode('$rel') AND relforknumber = $FORKNUM{$fork}
	AND isdirty AND reldatabase = (SELECT oid FROM pg_database WHERE datname = 'postgres'));
}

sub evict
{
	$node->safe_psql('postgres', evict_sql(@_));
}

# rows_sql(TABLE): a digest of a table's rows
sub rows_sql
{
	my ($tab) = @_;
	my $from =
	  $seg1{$tab}
	  ? "(SELECT * FROM $tab WHERE ctid < '(1,0)' UNION ALL "
	  . "SELECT * FROM $tab WHERE ctid >= '("
	  . ($RELSEG_SIZE - 1)
	  . ",0)') x"
	  : $tab;
	return "SET enable_seqscan = off; SELECT count(*), "
	  . "md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM $from";
}

# heapcheck_sql(TABLE): verify_heapam of the table's blocks that hold rows
sub heapcheck_sql
{
	my ($tab) = @_;
	return "SELECT count(*) FROM verify_heapam('$tab')" unless $seg1{$tab};
	return
	  "SELECT (SELECT count(*) FROM verify_heapam('$tab', endblock => 0)) + "
	  . "(SELECT count(*) FROM verify_heapam('$tab', startblock => "
	  . ($RELSEG_SIZE - 1) . '))';
}

# check_standby(LABEL): the standby has replayed everything, and holds
# what the primary holds (unlogged tables are not readable there; a
# damaged table is the primary's alone)
sub check_standby
{
	my ($label) = @_;
	$node->wait_for_replay_catchup($standby);
	my @bad;
	my @live;
	for my $tab (@tables)
	{
		next
		  if $standby->safe_psql('postgres', "SELECT to_regclass('$tab') IS NULL")
		  eq 't';
		push @live, $tab;
		my $rows = $standby->safe_psql('postgres', rows_sql($tab));
		my $ledger = $standby->safe_psql('postgres',
			"SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) "
			  . "FROM ledger WHERE tab = '$tab'");
		push @bad, "$tab: rows $rows, ledger $ledger" if $rows ne $ledger;
	}
	is("@bad", '', "$label: standby: every table holds the rows of its ledger");
	is( join(',',
			map { $standby->safe_psql('postgres', heapcheck_sql($_)) } @live),
		join(',', map { '0' } @live),
		"$label: standby: verify_heapam is clean");
	is( $standby->safe_psql(
			'postgres',
			"SELECT bt_index_check('t_pkey', true), bt_index_check('t_v', true)"),
		'|',
		"$label: standby: bt_index_check with heapallindexed is clean");
	my @overlaps;
	for my $tab (@live)
	{
		my $p = $standby->data_dir . '/'
		  . $standby->safe_psql('postgres',
			"SELECT pg_relation_filepath('$tab')")
		  . ($seg1{$tab} ? '.1' : '');
		next unless -e $p && PgStrata::PcsFile::is_compressed($p);
		my $o = PgStrata::PcsFile::overlaps($p);
		push @overlaps, "$tab: $o" if $o ne '';
	}
	is("@overlaps", '', "$label: standby: no two blocks share a unit");
}

# check(LABEL): the invariants every case must leave
sub check
{
	my ($label) = @_;
	my @bad;
	for my $tab (@tables)
	{
		# a table dropped since: its ledger must be empty too
		my $rows =
		  $node->safe_psql('postgres', "SELECT to_regclass('$tab') IS NULL")
		  eq 't'
		  ? '0|'
		  : $node->safe_psql('postgres', rows_sql($tab));
		my $ledger = $node->safe_psql('postgres',
			"SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) "
			  . "FROM ledger WHERE tab = '$tab'");
		push @bad, "$tab: rows $rows, ledger $ledger" if $rows ne $ledger;
	}
	is("@bad", '', "$label: every table holds the rows of its ledger");
	my @live = grep {
		$node->safe_psql('postgres', "SELECT to_regclass('$_') IS NOT NULL")
		  eq 't'
	} @tables, 'u';
	is( join(',',
			map { $node->safe_psql('postgres', heapcheck_sql($_)) } @live),
		join(',', map { '0' } @live),
		"$label: verify_heapam is clean");
	is( $node->safe_psql(
			'postgres',
			"SELECT bt_index_check('t_pkey', true), bt_index_check('t_v', true), "
			  . "bt_index_check('u_pkey', true)"),
		'||',
		"$label: bt_index_check with heapallindexed is clean");
	my @overlaps;
	for my $tab (@tables)
	{
		my $p = rel_path($tab, 'main', $seg1{$tab} ? 1 : 0);
		next unless -e $p && PgStrata::PcsFile::is_compressed($p);
		my $o = PgStrata::PcsFile::overlaps($p);
		push @overlaps, "$tab: $o" if $o ne '';
	}
	is("@overlaps", '', "$label: no two blocks share a unit");
}

# is_pcs(LABEL, REL, FORK [, SEGNO]): the fork is stored compressed
sub is_pcs
{
	my ($label, $rel, $fork, $segno) = @_;
	my $p = rel_path($rel, $fork, $segno);
	ok( -e $p && PgStrata::PcsFile::is_compressed($p),
		"$label: the $fork fork of $rel is compressed");
}

# map_page_made(LABEL, REL, SEGNO, PAGE): once a checkpoint has written
# every block again, map page PAGE of a segment of the main fork (format
# 5) is named by a sound directory slot, and lies where no image does
sub map_page_made
{
	my ($label, $rel, $segno, $page) = @_;
	$node->safe_psql('postgres', 'CHECKPOINT');
	my $p = rel_path($rel, 'main', $segno);
	my $pages = eval { PgStrata::PcsFile::map_pages($p) };
	ok( defined $pages && defined $pages->{$page},
		"$label: map page $page of $rel (segment $segno) exists, its slot sound"
	) or diag($@);
	is(PgStrata::PcsFile::overlaps($p), '',
		"$label: its map pages share no unit with an image");
}

# splice_copies(OLD, NEW, SECTOR, PICK): what an OS crash can leave of a file
# whose bytes on disk were OLD and whose page cache held NEW: NEW's length,
# each SECTOR bytes from NEW if PICK->(OFFSET) is true, else from OLD
# (zeros past OLD's end: allocated, never written)
sub splice_copies
{
	my ($old, $new, $sector, $pick) = @_;
	my $out = '';
	for (my $off = 0; $off < length($new); $off += $sector)
	{
		my $src = $pick->($off) ? $new : $old;
		my $bytes = $off < length($src) ? substr($src, $off, $sector) : '';
		$bytes .= "\0" x ($sector - length($bytes));
		$out   .= $bytes;
	}
	return substr($out, 0, length($new));
}

# random_pick(SEED): a sector picker that takes each sector from either
# copy at random, the same way on every run
sub random_pick
{
	my ($seed) = @_;
	my $state = $seed;
	return sub {
		$state = ($state * 1103515245 + 12345) % 2147483648;
		return ($state >> 16) & 1;
	};
}

# interleave(OLD, NEW, SECTOR, SEED): splice_copies() with sectors picked at
# random, the same way on every run; the first seed from SEED on that
# changes the file.  A file of format 5 follows its data, so a small fork
# is a few pages (a visibility map of one block: its header and one 4 kB
# page of data area), which one pick may take all from NEW.
sub interleave
{
	my ($o, $n, $sector, $seed) = @_;
	my $torn;
	for my $s ($seed .. $seed + 63)
	{
		$torn = splice_copies($o, $n, $sector, random_pick($s));
		last if $torn ne $n;
	}
	return $torn;
}

# stage(SPLICE): a fault of class (b): replace the file by SPLICE->(OLD,
# NEW), OLD being its bytes at the checkpoint ('' if it did not exist);
# $segno is the file's segment number meanwhile
our $segno = 0;

sub stage
{
	my ($splice) = @_;
	return sub {
		my ($path, $old, $label) = @_;
		local $segno = PgStrata::PcsFile::segno($path);
		my $new = PgStrata::PcsFile::read_bytes($path);
		my $torn = $splice->($old // '', $new);
		ok( $torn ne $new,
			"$label: the crash changed the file ("
			  . length($old // '')
			  . ' bytes at the checkpoint, '
			  . length($new)
			  . ' at the crash, '
			  . length($torn)
			  . ' left)');
		PgStrata::PcsFile::write_bytes($path, undef, $torn);
	};
}

# meta_ranges(BYTES, WHAT): the byte ranges [start, end) of a segment
# (BYTES: its whole file; $segno its number, which the checks of its
# header's words cover) that hold metadata of kind WHAT: 'all' (the
# header block, the map of formats 2 to 4, which lies between it and the
# data area, and in format 5 the directory and the map pages, which lie in
# the data area among the images), or in format 5 'directory' or 'map
# pages' alone.  Ranges in units of the data area that the file does not
# reach yet count too: a page made at the end of the file lies there.
sub meta_ranges
{
	my ($bytes, $what) = @_;
	return () if length($bytes) < PgStrata::PcsFile::HEADER_SIZE;
	my $h = PgStrata::PcsFile::header(\$bytes, $segno);
	my @ranges;
	push @ranges, [ 0, PgStrata::PcsFile::data_offset($h) ] if $what eq 'all';
	for my $x (PgStrata::PcsFile::extents($h))
	{
		my $kind =
			$x->[2] =~ /^map page/ ? 'map pages'
		  : $x->[2] =~ /^directory/ ? 'directory'
		  : next;
		next unless $what eq 'all' || $what eq $kind;
		push @ranges,
		  [
			PgStrata::PcsFile::unit_offset($h, $x->[0]),
			PgStrata::PcsFile::unit_offset($h, $x->[1])
		  ];
	}
	return @ranges;
}

# touches(OFFSET, LENGTH, RANGES): do the bytes [OFFSET, OFFSET + LENGTH)
# share a byte with one of the ranges?
sub touches
{
	my ($off, $len, @ranges) = @_;
	return scalar grep { $off < $_->[1] && $_->[0] < $off + $len } @ranges;
}

# new_meta(OLD, NEW, WHAT): the ranges of metadata of kind WHAT that NEW
# has and OLD had not (a map page, or the directory, made since the
# checkpoint: neither ever moves)
sub new_meta
{
	my ($o, $n, $what) = @_;
	my %old = map { ("$_->[0]/$_->[1]" => 1) } meta_ranges($o, $what);
	return grep { !$old{"$_->[0]/$_->[1]"} } meta_ranges($n, $what);
}

# The faults of class (b) on a file.  The page cache writes back 4 kB
# pages: one holding a map page's bytes and an image's (a map page of
# format 5 takes 32 units wherever they were free) reaches disk whole or
# not at all.
my %os_fault = (
	'512-byte sectors interleaved' => stage(
		sub { my ($o, $n) = @_; interleave($o, $n, 512, 17) }),
	'4 kB pages interleaved' => stage(
		sub { my ($o, $n) = @_; interleave($o, $n, 4096, 23) }),
	'header and map written, data lost' => stage(
		sub {
			my ($o, $n) = @_;
			my @meta = meta_ranges($n, 'all');
			splice_copies($o, $n, 4096, sub { touches($_[0], 4096, @meta) });
		}),
	'data written, header and map lost' => stage(
		sub {
			my ($o, $n) = @_;
			my @meta = meta_ranges($n, 'all');
			splice_copies($o, $n, 4096, sub { !touches($_[0], 4096, @meta) });
		}),
	# Format 5 writes a new map page's zeros, then sets its directory slot
	# (a new directory's location in the header, likewise), with no fsync
	# between (README.pcs, "The map directory"): either can reach disk
	# without the other.  The entries stored into the page after it go
	# with it.
	'new map pages lost, their slots written' => stage(
		sub {
			my ($o, $n) = @_;
			my @lost = new_meta($o, $n, 'map pages');
			die 'no map page was made since the checkpoint' unless @lost;
			splice_copies($o, $n, 4096, sub { !touches($_[0], 4096, @lost) });
		}),
	'new map pages written, the directory lost' => stage(
		sub {
			my ($o, $n) = @_;
			die 'no map page was made since the checkpoint'
			  unless new_meta($o, $n, 'map pages');
			my @lost = meta_ranges($n, 'directory');
			die 'the segment has no directory' unless @lost;
			splice_copies($o, $n, 4096, sub { !touches($_[0], 4096, @lost) });
		}),
	'growth lost' => stage(
		sub {
			my ($o, $n) = @_;
			die 'the file did not grow' unless length($n) > length($o);
			return $o;
		}),
	'new file left empty' => stage(sub { '' }),
	'new file at its size, blank header' => stage(
		sub {
			my ($o, $n) = @_;
			die 'data was written into the new file'
			  if length($n) >
			  PgStrata::PcsFile::data_offset(PgStrata::PcsFile::header(\$n, $segno));
			return "\0" x 4096 . substr($n, 4096);
		}),);

# wait_at(HANDLE, POINT, UNTIL): wait until a process waits at the injection
# point and UNTIL (if given) holds, waking it up meanwhile; false if the
# session finished first or nothing came within 60 s
sub wait_at
{
	my ($h, $point, $until) = @_;
	my $deadline = time + 60;
	while (time < $deadline)
	{
		if ($node->safe_psql('postgres',
				"SELECT count(*) FROM pg_stat_activity WHERE wait_event = '$point'"
			) > 0)
		{
			return 1 if !$until || $until->();
			$node->psql('postgres',
				"SELECT injection_points_wakeup('$point')");
		}
		$h->pump_nb;
		return 0 unless $h->pumpable;
		usleep(20_000);
	}
	return 0;
}

# inject(CASE, LABEL): a fault of class (a).  TRIGGER runs in a session of
# its own with the point attached for that session only (for every process
# with global); 'wait': once a process waits there, the server is killed,
# 'error': the statement must fail.  True if the server was stopped.
sub inject
{
	my ($case, $label) = @_;
	my ($point, $action) = @$case{qw(point action)};
	my @sql;
	if ($case->{global})
	{
		$node->safe_psql('postgres',
			"SELECT injection_points_attach('$point', '$action')");
	}
	else
	{
		push @sql, 'SELECT injection_points_set_local()',
		  "SELECT injection_points_attach('$point', '$action')";
	}
	push @sql, "SELECT injection_points_load('$point')" if $case->{load};
	push @sql, $case->{trigger};
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[
			'psql', '-X', '-v', 'VERBOSITY=verbose', '-h', $node->host,
			'-p', $node->port, (map { ('-c', $_) } @sql), 'postgres'
		],
		'>',
		\$out,
		'2>',
		\$err);
	if ($action eq 'error')
	{
		$h->finish;
		like(
			$err,
			$case->{error} // qr/error triggered for injection point $point/,
			"$label: the statement failed at $point");
		$node->safe_psql('postgres',
			"SELECT injection_points_detach('$point')")
		  if $case->{global};
		return 0;
	}
	ok( wait_at($h, $point, $case->{until}),
		"$label: a process stopped at $point") or diag("trigger: $err");
	$node->stop('immediate');
	eval { $h->finish; };
	return 1;
}

# new_init_files(): the init forks of the tablespace, for a trigger that
# creates one
my $cts_dir;

sub init_files
{
	$cts_dir //=
	  $node->data_dir . '/'
	  . $node->safe_psql('postgres',
		"SELECT regexp_replace(pg_relation_filepath('t'), '/[^/]*\$', '')");
	opendir my $dh, $cts_dir or die "opendir $cts_dir: $!";
	my @f = grep { /_init$/ } readdir $dh;
	closedir $dh;
	return scalar @f;
}

# crash_and_check(LABEL): after a failed write, the server killed before
# the page is written again, then the checks once more
sub crash_and_check
{
	my ($label) = @_;
	$node->stop('immediate');
	ok($node->start(fail_ok => 1),
		"$label: the server starts after a crash that followed the failure");
	check("$label, then a crash");
}

# checkpoint_crash_and_check(LABEL): after a failed write, a checkpoint,
# which writes the page again without the fault and after which redo no
# longer replays the change, then the crash and the checks.  A failure
# that lost the page's new state (reported as written, but not recorded)
# is mended by redo in crash_and_check(); here it shows.
sub checkpoint_crash_and_check
{
	my ($label) = @_;
	$node->safe_psql('postgres', 'CHECKPOINT');
	crash_and_check("$label, a checkpoint");
}

# The cases.  name: fork, segment and fault; before: SQL run before the
# checkpoint the OS crashes go back to; after: SQL committed after it;
# point, action, trigger (and global, load, until, error): a fault of class
# (a); file and fault: a fault of class (b) on the file file->() names;
# verify: further checks after the restart.
my @cases = (

	# (a) process crashes and failures
	{
		name => 'main seg 0: crash after an image written in place',
		after => 'UPDATE t SET v = v WHERE id <= 200',
		point => 'pcs-write-after-image',
		action => 'wait',
		trigger => evict_sql('t', 'main'),
	},
	{
		name => 'main seg 0: crash while a grown image is relocated',
		after => "SELECT grow_rows('t', 1, 300)",
		point => 'pcs-write-relocate',
		action => 'wait',
		trigger => evict_sql('t', 'main'),
	},
	{
		# the tail of t cut off by VACUUM frees runs of units; the
		# checkpoint's fsync makes them reusable; grown pages take them
		name =>
		  'main seg 0: crash while a grown image goes into reused units',
		before => "SELECT del_rows('t', 4501, 5000); VACUUM t",
		after => "SELECT grow_rows('t', 301, 600)",
		point => 'pcs-write-reuse',
		action => 'wait',
		trigger => evict_sql('t', 'main'),
	},
	{
		# an I/O error after the image went over the old one in place,
		# before the entry says so: the buffer stays dirty and is written
		# again; a crash before that leaves an image its entry does not
		# describe, which redo restores from the full-page image the
		# change logged
		name => 'main seg 0: an in-place write fails after its image',
		after => 'UPDATE t SET v = v WHERE id BETWEEN 201 AND 400',
		point => 'pcs-write-after-image',
		action => 'error',
		trigger => evict_sql('t', 'main'),
		verify => \&crash_and_check,
	},
	{
		# the grown image is in fresh units, the entry still points to
		# the old ones: both stay as they were on disk
		name => 'main seg 0: a relocating write fails',
		after => "SELECT grow_rows('t', 2601, 2900)",
		point => 'pcs-write-relocate',
		action => 'error',
		trigger => evict_sql('t', 'main'),
		verify => \&crash_and_check,
	},
	{
		# units claimed from the pool of freed ones, then the write
		# fails: they are lost to this life of the server (garbage, found
		# free again by the next one), never handed out twice
		name => 'main seg 0: a write into reused units fails',
		before => "SELECT del_rows('t', 4001, 4500); VACUUM t",
		after => "SELECT grow_rows('t', 2901, 3200)",
		point => 'pcs-write-reuse',
		action => 'error',
		trigger => evict_sql('t', 'main'),
		verify => \&crash_and_check,
	},
	{
		# the three failures again, with a checkpoint between the failure
		# and the crash (a table of their own, w)
		name => 'main seg 0: an in-place write fails, then a checkpoint',
		before =>
		  "CREATE TABLE w (id int, v text) TABLESPACE cts; SELECT add_rows('w', 1, 2000)",
		after => 'UPDATE w SET v = v WHERE id <= 300',
		point => 'pcs-write-after-image',
		action => 'error',
		trigger => evict_sql('w', 'main'),
		verify => \&checkpoint_crash_and_check,
	},
	{
		name => 'main seg 0: a relocating write fails, then a checkpoint',
		after => "SELECT grow_rows('w', 301, 600)",
		point => 'pcs-write-relocate',
		action => 'error',
		trigger => evict_sql('w', 'main'),
		verify => \&checkpoint_crash_and_check,
	},
	{
		name =>
		  'main seg 0: a write into reused units fails, then a checkpoint',
		before => "SELECT del_rows('w', 1501, 2000); VACUUM w",
		after => "SELECT grow_rows('w', 601, 900)",
		point => 'pcs-write-reuse',
		action => 'error',
		trigger => evict_sql('w', 'main'),
		verify => \&checkpoint_crash_and_check,
	},
	{
		name => 'main seg 0: growth of the file fails',
		after => "SELECT grow_rows('t', 1, 2000)",
		point => 'pcs-grow-before-allocate',
		action => 'error',
		trigger => evict_sql('t', 'main'),
	},
	{
		# a write-back that cannot give the map storage (ENOSPC there):
		# an ERROR, the page stays dirty and is written later
		name => 'main seg 1: the first map chunk of a new segment fails',
		before => sub { make_seg1('s4', 96) },
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s4', 1, 50)",
		point => 'pcs-map-chunk-allocate',
		action => 'error',
		trigger => evict_sql('s4', 'main'),
		verify => sub {
			my ($label) = @_;
			$node->safe_psql('postgres', 'CHECKPOINT');
			is_pcs($label, 's4', 'main', 1);
		},
	},
	{
		# the first extension of a new table, which writes its header,
		# fails: its transaction is rolled back, ledger rows included
		name => 'main seg 0: the header of a new fork cannot be written',
		before => "CREATE TABLE h1 (id int, v text) TABLESPACE cts",
		point => 'pcs-create-before-header',
		action => 'error',
		trigger => "SELECT add_rows('h1', 1, 300)",
		verify => sub {
			my ($label) = @_;
			ok(-s rel_path('h1', 'main') == 0,
				"$label: the fork is still an empty file");
			$node->safe_psql('postgres', "SELECT add_rows('h1', 301, 600)");
			is_pcs($label, 'h1', 'main');
		},
	},
	{
		# likewise for a free space map made by an INSERT
		name => 'fsm seg 0: the header of a new fork cannot be written',
		before =>
		  "CREATE TABLE h2 (id int, v text) TABLESPACE cts; SELECT add_rows('h2', 1, 50)",
		point => 'pcs-create-before-header',
		action => 'error',
		trigger => "SELECT add_rows('h2', 51, 1000)",
		verify => sub {
			my ($label) = @_;
			$node->safe_psql('postgres',
				"SELECT add_rows('h2', 1001, 2000); VACUUM h2");
			is_pcs($label, 'h2', 'fsm');
		},
	},
	{
		# pcs_truncate() runs in a critical section: the callback is
		# loaded beforehand (as in pcs/006)
		name => 'main seg 0: crash during truncation',
		before =>
		  "CREATE TABLE tt (id int, v text) TABLESPACE cts; SELECT add_rows('tt', 1, 3000)",
		after => "SELECT del_rows('tt', 1001, 3000)",
		point => 'pcs-truncate',
		action => 'wait',
		load => 1,
		trigger => 'VACUUM tt',
	},
	{
		name => 'main seg 0: crash before the files of a dropped table go',
		before =>
		  "CREATE TABLE d (id int, v text) TABLESPACE cts; SELECT add_rows('d', 1, 500)",
		point => 'pcs-unlink',
		action => 'wait',
		trigger =>
		  "BEGIN; DROP TABLE d; DELETE FROM ledger WHERE tab = 'd'; COMMIT",
		verify => sub {
			my ($label) = @_;
			is( $node->safe_psql(
					'postgres', "SELECT to_regclass('d') IS NULL"),
				't',
				"$label: the table stays dropped");
		},
	},
	{
		name => 'main seg 0: the checkpoint fsync fails',
		after => "SELECT grow_rows('t', 601, 700)",
		point => 'pcs-sync-segment',
		action => 'error',
		global => 1,
		trigger => 'CHECKPOINT',
		error => qr/checkpoint request failed/,
		verify => sub {
			my ($label) = @_;
			my ($ret) = $node->psql('postgres', 'CHECKPOINT');
			is($ret, 0, "$label: the next checkpoint succeeds");
		},
	},
	{
		name => 'main seg 0: crash of the checkpointer during its fsyncs',
		after =>
		  "SELECT grow_rows('t', 701, 800); SELECT add_rows('t', 5001, 5200)",
		point => 'pcs-sync-segment',
		action => 'wait',
		global => 1,
		trigger => 'CHECKPOINT',
	},
	{
		name => 'main seg 1: crash after an image write',
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s', 401, 600); "
		  . "SELECT grow_rows('s', 1, 100)",
		point => 'pcs-write-after-image',
		action => 'wait',
		trigger => evict_sql('s', 'main'),
	},
	{
		# the first entry stored into the map of segment 1 of a new table:
		# block 96's (the header holds the entries of blocks 0 to 95)
		name =>
		  'main seg 1: crash while a new segment gets its first map chunk',
		before => sub { make_seg1('s1', 96) },
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s1', 1, 50)",
		point => 'pcs-map-chunk-allocate',
		action => 'wait',
		trigger => evict_sql('s1', 'main'),
		verify => sub { is_pcs($_[0], 's1', 'main', 1) },
	},
	{
		# format 5: the write-back that stores block 96's entry makes map
		# page 0 (units from the data area's end, zeros written there)
		# and stops before the directory slot names it.  Nothing names
		# those units; redo writes the blocks again, and the next write
		# makes the page anew.
		name =>
		  'main seg 1: crash between a new map page and its directory slot',
		before => sub { make_seg1('s5', 96) },
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s5', 1, 50)",
		point => 'pcs-map-page-before-slot',
		action => 'wait',
		trigger => evict_sql('s5', 'main'),
		verify => sub { map_page_made($_[0], 's5', 1, 0) },
	},
	{
		# the same, failing there: the write is an ERROR, the page stays
		# dirty and is written again by the checkpoint, which makes the
		# map page again; the units of the first one are lost to this
		# life of the server (garbage), never named by two slots
		name => 'main seg 1: a new map page is made, its slot is not set',
		before => sub { make_seg1('s6', 96) },
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s6', 1, 50)",
		point => 'pcs-map-page-before-slot',
		action => 'error',
		trigger => evict_sql('s6', 'main'),
		verify => sub {
			my ($label) = @_;
			$node->safe_psql('postgres', 'CHECKPOINT');
			map_page_made($label, 's6', 1, 0);
			crash_and_check($label);
		},
	},
	{
		# the write that makes map page 0 goes on to write its image, and
		# the server is killed after the image, before the entry: the
		# page exists, named by its slot, and holds no entry yet
		name => 'main seg 1: crash after the image of a write that made a map page',
		before => sub { make_seg1('s7', 96) },
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s7', 1, 50)",
		point => 'pcs-write-after-image',
		action => 'wait',
		trigger => evict_sql('s7', 'main'),
		verify => sub { map_page_made($_[0], 's7', 1, 0) },
	},
	{
		# segment 0 of a table that grows past block 255 after the
		# checkpoint: map page 1, stopped before its slot
		name => 'main seg 0: crash between a new map page and its directory slot',
		before =>
		  "CREATE TABLE m1 (id int, v text) TABLESPACE cts; SELECT add_rows('m1', 1, 20000)",
		after => "SELECT add_rows('m1', 20001, 40000)",
		point => 'pcs-map-page-before-slot',
		action => 'wait',
		trigger => evict_sql('m1', 'main'),
		verify => sub { map_page_made($_[0], 'm1', 0, 1) },
	},
	{
		name => 'fsm seg 0: crash after an image write',
		after => "SELECT del_rows('t', 1, 1000); VACUUM t",
		point => 'pcs-write-after-image',
		action => 'wait',
		trigger => evict_sql('t', 'fsm'),
	},
	{
		name => 'vm seg 0: crash after an image write',
		after => "SELECT grow_rows('t', 1001, 1500); VACUUM t",
		point => 'pcs-write-after-image',
		action => 'wait',
		trigger => evict_sql('t', 'vm'),
	},
	{
		# an INSERT that creates the table's free space map, stopped
		# between the file and its header
		name =>
		  'fsm seg 0: crash while the fork is created, before its header',
		before =>
		  "CREATE TABLE f1 (id int, v text) TABLESPACE cts; SELECT add_rows('f1', 1, 50)",
		point => 'pcs-create-before-header',
		action => 'wait',
		trigger => "SELECT add_rows('f1', 51, 500)",
		verify => sub {
			my ($label) = @_;
			$node->safe_psql('postgres',
				"SELECT add_rows('f1', 501, 1000); VACUUM f1");
		},
	},
	{
		# VACUUM creating the visibility map, stopped between its header
		# and its size
		name => 'vm seg 0: crash while the fork is created, after its header',
		before =>
		  "CREATE TABLE v1 (id int, v text) TABLESPACE cts; SELECT add_rows('v1', 1, 1000)",
		point => 'pcs-create-after-header',
		action => 'wait',
		trigger => 'VACUUM v1',
		verify => sub {
			my ($label) = @_;
			$node->safe_psql('postgres', 'VACUUM v1');
		},
	},
	{
		# CREATE INDEX on an unlogged table writes the index's main fork,
		# then creates and writes its init fork: the stop that counts is
		# the second, once the init fork exists
		name => 'init seg 0: crash after the image of a new init fork',
		before => 'CREATE UNLOGGED TABLE u1 (id int, v text) TABLESPACE cts',
		point => 'pcs-write-after-image',
		action => 'wait',
		trigger => 'CREATE INDEX u1_id ON u1 (id) TABLESPACE cts',
		until => sub { init_files() > $_[0] },
	},
	{
		name => 'init seg 0: crash while a new init fork is synced',
		before => 'CREATE UNLOGGED TABLE u2 (id int, v text) TABLESPACE cts',
		point => 'pcs-rewrite-sync',
		action => 'wait',
		trigger => 'CREATE INDEX u2_id ON u2 (id) TABLESPACE cts',
		until => sub { init_files() > $_[0] },
	},

	# (b) operating system crashes
	{
		name =>
		  'main seg 0: 512-byte sectors of the checkpoint and the crash interleaved',
		after =>
		  "SELECT grow_rows('t', 1501, 1800); SELECT add_rows('t', 5201, 5400); "
		  . "UPDATE t SET v = v WHERE id BETWEEN 1801 AND 2000; "
		  . evict_sql('t', 'main'),
		file => sub { rel_path('t', 'main') },
		fault => '512-byte sectors interleaved',
	},
	{
		name => 'main seg 0: header and map written, data lost',
		after => "SELECT grow_rows('t', 2001, 2300); "
		  . evict_sql('t', 'main'),
		file => sub { rel_path('t', 'main') },
		fault => 'header and map written, data lost',
	},
	{
		name => 'main seg 0: data written, header and map lost',
		after => "SELECT grow_rows('t', 2301, 2600); "
		  . evict_sql('t', 'main'),
		file => sub { rel_path('t', 'main') },
		fault => 'data written, header and map lost',
	},
	{
		# as pcs/011: rows of 'a's, one or two units a page, written
		# once; rows of every other page changed and written out move
		# those pages past the file's end at the checkpoint; block 0 then
		# grows in shared buffers only, and redo gives it fresh units
		# while the map on disk still points past the end
		name => 'main seg 0: growth lost',
		before =>
		  q(CREATE TABLE g (id int PRIMARY KEY, v text) TABLESPACE cts;
BEGIN;
INSERT INTO g SELECT i, repeat('a', 100) FROM generate_series(1, 2000) i;
INSERT INTO ledger SELECT 'g', id, v FROM g;
COMMIT),
		after =>
		  q(WITH c AS (UPDATE g SET v = md5(id::text) || repeat('b', 60)
	WHERE id % 3 = 0 AND (ctid::text::point)[0]::int % 2 = 1 RETURNING id, v)
UPDATE ledger l SET v = c.v FROM c WHERE l.tab = 'g' AND l.id = c.id;
) . evict_sql('g', 'main') . q(;
WITH c AS (UPDATE g SET v = md5(id::text) || md5((id * 7)::text) || md5((id * 13)::text)
	WHERE ctid < '(1,0)' RETURNING id, v)
UPDATE ledger l SET v = c.v FROM c WHERE l.tab = 'g' AND l.id = c.id),
		file => sub { rel_path('g', 'main') },
		fault => 'growth lost',
	},
	{
		name => 'main seg 0: a new fork left empty',
		after =>
		  "CREATE TABLE n1 (id int, v text) TABLESPACE cts; SELECT add_rows('n1', 1, 300)",
		file => sub { rel_path('n1', 'main') },
		fault => 'new file left empty',
		verify => sub { is_pcs($_[0], 'n1', 'main') },
	},
	{
		name => 'main seg 0: a new fork at its size, blank header',
		after =>
		  "CREATE TABLE n2 (id int, v text) TABLESPACE cts; SELECT add_rows('n2', 1, 300)",
		file => sub { rel_path('n2', 'main') },
		fault => 'new file at its size, blank header',
		verify => sub { is_pcs($_[0], 'n2', 'main') },
	},
	{
		name =>
		  'main seg 1: 4 kB pages of the checkpoint and the crash interleaved',
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s', 601, 800); "
		  . "SELECT grow_rows('s', 101, 300); "
		  . evict_sql('s', 'main'),
		file => sub { rel_path('s', 'main', 1) },
		fault => '4 kB pages interleaved',
	},
	{
		name => 'main seg 1: a new segment left empty',
		before => sub { make_seg1('s2') },
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s2', 1, 100)",
		file => sub { rel_path('s2', 'main', 1) },
		fault => 'new file left empty',
		verify => sub { is_pcs($_[0], 's2', 'main', 1) },
	},
	{
		name => 'main seg 1: a new segment at its size, blank header',
		before => sub { make_seg1('s3') },
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s3', 1, 100)",
		file => sub { rel_path('s3', 'main', 1) },
		fault => 'new file at its size, blank header',
		verify => sub { is_pcs($_[0], 's3', 'main', 1) },
	},
	{
		# format 5: block 96 of segment 1 written after the checkpoint:
		# map page 0 (and the directory) made since; its slot reaches
		# disk, its zeros and entries do not
		name => 'main seg 1: a new map page lost, its slot written',
		before => sub { make_seg1('s8', 96) },
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s8', 1, 100); "
		  . evict_sql('s8', 'main'),
		file => sub { rel_path('s8', 'main', 1) },
		fault => 'new map pages lost, their slots written',
		verify => sub { map_page_made($_[0], 's8', 1, 0) },
	},
	{
		# the other way round: the page and its entries on disk, the
		# directory that names it not
		name => 'main seg 1: a new map page written, the directory lost',
		before => sub { make_seg1('s9', 96) },
		after =>
		  "SET polar_bulk_extend_size = 0; SELECT add_rows('s9', 1, 100); "
		  . evict_sql('s9', 'main'),
		file => sub { rel_path('s9', 'main', 1) },
		fault => 'new map pages written, the directory lost',
		verify => sub { map_page_made($_[0], 's9', 1, 0) },
	},
	{
		# segment 0, a directory older than the checkpoint: map page 1
		# made since, lost while its slot is written
		name => 'main seg 0: a new map page lost, its slot written',
		before =>
		  "CREATE TABLE m2 (id int, v text) TABLESPACE cts; SELECT add_rows('m2', 1, 20000)",
		after => "SELECT add_rows('m2', 20001, 40000); " . evict_sql('m2', 'main'),
		file => sub { rel_path('m2', 'main') },
		fault => 'new map pages lost, their slots written',
		verify => sub { map_page_made($_[0], 'm2', 0, 1) },
	},
	{
		name => 'fsm seg 0: 512-byte sectors interleaved',
		after => "SELECT del_rows('t', 3501, 3800); VACUUM t; "
		  . evict_sql('t', 'fsm'),
		file => sub { rel_path('t', 'fsm') },
		fault => '512-byte sectors interleaved',
	},
	{
		name => 'fsm seg 0: a new fork at its size, blank header',
		before =>
		  "CREATE TABLE f2 (id int, v text) TABLESPACE cts; SELECT add_rows('f2', 1, 50)",
		after => "SELECT add_rows('f2', 51, 1000)",
		file => sub { rel_path('f2', 'fsm') },
		fault => 'new file at its size, blank header',
		verify => sub {
			my ($label) = @_;
			$node->safe_psql('postgres',
				"SELECT add_rows('f2', 1001, 2000); VACUUM f2");
			is_pcs($label, 'f2', 'fsm');
		},
	},
	{
		name => 'vm seg 0: 4 kB pages interleaved',
		after => "SELECT grow_rows('t', 3801, 4000); VACUUM t; "
		  . evict_sql('t', 'vm'),
		file => sub { rel_path('t', 'vm') },
		fault => '4 kB pages interleaved',
	},
	{
		name => 'vm seg 0: a new fork left empty',
		before =>
		  "CREATE TABLE v2 (id int, v text) TABLESPACE cts; SELECT add_rows('v2', 1, 1000)",
		after => 'VACUUM v2',
		file => sub { rel_path('v2', 'vm') },
		fault => 'new file left empty',
		verify => sub {
			my ($label) = @_;
			$node->safe_psql('postgres',
				"SELECT add_rows('v2', 1001, 1100); VACUUM v2");
		},
	},
	{
		name => 'init seg 0: a new init fork left empty',
		after =>
		  'CREATE UNLOGGED TABLE u3 (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text) '
		  . 'TABLESPACE cts',
		file => sub { rel_path('u3_pkey', 'init') },
		fault => 'new file left empty',
		verify => sub {
			my ($label) = @_;
			$node->safe_psql('postgres',
				"INSERT INTO u3 SELECT g, md5(g::text) FROM generate_series(1, 500) g"
			);
			is( $node->safe_psql(
					'postgres', "SELECT bt_index_check('u3_pkey', true)"),
				'',
				"$label: the index reset from its init fork works");
		},
	},
	# No case for an init fork at its size with a blank header: in formats
	# 4 and 5 a heap's init fork is never extended, so it stays an empty file
	# with no header (the case above covers it), and an index's gets its
	# header fsynced before its metapage is written, at its creation.
	{
		# not a crash: a checkpointed image damaged, which md would not
		# survive either: an ERROR for that block, nothing else
		name => 'main seg 0: a checkpointed image damaged',
		before =>
		  "CREATE TABLE c (id int, v text) TABLESPACE cts; SELECT add_rows('c', 1, 1000)",
		file => sub { rel_path('c', 'main') },
		fault => sub { PgStrata::PcsFile::flip_image($_[0], 3) },
		damaged => 'c',
		verify => sub {
			my ($label) = @_;
			my ($ret, $out, $err) = $node->psql('postgres',
				"\\set VERBOSITY verbose\nSELECT count(*) FROM c");
			like(
				$err,
				qr/ERROR:  XX001: invalid compressed page in block 3 of relation pg_tblspc\/\d+\/[^\/]+\/\d+\/\d+/,
				"$label: the read is an ERROR with SQLSTATE XX001 naming relation and block"
			);
			is( $node->safe_psql(
					'postgres',
					"SET enable_seqscan = off; SELECT count(*) = max(id) FROM c WHERE ctid < '(3,0)'"
				),
				't',
				"$label: the blocks before it read");
			$node->safe_psql('postgres',
				"DROP TABLE c; DELETE FROM ledger WHERE tab = 'c'");
		},
	},);

my $start = time;
for my $case (@cases)
{
	my $label = $case->{name};
	my $t0 = time;
	if (ref $case->{before})
	{
		$case->{before}->();
	}
	elsif ($case->{before})
	{
		$node->safe_psql('postgres', $case->{before});
	}
	for my $tab (
		  $case->{before} && !ref $case->{before}
		? $case->{before} =~ /CREATE TABLE (\w+)/g
		: ())
	{
		push @tables, $tab;
	}
	# An OS crash is staged from the file as it was at this checkpoint,
	# which must then be its last fsync: hold the background writer's early
	# fsyncs (the first allocation of a generation and a megabyte of moved
	# pages ask for one) until the crash, or a moved page's units could be
	# reused after an fsync that the staged file pretends never happened.
	$node->safe_psql('postgres',
		"SELECT injection_points_attach('pcs-early-sync', 'wait')")
	  if !$case->{point};
	$node->safe_psql('postgres', 'CHECKPOINT');
	my $path = $case->{file} ? $case->{file}->() : undef;
	my $old =
	  defined $path && $path ne '' && -e $path
	  ? PgStrata::PcsFile::read_bytes($path)
	  : undef;
	my $inits = init_files();
	if ($case->{after})
	{
		$node->safe_psql('postgres', $case->{after});
		push @tables, $case->{after} =~ /CREATE TABLE (\w+)/g;
	}
	my $stopped;
	if ($case->{point})
	{
		my $until = $case->{until};
		local $case->{until} = $until ? sub { $until->($inits) } : undef;
		$stopped = inject($case, $label);
	}
	else
	{
		$path = $case->{file}->() if $path eq '';
		$node->stop('immediate');
		$stopped = 1;
		if (ref $case->{fault})
		{
			$case->{fault}->($path, $old, $label);
		}
		else
		{
			$os_fault{ $case->{fault} }->($path, $old, $label);
		}
	}
	if ($stopped)
	{
		ok($node->start(fail_ok => 1), "$label: the server starts");
	}
	if ($case->{damaged})
	{
		@tables = grep { $_ ne $case->{damaged} } @tables;
	}
	check($label);
	$case->{verify}->($label) if $case->{verify};
	check_standby($label);
	note sprintf('%s: %.1f s', $label, time - $t0);
}
note sprintf('the matrix ran in %.0f s', time - $start);

$standby->stop;
$node->stop;
done_testing();
