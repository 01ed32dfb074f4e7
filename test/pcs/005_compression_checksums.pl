
# Copyright (c) 2026, pgstrata developers

# pg_checksums on a cluster with compressed tablespaces:
#
# - --check verifies the page checksum of every page stored in a compressed
#   segment (decompressed through the map), skips the tablespace's marker
#   file, and exits non-zero on a flipped byte inside a compressed image
#   and on a page whose checksum is wrong inside a sound image;
# - --disable, writes without checksums, then --enable rewrites the
#   images whose checksum changed: --check then passes, and the server
#   (which verifies every page it reads) reads everything, amcheck clean;
# - --enable refuses a damaged image before touching pg_control, so the
#   cluster stays as it was.

use strict;
use warnings FATAL => 'all';

use File::Copy;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('checksums',
	init => { extra => ['--data-checksums'] },
	conf => q(
log_statement = none
),
	extensions => ['amcheck']);

# t: compressible rows and a B-tree; r: random bytes, stored raw;
# a database in the tablespace: catalogs, FSM and VM forks compressed.
$node->safe_psql('postgres', q(
CREATE TABLE t (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text)
	TABLESPACE cts;
INSERT INTO t SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 20000) g;
CREATE TABLE r (id int, b bytea STORAGE PLAIN) TABLESPACE cts;
-- 984 random bytes a row: eight rows fill a page, which cannot shrink
INSERT INTO r SELECT g, substr((SELECT string_agg(decode(md5(g::text || i::text), 'hex'), ''::bytea)
	FROM generate_series(1, 62) i), 1, 984) FROM generate_series(1, 300) g;
CREATE DATABASE cdb TABLESPACE cts;
VACUUM t;
-- b, b4: no free space map yet
CREATE TABLE b (id int) TABLESPACE cts;
INSERT INTO b VALUES (1);
CREATE TABLE b4 (id int) TABLESPACE cts;
INSERT INTO b4 VALUES (1);
));
$node->safe_psql('cdb', q(
CREATE TABLE c AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 5000) g;
VACUUM c;
));
$node->safe_psql('postgres', 'CHECKPOINT');
my $tpath = PgStrata::PcsFile::relation_path($node, 'postgres', 't');
my $rpath = PgStrata::PcsFile::relation_path($node, 'postgres', 'r');
my $bpath = PgStrata::PcsFile::relation_path($node, 'postgres', 'b');
my $b4path = PgStrata::PcsFile::relation_path($node, 'postgres', 'b4');
$node->stop;

# A free space map whose creation an OS crash cut short after the file was
# sized, before its header reached disk: all zeros, of the header's size
# (format 5) or, from builds of formats 2 to 4, of their data area's
# offset (pcs.c, pcs_segment0_is_blank()).  pg_checksums skips it as the
# server takes it for an empty fork; it used to stop at its half block.
for my $blank_fsm ([ $bpath, PgStrata::PcsFile::HEADER_SIZE ],
	[ $b4path, PgStrata::PcsFile::V4_DATA_OFFSET ])
{
	my ($path, $size) = @$blank_fsm;
	ok(!-e "${path}_fsm", "no free space map yet ($size bytes blank to come)");
	open(my $blank, '>', "${path}_fsm") or die "open: $!";
	truncate($blank, $size) or die "truncate: $!";
	close($blank);
}

# copies of a segment, kept outside the data directory
my $keep = PostgreSQL::Test::Utils::tempdir();

ok(PgStrata::PcsFile::is_compressed($tpath), 'the table is stored compressed');
ok(PgStrata::PcsFile::is_compressed($rpath), 'so is the table of random bytes');

# checksums(ARGS...): run pg_checksums on the node, return (exit, out, err)
sub checksums
{
	my @args = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'pg_checksums', '-D', $node->data_dir, @args ],
		'>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

my ($rc, $out, $err) = checksums('--check');
is($rc, 0, 'pg_checksums --check passes on compressed segments')
  or diag "$out\n$err";
like($out, qr/Bad checksums:\s+0/, 'and reports no bad checksum');
unlike($err, qr/_fsm/, 'and says nothing of the blank free space map');
my ($scanned) = $out =~ /Blocks scanned:\s+(\d+)/;
cmp_ok($scanned, '>', 100, 'it scanned the pages of the compressed relations');

is(PgStrata::PcsFile::entry($rpath, 0)->{flags} & 2,
	2, 'random bytes are stored raw (and were checked as such)');

# A byte flipped inside a compressed image.
copy($tpath, "$keep/save") or die;
PgStrata::PcsFile::flip_image($tpath, 3);
($rc, $out, $err) = checksums('--check');
isnt($rc, 0, 'a flipped byte inside a compressed image fails --check');
like($err,
	qr/invalid compressed page in file "[^"]+", block 3: The checksum of the block's image does not match\./,
	'naming the file, the block and the reason');
like($out, qr/Bad checksums:\s+1/, 'one bad block is counted');
copy("$keep/save", $tpath) or die;

# Checksums off, pages written without them, checksums on again.
($rc, $out, $err) = checksums('--disable');
is($rc, 0, 'pg_checksums --disable') or diag $err;
$node->start;
$node->safe_psql('postgres', q(
UPDATE t SET v = v || 'x' WHERE id % 7 = 0;
INSERT INTO t SELECT g, md5(g::text) FROM generate_series(20001, 22000) g;
));
$node->safe_psql('cdb', 'UPDATE c SET v = upper(v) WHERE id % 3 = 0');
# the blank free space maps are made anew at their first extension
for my $blank_fsm ([ 'b', $bpath ], [ 'b4', $b4path ])
{
	my ($table, $path) = @$blank_fsm;
	$node->safe_psql('postgres',
		"INSERT INTO $table SELECT g FROM generate_series(2, 5000) g; VACUUM $table");
	is($node->safe_psql('postgres', "SELECT count(*), sum(id) FROM $table"),
		'5000|12502500',
		"$table: a table whose free space map was blank takes rows and VACUUM");
	ok(PgStrata::PcsFile::is_compressed("${path}_fsm")
		  && PgStrata::PcsFile::header("${path}_fsm")->{header_crc_ok},
		"$table: its free space map was made anew, compressed");
}
my $before = $node->safe_psql('postgres',
	q(SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t));
$node->stop;
copy($tpath, "$keep/nochecksums") or die;

# --enable refuses a damaged image and leaves the cluster as it was.
PgStrata::PcsFile::flip_image($tpath, 3);
($rc, $out, $err) = checksums('--enable');
isnt($rc, 0, '--enable refuses a cluster with a damaged compressed image');
like($err, qr/cannot enable checksums: invalid compressed page in file "[^"]+", block 3/,
	'saying which page');
my $pgdata = $node->data_dir;
like(`pg_controldata $pgdata`, qr/Data page checksum version:\s+0/,
	'data checksums are still off');
copy("$keep/nochecksums", $tpath) or die;

($rc, $out, $err) = checksums('--enable');
is($rc, 0, 'pg_checksums --enable rewrites compressed segments') or diag $err;
like($out, qr/Files written:\s+[1-9]/, 'and writes some');
($rc, $out, $err) = checksums('--check');
is($rc, 0, '--check passes after --enable') or diag "$out\n$err";

# A sound image whose page has the wrong checksum: the images written while
# checksums were off, back under a cluster that has them on.
copy($tpath, "$keep/enabled") or die;
copy("$keep/nochecksums", $tpath) or die;
($rc, $out, $err) = checksums('--check');
isnt($rc, 0, 'a page checksum that does not match inside a sound image fails --check');
like($err,
	qr/checksum verification failed in file "[^"]+", block \d+: calculated checksum [0-9A-F]+ but block contains [0-9A-F]+/,
	'with the page checksum error');
copy("$keep/enabled", $tpath) or die;

# The server verifies the checksum of every page it reads.
$node->start;
is($node->safe_psql('postgres', 'SHOW data_checksums'), 'on', 'checksums are on');
is( $node->safe_psql('postgres',
		q(SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t)),
	$before, 'the table reads back as it was written');
is($node->safe_psql('postgres',
		q(SELECT (SELECT count(*) FROM verify_heapam('t')) + (SELECT count(*) FROM verify_heapam('r')))),
	'0', 'verify_heapam finds nothing');
is($node->safe_psql('postgres', q(SELECT bt_index_check('t_pkey', true))),
	'', 'bt_index_check with heapallindexed passes');
is($node->safe_psql('cdb', q(SELECT count(*) FROM c WHERE id % 3 = 0 AND v = upper(v))),
	'1666', 'the compressed database reads back');
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', 'SELECT count(*) FROM r');
ok(!$node->log_contains('checksum', $log_offset),
	'no checksum complaint in the server log');
$node->stop;

done_testing();
