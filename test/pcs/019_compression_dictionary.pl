
# Copyright (c) 2026, pgstrata developers

# Compression dictionaries trained on a relation's own pages (README.pcs,
# "Dictionaries"):
#
# 1. pgstrata_train_dictionary() installs one per segment; with recompress
#    every page is written again with it, and the images shrink (on rows of
#    varying length that nobody shaped for the codec); the statistics say
#    how many images use one.
# 2. The rows stay those of a plain ledger, amcheck is clean, no image
#    shares a unit with a dictionary: after a checkpoint, after a restart
#    (whose new generation finds free units from the map and must count the
#    dictionary's as used) with relocating updates, after a crash.
# 3. An installation interrupted by an error leaves the segment usable and
#    the next one takes the next number.
# 4. pg_checksums reads images compressed with a dictionary.
# 5. A damaged dictionary, or its record, is an ERROR with
#    ERRCODE_DATA_CORRUPTED naming the relation and block, never a crash.
# 6. A rewrite (VACUUM FULL) trains a dictionary for its new file by
#    itself, from its first 1,024 pages.
# 7. Bad calls: a relation outside compressed tablespaces, an lz4
#    tablespace, a relation too small, a role that does not own it,
#    recovery.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;
use IPC::Run;

my $node = PgStrata::Node::compressed_node('dictionary',
	init => { extra => ['--data-checksums'], allows_streaming => 1 },
	conf => q(
wal_log_hints = on
autovacuum = off
shared_buffers = 16MB
restart_after_crash = on
),
	extensions => [qw(amcheck pgstrata injection_points)]);
$node->safe_psql('postgres', q(
CREATE TABLESPACE lts LOCATION '' WITH (compression = 'lz4');
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts, qty numeric, placed date, status char(1),
				note text) TABLESPACE cts;
CREATE TABLE ledger (LIKE t);
));

# Rows of varying length, as decision-support tables have them: numbers,
# dates, a status letter and a comment of 10 to 80 words from a small
# vocabulary.
sub fill
{
	my ($from, $to) = @_;
	$node->safe_psql('postgres', qq(
INSERT INTO t SELECT g, (g * 7919 % 100000) / 100.0,
	date '1992-01-01' + (g * 31 % 2500), substr('FOPR', 1 + g % 4, 1),
	(SELECT string_agg((ARRAY['carefully','final','deposits','detect',
		'slyly','furiously','regular','accounts','ironic','packages',
		'quickly','pending','requests','express','theodolites','boost'])
		[1 + (g * k * 13) % 16], ' ')
	 FROM generate_series(1, 10 + g % 70) k)
	FROM generate_series($from, $to) g;
INSERT INTO ledger SELECT * FROM t WHERE id BETWEEN $from AND $to;
));
}

# same(): do t and the plain ledger hold the same rows?
sub same
{
	return $node->safe_psql('postgres', q(
SELECT (SELECT md5(string_agg(t::text, '|' ORDER BY id)) FROM t) =
	   (SELECT md5(string_agg(l::text, '|' ORDER BY id)) FROM ledger l)));
}

# checks(WHEN): the rows, amcheck, and no unit shared by two users
sub checks
{
	my ($when) = @_;
	is(same(), 't', "$when: the rows are the ledger's");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM verify_heapam('t')"), '0',
		"$when: verify_heapam finds nothing");
	$node->safe_psql('postgres', "SELECT bt_index_check('t_pkey', true)");
	for my $rel ('t', 't_pkey')
	{
		is(PgStrata::PcsFile::overlaps(
				PgStrata::PcsFile::relation_path($node, 'postgres', $rel)), '',
			"$when: no image of $rel shares a unit with another or with a dictionary");
	}
}

# stats(REL): the main fork's row of pgstrata_relation_compression
sub stats
{
	my ($rel) = @_;
	my @v = split /\|/, $node->safe_psql('postgres', qq(
SELECT stored_pages, raw_pages, stored_bytes, dictionary_pages, dictionaries,
	   dictionary_bytes
FROM pgstrata_relation_compression('$rel') WHERE fork = 'main'));
	my %s;
	@s{qw(stored raw bytes dict_pages dicts dict_bytes)} = @v;
	return \%s;
}

fill(1, 30000);
$node->safe_psql('postgres', 'CHECKPOINT');
my $before = stats('t');

# the estimate, made on the plain ledger before anything moves, against
# what the compressed twin then takes (stored bytes in whole units)
my ($est, $est_dict, $est_dict_bytes) = split /\|/, $node->safe_psql('postgres',
	"SELECT ratio, ratio_with_dictionary, dictionary_bytes FROM pgstrata_estimate_compression('ledger')");
my $actual = $before->{stored} * 8192 / $before->{bytes};
cmp_ok(abs($est / $actual - 1), '<', 0.15,
	"the estimate on the plain table is within 15% of the compressed twin ($est vs $actual)");
cmp_ok($est_dict, '>', $est * 1.1,
	"the estimate says a dictionary would help ($est_dict vs $est)");
cmp_ok($est_dict_bytes, '>=', 256, '... and how large it would be');
my $ibefore = stats('t_pkey');
cmp_ok($before->{stored}, '>', 500, 'the table has enough pages to train on');
is($before->{dicts} . '/' . $before->{dict_pages}, '0/0',
	'no dictionary before training');

# 1. train with recompress, then write the pages out
my $row = $node->safe_psql('postgres',
	"SELECT segment, dictionary, dictionary_bytes BETWEEN 256 AND 65536, sampled_pages > 0, rewritten_pages > 0 FROM pgstrata_train_dictionary('t', true)");
is($row, '0|1|t|t|t', 'segment 0 of t gets dictionary 1 and its pages are rewritten');
my ($ret, $out, $err) = $node->psql('postgres',
	"SELECT count(*) FROM pgstrata_train_dictionary('t_pkey', true)");
is($out, '0', 'the small primary key gets no dictionary');
like($err, qr/not enough over the segment's \d+ pages to pay for itself/,
	'... since it would not pay for itself, as the notice says');
$row = $node->safe_psql('postgres', q(
SELECT sample_ratio_after > sample_ratio_before FROM pgstrata_train_dictionary('t')));
is($row, 't', 'a second training reports its sample ratios');
$node->safe_psql('postgres', 'CHECKPOINT');
my $after = stats('t');
my $iafter = stats('t_pkey');
is($after->{dicts}, 2, 'the statistics count the dictionaries');
cmp_ok($after->{dict_bytes}, '>=', 256, 'and its bytes');
cmp_ok($after->{dict_pages}, '>=', 0.9 * ($after->{stored} - $after->{raw}),
	'nearly every compressed image of t uses the dictionary');
my $actual_dict = $after->{stored} * 8192 / ($after->{bytes} + $after->{dict_bytes});
cmp_ok(abs($est_dict / $actual_dict - 1), '<', 0.15,
	"the estimate with a dictionary is within 15% of what training gave ($est_dict vs $actual_dict)");
cmp_ok($after->{bytes} + $after->{dict_bytes}, '<', 0.9 * $before->{bytes},
	"t's images and dictionary take less than 90% of the images before ("
	  . ($after->{bytes} + $after->{dict_bytes}) . " vs $before->{bytes})");
is($iafter->{dicts}, 0, 'the primary key has no dictionary');
checks('after training');

# 2. a restart: the new generation finds free units from the map, and must
# not hand out the dictionary's; relocating updates claim free units
$node->restart;
$node->safe_psql('postgres', q(
DELETE FROM t WHERE id % 3 = 0; DELETE FROM ledger WHERE id % 3 = 0;
VACUUM t; VACUUM ledger;
CHECKPOINT;
UPDATE t SET note = note || ' final ' || note WHERE id % 5 = 1;
UPDATE ledger SET note = note || ' final ' || note WHERE id % 5 = 1;
CHECKPOINT;
));
fill(30001, 36000);
$node->safe_psql('postgres', 'CHECKPOINT');
checks('after a restart and relocating updates');
$node->restart;
checks('after a second restart');

# and a crash right after a new dictionary: nothing is lost
$node->safe_psql('postgres', q(
UPDATE t SET qty = qty + 1 WHERE id % 7 = 0;
UPDATE ledger SET qty = qty + 1 WHERE id % 7 = 0;
));
$row = $node->safe_psql('postgres',
	"SELECT dictionary FROM pgstrata_train_dictionary('t', true)");
is($row, '3', 'a third training takes number 3');
$node->stop('immediate');
$node->start;
checks('after a crash following a second dictionary');

# 3. an installation that fails between its record and its fsync
$node->safe_psql('postgres',
	"SELECT injection_points_attach('pcs-dictionary-before-sync', 'error')");
($ret, $out, $err) = $node->psql('postgres',
	"SELECT * FROM pgstrata_train_dictionary('t')");
like($err, qr/pcs-dictionary-before-sync/, 'an installation can fail');
$node->safe_psql('postgres',
	"SELECT injection_points_detach('pcs-dictionary-before-sync')");
$node->safe_psql('postgres', q(
UPDATE t SET status = 'X' WHERE id % 11 = 0;
UPDATE ledger SET status = 'X' WHERE id % 11 = 0;
CHECKPOINT;
));
checks('after a failed installation');
$row = $node->safe_psql('postgres',
	"SELECT dictionary FROM pgstrata_train_dictionary('t', true)");
is($row, '4', 'the next installation takes the failed one\'s number, which no image names');
$node->safe_psql('postgres', 'CHECKPOINT');
checks('after the next installation');

# ... and one whose backend is killed before its fsync: after crash
# recovery (which fsyncs the data directory) the word names an installation
# of an earlier generation, void, and new images use the highest sound
# dictionary, which is the interrupted one's
$node->safe_psql('postgres',
	"SELECT injection_points_attach('pcs-dictionary-before-sync', 'wait')");
my ($bout, $berr) = ('', '');
my $bg = IPC::Run::start(
	[ 'psql', '-X', '-h', $node->host, '-p', $node->port, '-c',
	  "SELECT * FROM pgstrata_train_dictionary('t')", 'postgres' ],
	'>', \$bout, '2>', \$berr);
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'pcs-dictionary-before-sync'")
  or die 'no installation reached pcs-dictionary-before-sync';
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE wait_event = 'pcs-dictionary-before-sync'");
my $offset = -s $node->logfile;
kill 'KILL', $pid;
$bg->finish;
$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
$node->safe_psql('postgres', q(
UPDATE t SET status = 'Y' WHERE id % 13 = 0;
UPDATE ledger SET status = 'Y' WHERE id % 13 = 0;
CHECKPOINT;
));
my $tpath = PgStrata::PcsFile::relation_path($node, 'postgres', 't');
cmp_ok(scalar(grep { ($_->[1]{flags} >> 4) == 5 } PgStrata::PcsFile::entries($tpath)),
	'>', 0, 'after a crash in an installation, new images use its sound dictionary');
checks('after a crash in an installation');

# 4. pg_checksums reads the images compressed with dictionaries
my $pgdata = $node->data_dir;
$node->stop;
command_ok([ 'pg_checksums', '--check', '-D', $pgdata ],
	'pg_checksums verifies a cluster with compression dictionaries');
$node->start;

# 5. damage: the dictionary's bytes, then its record (a copy of the file is
# put back in between)
my $path = PgStrata::PcsFile::relation_path($node, 'postgres', 't');
my $h = PgStrata::PcsFile::header($path);
my $d = $h->{dictionaries}{4};
ok(defined $d, 'the header has the record of dictionary 4');
my $dict_at = PgStrata::PcsFile::unit_offset($h, $d->{first});
my %uses4 = map { $_->[0] => 1 } grep { ($_->[1]{flags} >> 4) == 4 }
	  PgStrata::PcsFile::entries($path);
ok(%uses4 > 0, 'some blocks use dictionary 4');
$node->stop;
my $saved = PgStrata::PcsFile::read_bytes($path);
PgStrata::PcsFile::flip($path, $dict_at + int($d->{bytes} / 2));
$node->start;
($ret, $out, $err) = $node->psql('postgres',
	"SELECT count(*) FROM t",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
ok($err =~ qr/XX001.*invalid compressed page in block (\d+) of relation/s && $uses4{$1},
	'a damaged dictionary is a data-corruption ERROR naming a block that uses it')
  or diag $err;
like($err, qr/compression dictionary the block's image names is damaged/,
	'... which says the dictionary is damaged');
is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server is still up');
$node->stop;
PgStrata::PcsFile::write_bytes($path, 0, $saved);
PgStrata::PcsFile::flip($path, $d->{offset} + 4);
$node->start;
($ret, $out, $err) = $node->psql('postgres', "SELECT count(*) FROM t",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/XX001.*invalid compressed page in block \d+ of relation/s,
	'a damaged dictionary record is a data-corruption ERROR');
like($err, qr/record of the compression dictionary/,
	'... which says the record is damaged');
$node->stop;
PgStrata::PcsFile::write_bytes($path, 0, $saved);
$node->start;
checks('with the file put back');

# 6. A rewrite trains the new file's dictionary by itself: VACUUM FULL
# writes the new file from its first block on, and after 1,024 pages a
# dictionary trained on them serves the rest
$node->safe_psql('postgres', 'VACUUM FULL t; CHECKPOINT');
my $vf = stats('t');
cmp_ok($vf->{stored}, '>', 1100, "the rewritten table has $vf->{stored} pages");
is($vf->{dicts}, 1, 'VACUUM FULL trained a dictionary for the new file');
cmp_ok($vf->{dict_pages}, '>=', 0.9 * ($vf->{stored} - $vf->{raw} - 1024),
	"the pages written after the first 1,024 use it ($vf->{dict_pages} of $vf->{stored})");
checks('after VACUUM FULL');

# 6b. What a session keeps of prepared dictionaries: a reader prepares
# only zstd's decoding side (a writer of new images also the compressing
# side of the current one), in a memory context of its own, and keeps at
# most pcs_dict_cache_limit bytes, giving up those of the segments it used
# least recently.  Four copies of t, each with a dictionary, frozen so
# that reading them writes nothing.
$node->safe_psql('postgres', q(CREATE EXTENSION test_pcs));
for my $n (2 .. 5)
{
	$node->safe_psql('postgres', qq(
CREATE TABLE t$n TABLESPACE cts AS SELECT * FROM t;
SELECT count(*) FROM pgstrata_train_dictionary('t$n', true);
VACUUM FREEZE t$n;
CHECKPOINT;
));
}
my $dict_memory = q(
SELECT coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts
WHERE name = 'pcs dictionaries');
# (no parallel workers: what the session itself prepares is measured)
my $serial = 'SET max_parallel_workers_per_gather = 0;';
my $one = $node->safe_psql('postgres', "$serial SELECT count(*) FROM t2; $dict_memory");
$one =~ s/.*\n//s;
# On 18, reads go through asynchronous I/O, whose completions decode with
# dictionaries placed once in shared memory (pcs_aio.c): a reader prepares
# none of its own.
if ($node->pg_version >= 18)
{
	is($one, '0', 'on 18 a reader prepares no dictionary of its own');
}
SKIP:
{
	skip 'on 18 readers prepare no dictionaries of their own (checked above)', 5
	  if $node->pg_version >= 18;
	cmp_ok($one, '>', 0,
		'a session that read a table with a dictionary shows it in pg_backend_memory_contexts');
	my $dict_bytes = $node->safe_psql('postgres',
		"SELECT dictionary_bytes / dictionaries FROM pgstrata_relation_compression('t2') WHERE fork = 'main'");
	cmp_ok($one, '<', $dict_bytes + 48 * 1024,
		"a reader prepares the decoding side only ($one bytes for a dictionary of $dict_bytes)");
	my $four = $node->safe_psql('postgres',
		"$serial SELECT sum(n) FROM (SELECT count(*) n FROM t2 UNION ALL SELECT count(*) FROM t3 UNION ALL SELECT count(*) FROM t4 UNION ALL SELECT count(*) FROM t5) c; $dict_memory");
	$four =~ s/.*\n//s;
	cmp_ok($four, '>', 2 * $one + 16 * 1024,
		"without a limit, reading four tables keeps more than two tables' dictionaries ($four bytes)");
	my $bounded = $node->safe_psql('postgres',
		"$serial SELECT test_pcs_dict_cache(" . int(1.5 * $one) . q{);
	SELECT sum(n) FROM (SELECT count(*) n FROM t2 UNION ALL SELECT count(*) FROM t3 UNION ALL SELECT count(*) FROM t4 UNION ALL SELECT count(*) FROM t5) c;
	SELECT count(*) FROM t2 JOIN t5 USING (id) WHERE t2.note IS DISTINCT FROM t5.note;
	} . $dict_memory);
	my @b = split /\n/, $bounded;
	cmp_ok($b[-1], '<=', 2 * $one + 16 * 1024,
		"with the limit at one and a half dictionaries, a session keeps at most two ($b[-1] bytes)");
	is($b[-2], '0', 'and reads every table right, preparing again what it gave up');
}
$node->safe_psql('postgres', 'DROP TABLE t2, t3, t4, t5');

# 7. bad calls
$node->safe_psql('postgres', q(
CREATE TABLE plain (id int);
CREATE TABLE small (id int) TABLESPACE cts;
INSERT INTO small VALUES (1);
CREATE TABLE l4 TABLESPACE lts AS SELECT * FROM ledger;
CREATE ROLE stranger;
GRANT SELECT ON t TO stranger;
));
($ret, $out, $err) = $node->psql('postgres',
	"SELECT * FROM pgstrata_train_dictionary('plain')");
like($err, qr/"plain" is not stored in a compressed tablespace/,
	'a plain table is refused');
($ret, $out, $err) = $node->psql('postgres',
	"SELECT * FROM pgstrata_train_dictionary('l4')");
like($err, qr/cannot hold compression dictionaries/, 'an lz4 table is refused');
($ret, $out, $err) = $node->psql('postgres',
	"SELECT count(*) FROM pgstrata_train_dictionary('small')");
is($out, '0', 'a one-page table gets no dictionary');
like($err, qr/too few pages for a compression dictionary/, '... and says why');
($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE stranger; SELECT * FROM pgstrata_train_dictionary('t')");
like($err, qr/must be owner of table t/, 'only the owner may train');
($ret, $out, $err) = $node->psql('postgres',
	"SET ROLE stranger; SELECT * FROM pgstrata_estimate_compression('t')");
like($err, qr/must be owner of table t/, '... or estimate');
($ret, $out, $err) = $node->psql('postgres',
	"SELECT * FROM pgstrata_estimate_compression('t', 'gzip')");
like($err, qr/invalid compression algorithm "gzip"/, 'an unknown algorithm is refused');
($ret, $out, $err) = $node->psql('postgres',
	"SELECT * FROM pgstrata_estimate_compression('t', 'zstd', 25)");
like($err, qr/zstd level 25 is outside the valid range/, 'a level out of range is refused');
is($node->safe_psql('postgres',
		"SELECT pages, sampled_pages, ratio IS NULL FROM pgstrata_estimate_compression('plain')"),
	'0|0|t', 'an empty table has no estimate');
cmp_ok($node->safe_psql('postgres',
		"SELECT ratio FROM pgstrata_estimate_compression('l4', 'lz4')"), '>', 1.5,
	'lz4 is estimated too');

my $standby_backup = 'dict_backup';
$node->backup($standby_backup);
my $standby = PostgreSQL::Test::Cluster->new('dictionary_standby');
$standby->init_from_backup($node, $standby_backup, has_streaming => 1);
$standby->start;
$node->wait_for_replay_catchup($standby);
is($standby->safe_psql('postgres', q(
SELECT md5(string_agg(t::text, '|' ORDER BY id)) FROM t)),
	$node->safe_psql('postgres', q(
SELECT md5(string_agg(t::text, '|' ORDER BY id)) FROM t)),
	'a standby made from a base backup reads the dictionaries it was copied with');
($ret, $out, $err) = $standby->psql('postgres',
	"SELECT * FROM pgstrata_train_dictionary('t')");
like($err, qr/cannot be trained during recovery/, 'a standby does not train');

$standby->stop;
$node->stop;
done_testing();
