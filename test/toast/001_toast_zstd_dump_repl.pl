
# Copyright (c) 2026, pgstrata developers

# zstd TOAST compression beyond one server: pg_dump/pg_restore keep
# COMPRESSION zstd and --no-toast-compression drops it; logical replication
# carries a table with a zstd column to a subscriber unchanged; a streaming
# standby and crash recovery replay zstd values; amcheck's verify_heapam()
# is clean on zstd values; and a damaged zstd frame on disk is an ERROR with
# ERRCODE_DATA_CORRUPTED, not a crash.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pub = PostgreSQL::Test::Cluster->new('publisher');
# Without data checksums: the last part damages a frame on disk, which
# they would report first.
$pub->init(allows_streaming => 'logical', extra => ['--no-data-checksums']);
$pub->start;

# Values from one inline compressed row to multi-megabyte external ones, of
# prose-like words, hex text and incompressible bytes.
my $schema = q{
CREATE TABLE docs (id int PRIMARY KEY, body text COMPRESSION zstd,
				   bin bytea COMPRESSION zstd);
};
# fill(FROM, TO): the INSERT of rows FROM to TO.
sub fill
{
	my ($from, $to) = @_;
	return qq{
INSERT INTO docs
	SELECT i,
		   (SELECT string_agg((ARRAY['toast', 'zstd', 'row', 'page', 'value'])
							  [1 + get_byte(decode(md5((i * 100003 + k)::text), 'hex'), 0) % 5],
							  ' ')
			FROM generate_series(1, CASE WHEN i % 3 = 0 THEN 50 ELSE i * 4000 END) AS k),
		   (SELECT decode(string_agg(md5((i * 7 + k)::text), ''), 'hex')
			FROM generate_series(1, i * 10) AS k)
	FROM generate_series($from, $to) AS i;
};
}
# Rows 1 to 15 in the encoding of earlier builds, 16 to 30 in the current
# one: what comes out of the dump, the replication and the restore is the
# same data, stored in the current encoding.
$pub->safe_psql('postgres', $schema
	  . 'SET toast_zstd_debug_legacy_encoding = on;'
	  . fill(1, 15)
	  . 'RESET toast_zstd_debug_legacy_encoding;'
	  . fill(16, 30));
my $legacy = q{CREATE EXTENSION IF NOT EXISTS pgstrata;
	SELECT pgstrata_toast_legacy_values('docs')};
ok($pub->safe_psql('postgres', $legacy) > 0,
	'the publisher holds values of the earlier encoding');

my $digest = q{SELECT md5(string_agg(id || ':' || md5(body) || ':' || md5(bin), ',' ORDER BY id)) FROM docs};
my $methods = q{SELECT string_agg(DISTINCT coalesce(pg_column_compression(body), '-'), ',') FROM docs};
my $want = $pub->safe_psql('postgres', $digest);
is($pub->safe_psql('postgres', $methods), '-,zstd',
	'the publisher stores the long values with zstd');
ok( $pub->safe_psql('postgres',
		q{SELECT count(*) FROM docs WHERE pg_column_toast_chunk_id(body) IS NOT NULL}) > 0,
	'some are in the TOAST table');

# amcheck checks the compression method of every external value.
$pub->safe_psql('postgres', 'CREATE EXTENSION amcheck');
is( $pub->safe_psql('postgres',
		q{SELECT count(*) FROM verify_heapam('docs', check_toast => true)}),
	'0',
	'verify_heapam finds nothing wrong with zstd values');

# pg_dump keeps the method, in the plain and the custom format.
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $sql = "$tmp/docs.sql";
$pub->command_ok([ 'pg_dump', '-d', $pub->connstr('postgres'), '-t', 'docs', '-f', $sql ],
	'pg_dump (plain) runs');
like(slurp_file($sql), qr/ALTER COLUMN body SET COMPRESSION zstd;/,
	'the plain dump sets COMPRESSION zstd');
$pub->command_ok([ 'pg_dump', '-d', $pub->connstr('postgres'), '-t', 'docs', '--no-toast-compression', '-f', "$tmp/plain-no.sql" ],
	'pg_dump --no-toast-compression runs');
unlike(slurp_file("$tmp/plain-no.sql"), qr/SET COMPRESSION/,
	'with --no-toast-compression it does not');

# pg_restore of 17 has no --no-toast-compression: the option is pg_dump's.
$pub->command_ok([ 'pg_dump', '-Fc', '-d', $pub->connstr('postgres'), '-t', 'docs', '-f', "$tmp/docs.dump" ],
	'pg_dump (custom) runs');
$pub->command_ok([ 'pg_dump', '-Fc', '-d', $pub->connstr('postgres'), '-t', 'docs', '--no-toast-compression', '-f', "$tmp/docs-no.dump" ],
	'pg_dump (custom) --no-toast-compression runs');
my $attcompression = q{SELECT string_agg(attname || '=' || coalesce(nullif(attcompression::text, ''), '-'), ',' ORDER BY attnum)
	FROM pg_attribute WHERE attrelid = 'docs'::regclass AND attnum > 0};
for my $case ([ 'restored', 'docs.dump', 'id=-,body=z,bin=z', '-,zstd' ],
	[ 'restored_plain', 'docs-no.dump', 'id=-,body=-,bin=-', '-,pglz' ])
{
	my ($db, $file, $att, $meth) = @$case;
	$pub->safe_psql('postgres', "CREATE DATABASE $db");
	$pub->command_ok([ 'pg_restore', '-d', $pub->connstr($db), "$tmp/$file" ],
		"pg_restore of $file runs");
	is($pub->safe_psql($db, $attcompression), $att,
		"$file: pg_attribute.attcompression is $att");
	is($pub->safe_psql($db, $methods), $meth,
		"$file: the values are compressed with $meth");
	is($pub->safe_psql($db, $digest), $want, "$file: same data");
	is($pub->safe_psql($db, $legacy), '0',
		"$file: no value of the earlier encoding");
}

# Logical replication to a subscriber whose table also uses zstd.
my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init;
$sub->start;
$sub->safe_psql('postgres', $schema);
$pub->safe_psql('postgres', 'CREATE PUBLICATION docs_pub FOR TABLE docs');
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION docs_sub CONNECTION '" . $pub->connstr
	  . " dbname=postgres' PUBLICATION docs_pub");
$sub->wait_for_subscription_sync($pub, 'docs_sub');
is($sub->safe_psql('postgres', $digest), $want,
	'the initial copy reaches the subscriber unchanged');
is($sub->safe_psql('postgres', $legacy), '0',
	'stored in the current encoding');

# Changes after the copy go through the decoding of zstd TOAST values.
$pub->safe_psql('postgres', fill(31, 40)
	  . q{UPDATE docs SET body = body || ' updated' WHERE id % 4 = 1;
		  UPDATE docs SET id = id WHERE id % 4 = 2;
		  DELETE FROM docs WHERE id = 5;});
$pub->wait_for_catchup('docs_sub');
$want = $pub->safe_psql('postgres', $digest);
is($sub->safe_psql('postgres', $digest), $want,
	'inserts, updates and deletes reach the subscriber unchanged');
is($sub->safe_psql('postgres', $methods), '-,zstd',
	'the subscriber stores them with zstd');
$sub->stop;

# Physical replication and crash recovery replay zstd values from WAL.
$pub->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($pub, 'base', has_streaming => 1);
$standby->start;
$pub->safe_psql('postgres', fill(41, 45));
$pub->wait_for_replay_catchup($standby);
$want = $pub->safe_psql('postgres', $digest);
is($standby->safe_psql('postgres', $digest), $want,
	'a streaming standby has the same zstd values');
$standby->stop;

$pub->safe_psql('postgres', fill(46, 50));
$want = $pub->safe_psql('postgres', $digest);
$pub->stop('immediate');
$pub->start;
is($pub->safe_psql('postgres', $digest), $want,
	'crash recovery replays zstd values');
is( $pub->safe_psql('postgres',
		q{SELECT count(*) FROM verify_heapam('docs', check_toast => true)}),
	'0',
	'and verify_heapam still finds nothing wrong');

# Damaged values on disk.  Each table holds one external value of the
# same 659999 bytes; damage(TABLE, CODE) lets CODE change the bytes of the
# table's TOAST file around the first zstd frame, whose magic number is at
# offset $_[1] of the string $_[0].
my @damaged = qw(damaged wide_window bad_method mismatch);
$pub->safe_psql('postgres', join('', map { qq{
	CREATE TABLE $_ (t text COMPRESSION zstd);
	INSERT INTO $_ SELECT string_agg(md5(k::text), ' ') FROM generate_series(1, 20000) AS k;} } @damaged)
	. 'CHECKPOINT;');
my %toastfile = map {
	$_ => $pub->data_dir . '/'
	  . $pub->safe_psql('postgres',
		"SELECT pg_relation_filepath(reltoastrelid) FROM pg_class WHERE relname = '$_'")
} @damaged;
$pub->stop;
sub damage
{
	my ($table, $code) = @_;
	open my $fh, '+<:raw', $toastfile{$table} or die "open $toastfile{$table}: $!";
	my $data = do { local $/; <$fh> };
	my $at = index($data, "\x28\xb5\x2f\xfd");
	die "no zstd frame in $toastfile{$table}" if $at < 5;
	$code->($data, $at);
	seek $fh, 0, 0;
	print $fh $data;
	close $fh;
}

# The bytes as written: va_tcinfo (little-endian here) with bit pattern 3
# and the raw size, the method byte 2 (zstd), then the frame, whose header
# has no content size and no single-segment flag, so a window descriptor.
damage('damaged', sub {
	my $tcinfo = unpack('V', substr($_[0], $_[1] - 5, 4));
	is($tcinfo >> 30, 3, 'va_tcinfo of a new value has bit pattern 3');
	is($tcinfo & 0x3fffffff, 659999, 'and the raw size');
	is(ord(substr($_[0], $_[1] - 1, 1)), 2, 'the method byte is 2, zstd');
	is(ord(substr($_[0], $_[1] + 4, 1)) & 0xe0, 0,
		'the frame header has a window descriptor');
	# set the reserved bit of the frame header descriptor, which any zstd
	# decoder must refuse
	substr($_[0], $_[1] + 4, 1) = chr(ord(substr($_[0], $_[1] + 4, 1)) | 0x08);
});
# A window of 2^26 bytes, a hundred times what a value of 659999 bytes can
# need, and within libzstd's default limit of 2^27.
damage('wide_window', sub { substr($_[0], $_[1] + 5, 1) = chr(16 << 3) });
# A method byte no build knows.
damage('bad_method', sub { substr($_[0], $_[1] - 1, 1) = chr(7) });
# The raw size in the chunks' va_tcinfo one less than the TOAST pointer's.
damage('mismatch', sub { substr($_[0], $_[1] - 5, 1) = chr(ord(substr($_[0], $_[1] - 5, 1)) ^ 1) });
$pub->start;

# query_error(SQL): the server's message for SQL, with its SQLSTATE.
sub query_error
{
	my ($stdout, $stderr);
	$pub->psql('postgres', $_[0],
		stdout => \$stdout, stderr => \$stderr, on_error_stop => 0,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
	return $stderr;
}
like(query_error('SELECT length(t) FROM damaged'),
	qr/ERROR:  XX001: compressed zstd data is corrupt/,
	'a damaged frame is ERRCODE_DATA_CORRUPTED');
like(query_error('SELECT substr(t, 1, 10) FROM damaged'),
	qr/compressed zstd data is corrupt/,
	'also when only a slice is read');
# The slice's streaming decoder would allocate the window the frame asks
# for; it is refused before any allocation, on the frame header.
like(query_error('SELECT substr(t, 1, 10) FROM wide_window'),
	qr/ERROR:  XX001: compressed zstd data is corrupt\nDETAIL:  Frame requires too much memory for decoding/,
	'a frame asking for a window larger than the value is refused');
# Reading the whole value decodes straight into the result, with no window
# buffer, and the descriptor does not matter there.
is($pub->safe_psql('postgres', 'SELECT length(t) FROM wide_window'),
	'659999', 'the whole value needs no window and reads back');
like(query_error('SELECT length(t) FROM bad_method'),
	qr/ERROR:  XX001: invalid compression method id 7 in extended compression header/,
	'an unknown method byte is ERRCODE_DATA_CORRUPTED');
for my $query ('SELECT length(t) FROM mismatch', 'SELECT substr(t, 1, 10) FROM mismatch')
{
	like(query_error($query),
		qr/ERROR:  XX001: compressed zstd data is corrupt\nDETAIL:  The TOAST pointer's compression method or sizes do not match the stored value's header\./,
		"chunks whose header disagrees with the TOAST pointer are refused: $query");
}

# Every header byte of a value, mutated: a bit flipped in each byte from
# va_tcinfo to the first block header of the frame, one table each.  Each
# read, whole or a slice, gives the right value or an ERROR with
# ERRCODE_DATA_CORRUPTED, and no backend dies.
my @mutations;
for my $off (-5 .. 9)
{
	push @mutations, [ $off, $_ ] for (0x01, 0x80);
}
my $value = q{(SELECT string_agg(md5(k::text), ' ') FROM generate_series(1, 20000) AS k)};
$pub->safe_psql('postgres', join('', map { qq{
	CREATE TABLE mut_$_ (t text COMPRESSION zstd);
	INSERT INTO mut_$_ SELECT $value;} } 0 .. $#mutations) . 'CHECKPOINT;');
my $want_md5 = $pub->safe_psql('postgres', "SELECT md5($value)");
for my $i (0 .. $#mutations)
{
	$toastfile{"mut_$i"} = $pub->data_dir . '/'
	  . $pub->safe_psql('postgres',
		"SELECT pg_relation_filepath(reltoastrelid) FROM pg_class WHERE relname = 'mut_$i'");
}
$pub->stop;
for my $i (0 .. $#mutations)
{
	my ($off, $mask) = @{ $mutations[$i] };
	damage("mut_$i", sub {
		my $at = $_[1] + $off;
		substr($_[0], $at, 1) = chr(ord(substr($_[0], $at, 1)) ^ $mask);
	});
}
$pub->start;
my @bad;
for my $i (0 .. $#mutations)
{
	for my $query ("SELECT md5(t) = '$want_md5' FROM mut_$i",
		"SELECT substr(t, 1, 100) = substr($value, 1, 100) FROM mut_$i")
	{
		my ($stdout, $stderr);
		$pub->psql('postgres', $query,
			stdout => \$stdout, stderr => \$stderr, on_error_stop => 0,
			extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		next if $stdout eq 't' || $stderr =~ /ERROR:  XX001: /;
		push @bad, "offset $mutations[$i][0] mask $mutations[$i][1]: "
		  . ($stdout // '') . ($stderr // '');
	}
}
is(join("\n", @bad), '',
	'each mutated header byte reads back right or is ERRCODE_DATA_CORRUPTED');
unlike(slurp_file($pub->logfile), qr/terminated by signal/,
	'no backend died');
is($pub->safe_psql('postgres', 'SELECT count(*) FROM docs'), '49',
	'and the server is still up');

# This build's pg_upgrade refuses a new cluster whose server is not
# pgstrata's, as stock 17's would be: a stand-in that answers -V as stock
# 17 does, among this build's other programs.
my $bindir = $pub->config_data('--bindir');
my $stockbin = "$tmp/stockbin";
mkdir $stockbin or die "mkdir $stockbin: $!";
for my $prog (glob "$bindir/*")
{
	my $name = (split m{/}, $prog)[-1];
	next if $name eq 'postgres';
	symlink $prog, "$stockbin/$name" or die "symlink $prog: $!";
}
my $stockversion = `"$bindir/postgres" -V`;
$stockversion =~ s/ \(pgstrata [^)]*\)//;
chomp $stockversion;
open my $sh, '>', "$stockbin/postgres" or die "open: $!";
print $sh "#!/bin/sh\necho '$stockversion'\n";
close $sh;
chmod 0755, "$stockbin/postgres";
my $newnode = PostgreSQL::Test::Cluster->new('new');
$newnode->init;
my ($upgrade_out, $upgrade_err);
IPC::Run::run(
	[ "$bindir/pg_upgrade", '--check', '-b', $bindir, '-B', $stockbin,
	  '-d', $pub->data_dir, '-D', $newnode->data_dir ],
	'>', \$upgrade_out, '2>', \$upgrade_err,
	init => sub { chdir $tmp or die "chdir $tmp: $!" });
like($upgrade_out,
	qr/incorrect version: found "\Q$stockversion\E".*\nThe new cluster's server must be pgstrata's: other servers cannot read zstd TOAST values.*\n.*pg_dump --no-toast-compression/,
	'pg_upgrade refuses a stock server for the new cluster, and says why');

$pub->stop;
done_testing();
