
# Copyright (c) 2026, pgstrata developers

# Torn writes of compressed pages are repaired by redo from full-page images
# (README.pcs, "Why a torn write cannot become silent corruption").
#
# Each case makes the torn state on disk deterministically:
#
#   1. CHECKPOINT, then copy the segment file (OLD: what the checkpoint
#      left on disk);
#   2. change one block (its first change since the checkpoint, so WAL
#      holds its full-page image) and evict it from shared buffers with
#      pg_buffercache_evict(), which writes it through the storage manager;
#      copy the segment file again (NEW);
#   3. stop with an immediate shutdown, so that redo starts at that
#      checkpoint, and splice the two copies: part of the new image over the
#      old one, with the new map entry or the old one;
#   4. start: redo must restore the block from its image, and the table
#      must hold the changed rows, with amcheck clean.
#
# Cases: a compressed image overwritten in place, a grown image relocated
# (entry switched, image half-written), an image written without its entry,
# and a hint-bit-only change after a checkpoint (wal_log_hints = on makes it
# a full-page image), also with wal_log_hints = off in the configuration,
# which the server overrides while compressed relations may exist.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::PcsFile;
use PgStrata::Node;


my $node = PgStrata::Node::compressed_node('torn',
	# Without data checksums: case 4 needs a cluster whose hint bits only
	# wal_log_hints logs.
	init => { allows_streaming => 1, extra => ['--no-data-checksums'] },
	conf => q(
wal_log_hints = on
full_page_writes = on
autovacuum = off
checkpoint_timeout = 1h
max_wal_size = 1GB
bgwriter_lru_maxpages = 0
),
	extensions => [qw(amcheck pg_buffercache)]);
$node->safe_psql('postgres', q(
CREATE TABLE c (id int PRIMARY KEY USING INDEX TABLESPACE cts, v text)
	WITH (fillfactor = 50) TABLESPACE cts;
INSERT INTO c SELECT g, md5(g::text) FROM generate_series(1, 3000) g;
VACUUM c;
CHECKPOINT;
));

# entry(FILE, BLOCK): the map entry of a block, in the bytes of a whole
# segment file, as (first unit, stored bytes, units, raw entry bytes)
sub entry
{
	my ($file, $block) = @_;
	my $e = PgStrata::PcsFile::entry(\$file, $block);
	return ($e->{first}, $e->{stored}, $e->{units}, $e->{raw});
}

# unit_at(FILE, UNIT): where a unit lies in the bytes of a whole segment
# file (the data area's offset depends on the segment's format)
sub unit_at
{
	my ($file, $unit) = @_;
	return PgStrata::PcsFile::unit_offset(\$file, $unit);
}

# block_rows(TABLE, BLOCK): a digest of the rows stored in a heap block
sub block_rows
{
	my ($table, $block) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM $table "
		  . "WHERE ctid >= '($block,0)' AND ctid < '($block,1000)'");
}

# evict(TABLE, BLOCK): write a block out through the storage manager, if
# it is still in shared buffers (VACUUM's ring may have written it
# already); returns how many copies of it are still dirty there
sub evict
{
	my ($table, $block) = @_;
	my $where = "relfilenode = pg_relation_filenode('$table')
		   AND relforknumber = 0 AND relblocknumber = $block
		   AND reldatabase = (SELECT oid FROM pg_database WHERE datname = 'postgres')";
	$node->safe_psql('postgres',
		"SELECT pg_buffercache_evict(bufferid) FROM pg_buffercache WHERE $where");
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_buffercache WHERE $where AND isdirty");
}

# torn_case(LABEL, TABLE, BLOCK, CHANGE, SPLICE, EXPECT): one case as the
# header describes.  SPLICE(OLD, NEW, BLOCK) returns the torn file; EXPECT
# is 'in place' or 'relocated', what the change must have made of the
# block's allocation (undef: either).  Returns the digest the block must read back as.
sub torn_case
{
	my ($label, $table, $block, $change, $splice, $expect) = @_;
	my $path = PgStrata::PcsFile::relation_path($node, 'postgres', $table);

	$node->safe_psql('postgres', 'CHECKPOINT');
	my $old = PgStrata::PcsFile::read_bytes($path);
	my $fpi_before = $node->safe_psql('postgres', 'SELECT wal_fpi FROM pg_stat_wal');

	$node->safe_psql('postgres', $change);
	my $expected = block_rows($table, $block);
	my $expected_all = $node->safe_psql('postgres',
		"SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM $table");
	# the changing session reports its WAL statistics as it exits, which
	# may be after psql has returned
	ok( $node->poll_query_until(
			'postgres', "SELECT wal_fpi > $fpi_before FROM pg_stat_wal"),
		"$label: the change wrote a full-page image");
	is(evict($table, $block), '0', "$label: the changed block was written out");
	my $new = PgStrata::PcsFile::read_bytes($path);

	my ($of, $os, $ou, $oe) = entry($old, $block);
	my ($nf, $ns, $nu, $ne) = entry($new, $block);
	isnt($ne, $oe, "$label: the write changed the block's map entry");
	my $how = $nf == $of ? 'in place' : 'relocated';
	if (defined $expect)
	{
		is($how, $expect, "$label: the new image was written $expect");
	}
	else
	{
		note "$label: the new image was written $how";
	}

	$node->stop('immediate');
	my $torn = $splice->($old, $new, $block);
	ok(torn_image($old, $new, $torn, $block),
		"$label: the image on disk does not match its map entry");
	PgStrata::PcsFile::write_bytes($path, undef, $torn);
	$node->start;

	is(block_rows($table, $block), $expected,
		"$label: redo restored the block's rows from the full-page image");
	is($node->safe_psql('postgres',
			"SELECT count(*), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM $table"),
		$expected_all, "$label: the whole table reads as committed");
	is($node->safe_psql('postgres', "SELECT count(*) FROM verify_heapam('$table')"),
		'0', "$label: verify_heapam finds nothing");
	return $expected;
}

# differences(OLD, NEW, BLOCK): offsets within the block's new image where
# the bytes differ from what OLD held there (the first and the last), or ()
sub differences
{
	my ($old, $new, $block) = @_;
	my ($nf, $ns) = entry($new, $block);
	my $start = unit_at($new, $nf);
	my $o = substr($old . ("\0" x $ns), $start, $ns);
	my $n = substr($new, $start, $ns);
	my @diff = grep { substr($o, $_, 1) ne substr($n, $_, 1) } 0 .. $ns - 1;
	return @diff ? ($diff[0], $diff[-1]) : ();
}

# half_new_over_old(OLD, NEW, BLOCK): NEW, with the block's new image torn
# at a sector (unit) boundary: from the sector that holds its last changed
# byte on, the bytes are as OLD had them.  The entry is switched, the
# image half-written.  (Half of the image is not enough: two zstd images of
# a page that differ in hint bits only can share their second half.)
sub half_new_over_old
{
	my ($old, $new, $block) = @_;
	my ($nf, $ns, $nu) = entry($new, $block);
	my (undef, $last) = differences($old, $new, $block);
	die "the new image does not differ from the old bytes" unless defined $last;
	my $image = unit_at($new, $nf);
	# sectors are 512-byte blocks of the file; images start at any unit
	my $start = 512 * int(($image + $last) / 512);
	$start = $image if $start < $image;
	my $end = unit_at($new, $nf + $nu);
	my $padded = $old;
	$padded .= "\0" x ($end - length($padded)) if length($padded) < $end;
	my $torn = $new;
	substr($torn, $start, $end - $start) = substr($padded, $start, $end - $start);
	return $torn;
}

# new_image_old_entry(OLD, NEW, BLOCK): OLD, with the block's new image
# written up to the end of the sector that holds its first changed byte:
# the write was cut short, the entry never switched.
sub new_image_old_entry
{
	my ($old, $new, $block) = @_;
	my ($nf, $ns) = entry($new, $block);
	my ($first) = differences($old, $new, $block);
	die "the new image does not differ from the old bytes" unless defined $first;
	my $start = unit_at($new, $nf);
	my $len = 512 * (int(($start + $first) / 512) + 1) - $start;
	$len = $ns if $len > $ns;
	my $torn = $old;
	$torn .= "\0" x ($start + $len - length($torn)) if length($torn) < $start + $len;
	substr($torn, $start, $len) = substr($new, $start, $len);
	return $torn;
}

# torn_image(OLD, NEW, TORN, BLOCK): is the image the torn file's entry
# points to different from the image that entry was written for?
sub torn_image
{
	my ($old, $new, $torn, $block) = @_;
	my ($tf, $ts, undef, $te) = entry($torn, $block);
	my $src = $te eq (entry($new, $block))[3] ? $new : $old;
	return substr($torn, unit_at($torn, $tf), $ts) ne
	  substr($src, unit_at($src, $tf), $ts);
}

# 1. In place: block 0 loses all but its first 20 rows to DELETE and
# VACUUM, which also cuts the line pointers of the deleted rows off, so its
# image shrinks and is rewritten over the old one, torn half-way.  (Every
# other row deleted would leave a page with holes in its line pointer
# array, whose shuffled image need not be smaller than the full page's.)
# Images get exactly the units they need (128 bytes each); a block that
# outgrew its units gets a quarter more.  Blocks 0 and 2 grow once first,
# so that the smaller images the cases below make are written in place.
$node->safe_psql('postgres', q(
UPDATE c SET v = v || md5(v) WHERE ctid < '(1,0)' OR (ctid >= '(2,0)' AND ctid < '(3,0)');
CHECKPOINT;
SELECT count(pg_buffercache_evict(bufferid)) FROM pg_buffercache
	WHERE relfilenode = pg_relation_filenode('c');
));
torn_case('in place, new entry', 'c', 0,
	"DELETE FROM c WHERE ctid > '(0,20)' AND ctid < '(1,0)'; VACUUM c;",
	\&half_new_over_old, 'in place');
torn_case('in place, old entry', 'c', 2,
	"DELETE FROM c WHERE ctid > '(2,20)' AND ctid < '(3,0)'; VACUUM c;",
	\&new_image_old_entry, 'in place');

# 2. Relocated: block 1's rows grow by bytes that do not compress (HOT
# updates stay on the page, which has room: fillfactor 50), the image
# outgrows its units and moves; the entry switched, the image half-written.
torn_case('relocated, entry switched', 'c', 1,
	"UPDATE c SET v = v || md5(random()::text) || md5(random()::text)
	 WHERE ctid >= '(1,0)' AND ctid < '(1,1000)'",
	\&half_new_over_old, 'relocated');

check_index();

# check_index(): the primary key agrees with the heap
sub check_index
{
	is($node->safe_psql('postgres', "SELECT bt_index_check('c_pkey', true)"),
		'', 'bt_index_check with heapallindexed passes');
}

# 3. A hint-bit-only change after a checkpoint: rows inserted and
# checkpointed before anything read them carry no hint bits on disk; the
# first read sets them, which with wal_log_hints = on writes a full-page
# image (XLOG_FPI_FOR_HINT) before the page may be written.
$node->safe_psql('postgres', q(
CREATE TABLE h (id int, v text) TABLESPACE cts;
INSERT INTO h SELECT g, md5(g::text) FROM generate_series(1, 2000) g;
));
torn_case('hint bits only', 'h', 0, 'SELECT count(*) FROM h',
	\&half_new_over_old, undef);

# 4. The same with wal_log_hints = off in postgresql.conf: while compressed
# tablespaces exist the server keeps it on (patch 0008, with a WARNING), so
# the hint-bit change still writes a full-page image and the torn page is
# restored from it.
$node->append_conf('postgresql.conf', 'wal_log_hints = off');
$node->restart;
is($node->safe_psql('postgres', 'SHOW wal_log_hints'), 'on',
	'wal_log_hints = off in the configuration is kept on');
$node->safe_psql('postgres', q(
CREATE TABLE h2 (id int, v text) TABLESPACE cts;
INSERT INTO h2 SELECT g, md5(g::text) FROM generate_series(1, 2000) g;
));
torn_case('hint bits only, wal_log_hints = off configured', 'h2', 0,
	'SELECT count(*) FROM h2', \&half_new_over_old, undef);

$node->stop;
done_testing();
