
# Copyright (c) 2026, pgstrata developers

# Segments past the first, as md.c treats them:
#
# 1. An extension that skips over the rest of a segment (hash indexes
#    allocate a split point by writing its last block) makes the segments
#    before it full, so the fork's size counts the new block.  Compressed
#    storage used to leave the short segment as it was: the fork looked a
#    segment shorter, and the next extension failed.
# 2. A segment file whose creation a crash interrupted (empty, shorter than
#    its header, or as long as it with a header that never reached disk)
#    holds no block:
#    the server starts and redo re-creates it.  It used to be a hard error,
#    met by redo first, so the server would not start.
# 3. A backend that reads many compressed tables maps none of their files:
#    header and map are read and written with ordinary calls.  It used to
#    keep one mapping per segment it ever touched, until vm.max_map_count
#    stopped it, and later at most max_files_per_process of them.
#
# test_pcs_extend_to() (test/modules/test_pcs) extends a fork past its end
# as a hash index does, without writing a gigabyte first.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;

my $RELSEG_SIZE = 131072;
# a new segment of format 5 is its header alone, written and fsynced when
# the segment is created (README.pcs, "Segments past the first"); format 4
# also sized the file to its data area, behind a 2 MB map
my $HEADER_SIZE = 4096;

my $node = PgStrata::Node::compressed_node('segments',
	conf => q(
wal_log_hints = on
autovacuum = off
max_files_per_process = 64
# inserts extend by one block, and do not reuse the zero pages at the end
polar_bulk_extend_size = 0
),
	extensions => [qw(test_pcs pgstrata pageinspect)]);

# The logical size of a relation's main fork, as the storage manager
# counts it (pg_relation_size() reports physical bytes for compressed forks)
sub logical_pages
{
	my ($rel) = @_;
	return $node->safe_psql('postgres',
		"SELECT logical_pages FROM pgstrata_relation_compression('$rel') WHERE fork = 'main'"
	);
}

# 1. Extension past a segment boundary, compressed and plain side by side
my $target = $RELSEG_SIZE + 9;
$node->safe_psql('postgres', q(
CREATE TABLE skip_c (id int, v text) TABLESPACE cts;
CREATE TABLE skip_p (id int, v text);
INSERT INTO skip_c SELECT g, md5(g::text) FROM generate_series(1, 100) g;
INSERT INTO skip_p SELECT g, md5(g::text) FROM generate_series(1, 100) g;
));
is($node->safe_psql('postgres', "SELECT test_pcs_extend_to('skip_p', $target)"),
	$target + 1, 'md: extension past the segment boundary counts every block');
is($node->safe_psql('postgres', "SELECT test_pcs_extend_to('skip_c', $target)"),
	$target + 1, 'compressed: extension past the segment boundary counts every block');
is(logical_pages('skip_c'), $target + 1,
	'compressed: the first segment was made full');
is($node->safe_psql('postgres', "SELECT test_pcs_extend_to('skip_c', $target + 1)"),
	$target + 2, 'compressed: the next extension follows on');
# the skipped blocks read as zeros, the old ones as they were
is( $node->safe_psql(
		'postgres', qq(
SELECT (SELECT count(*) FROM skip_c WHERE ctid < '(1000,0)'),
       octet_length(get_raw_page('skip_c', 5000)),
       (SELECT sum(b::int) FROM generate_series(1, 8192) i,
               LATERAL get_byte(get_raw_page('skip_c', $RELSEG_SIZE - 1), i - 1) b))),
	'100|8192|0', 'old rows stay, skipped blocks read as zero pages');
$node->safe_psql('postgres', 'CHECKPOINT');
$node->restart;
is(logical_pages('skip_c'), $target + 2, 'the size survives a restart');
$node->safe_psql('postgres', 'DROP TABLE skip_c, skip_p');

# 2. A crash while segment 1 is created.  The table's first segment is made
# full, then a row goes into segment 1 and the server is killed before a
# checkpoint: redo inserts the row again.  Before the restart, segment 1
# is replaced by what an operating system crash can leave of a new file.
$node->safe_psql('postgres', q(
CREATE TABLE seg (id int, v text) TABLESPACE cts;
INSERT INTO seg VALUES (1, 'first');
));
$node->safe_psql('postgres',
	"SELECT test_pcs_extend_to('seg', $RELSEG_SIZE - 1)");
# a row that fills the last block of segment 0: the next ones go further
$node->safe_psql('postgres', q(
ALTER TABLE seg ALTER v SET STORAGE plain;
INSERT INTO seg VALUES (0, repeat('x', 8120));
));
is($node->safe_psql('postgres', "SELECT ctid FROM seg WHERE id = 0"),
	'(' . ($RELSEG_SIZE - 1) . ',1)', 'the last block of segment 0 is full');
$node->safe_psql('postgres', 'CHECKPOINT');
my $seg1 =
  $node->data_dir . '/'
  . $node->safe_psql('postgres', "SELECT pg_relation_filepath('seg')") . '.1';
ok(!-e $seg1, 'no segment 1 yet');

my %unfinished = (
	'an empty file' => sub { truncate($_[0], 0) or die "truncate: $!" },
	'a file shorter than its header' => sub {
		truncate($_[0], 0) or die "truncate: $!";
		truncate($_[0], 2048) or die "truncate: $!";
	},
	'a file as long as its header, with a blank header' => sub {
		truncate($_[0], 0) or die "truncate: $!";
		truncate($_[0], $HEADER_SIZE) or die "truncate: $!";
	});
my $n = 1;
foreach my $what (sort keys %unfinished)
{
	$n++;
	my $ctid = $node->safe_psql('postgres',
		"INSERT INTO seg VALUES ($n, 'row $n') RETURNING ctid");
	like($ctid, qr/^\((\d+),/, "row $n inserted at $ctid");
	my ($blk) = $ctid =~ /^\((\d+),/;
	cmp_ok($blk, '>=', $RELSEG_SIZE, "row $n is in segment 1");
	ok(-s $seg1 >= $HEADER_SIZE && PgStrata::PcsFile::is_compressed($seg1),
		'segment 1 exists, with its header');
	$node->stop('immediate');

	$unfinished{$what}->($seg1);
	ok($node->start(fail_ok => 1), "server starts with $what as segment 1");
	is($node->safe_psql('postgres', "SELECT v FROM seg WHERE ctid = '$ctid'"),
		"row $n", "redo re-created segment 1 from $what: row $n is back");
	is($node->safe_psql('postgres', "SELECT v FROM seg WHERE id = 1"),
		'first', 'the row of segment 0 is there');
	ok(PgStrata::PcsFile::is_compressed($seg1),
		'segment 1 is a compressed segment again');
}

# An unfinished segment 1 with no WAL to replay into it: it holds no
# block, and the next insert uses it.
$node->safe_psql('postgres', 'CHECKPOINT');
$node->stop('immediate');
unlink($seg1) or die "unlink: $!";
open(my $fh, '>', $seg1) or die "create: $!";
close($fh);
$node->start;
is(logical_pages('seg'), $RELSEG_SIZE,
	'an empty segment 1 counts no blocks, as in md');
my $ctid = $node->safe_psql('postgres',
	"INSERT INTO seg VALUES (99, 'after') RETURNING ctid");
$node->safe_psql('postgres', 'CHECKPOINT');
$node->restart;
is($node->safe_psql('postgres', "SELECT v FROM seg WHERE ctid = '$ctid'"),
	'after', 'a row written into the re-created segment 1 survives a restart');
$node->safe_psql('postgres', 'DROP TABLE seg');

# 3. Mappings.  One session reads 200 compressed tables, and maps none of
# their files.
$node->safe_psql('postgres', q(
DO $$
BEGIN
	FOR i IN 1..200 LOOP
		EXECUTE format('CREATE TABLE m%s (id int, v text) TABLESPACE cts', i);
		EXECUTE format('INSERT INTO m%s VALUES (%s, ''value %s'')', i, i, i);
	END LOOP;
END $$;
));
my $session = $node->background_psql('postgres');
my $pid = $session->query_safe('SELECT pg_backend_pid()');
chomp $pid;
my $sum = $session->query_safe(q(
CREATE FUNCTION sum_all() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	total bigint := 0;
	one bigint;
BEGIN
	FOR i IN 1..200 LOOP
		EXECUTE format('SELECT sum(id) FROM m%s', i) INTO one;
		total := total + one;
	END LOOP;
	RETURN total;
END $$;
SELECT sum_all();
));
chomp $sum;
is($sum, 200 * 201 / 2, 'one session reads 200 compressed tables');

# mappings of compressed segments: files of the tablespace in the memory map
sub mapped_segments
{
	my $maps = slurp_file("/proc/$pid/maps");
	my $count = () = $maps =~ m{/pg_tblspc/}g;
	return $count;
}
is(mapped_segments(), 0,
	'the session maps no file of the compressed tablespace');

# what the session keeps for its open segments instead: a copy of each
# header (2.5 kB) with the segment's state, in a slab of its own
my $seg_bytes = $session->query_safe(
	"SELECT total_bytes FROM pg_backend_memory_contexts WHERE name = 'pcs open segments'"
);
chomp $seg_bytes;
note "memory of the session's open compressed segments: $seg_bytes bytes";
cmp_ok($seg_bytes, '>', 200 * 2560,
	'the session keeps a header copy for each of the 200 tables');
cmp_ok($seg_bytes, '<=', 200 * 4096,
	'and at most 4 kB for each open segment');

# the tables read and write as before, in the same session
$session->query_safe(q(
UPDATE m1 SET v = 'changed';
INSERT INTO m2 VALUES (1000, 'new');
));
is($session->query_safe('SELECT sum_all()'), 200 * 201 / 2 + 1000,
	'the 200 tables are read again');
is($session->query_safe("SELECT v FROM m1"), 'changed',
	'and written again');
is(mapped_segments(), 0, 'still no mapping');
$session->quit;

$node->safe_psql('postgres', 'CHECKPOINT');
$node->restart;
is($node->safe_psql('postgres', "SELECT v FROM m1"), 'changed',
	'the write is durable');

$node->stop;
done_testing();
