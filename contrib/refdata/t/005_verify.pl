
# Copyright (c) 2026, pgstrata developers

# amcheck checks refdata tables (patch "amcheck, pg_amcheck: check tables
# whose access method stores heap pages"): verify_heapam() and pg_amcheck
# find damage in a refdata table, tuple headers overwritten on disk while
# the server is down (a transaction id from the future, a bad header
# length, a line pointer out of the page), and nothing in an intact table;
# pg_amcheck -t selects it, and a whole-database run checks it.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
# Pages are damaged on purpose: data checksums would catch that first.
$node->init(extra => ['--no-data-checksums']);
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION refdata;
	CREATE EXTENSION pageinspect;
	CREATE EXTENSION amcheck;
	CREATE TABLE item (id int PRIMARY KEY, name text) USING refdata;
	INSERT INTO item SELECT g, 'item ' || g FROM generate_series(1, 50) g;
	VACUUM (FREEZE) item;
	CHECKPOINT;
});
is($node->safe_psql('postgres', q{SELECT count(*) FROM verify_heapam('item')}),
	'0', 'verify_heapam: an intact refdata table has no problems');
# pg_amcheck -v names what it checks on stderr.
$node->command_checks_all(
	[ 'pg_amcheck', '-d', 'postgres', '-p', $node->port, '-v', '-t', 'item' ],
	0, [qr/^$/],
	[
		qr/checking heap table "postgres\.public\.item"/,
		qr/checking btree index "postgres\.public\.item_pkey"/
	],
	'pg_amcheck -t selects a refdata table and its index');
$node->command_checks_all(
	[ 'pg_amcheck', '-d', 'postgres', '-p', $node->port, '-v' ],
	0, [qr/^$/],
	[qr/checking heap table "postgres\.public\.item"/],
	'a whole-database pg_amcheck run checks refdata tables');

# Where tuples 2, 3 and 4 of block 0 are, and a transaction id well ahead.
my %lp_off = map { split /\|/ } split /\n/,
  $node->safe_psql('postgres',
	q{SELECT lp, lp_off FROM heap_page_items(get_raw_page('item', 0)) WHERE lp IN (2, 3, 4)});
my $future = $node->safe_psql('postgres', 'SELECT txid_current() + 100000');
my $file = $node->data_dir . '/'
  . $node->safe_psql('postgres', q{SELECT pg_relation_filepath('item')});
$node->stop;

open my $fh, '+<', $file or die "could not open $file: $!";
binmode $fh;
# tuple 2: t_xmin (offset 0 of the header) from the future, not frozen
sysseek($fh, $lp_off{2}, 0);
syswrite($fh, pack('L', $future));
sysseek($fh, $lp_off{2} + 20, 0);    # t_infomask: clear the frozen bits
sysread($fh, my $im, 2);
my $infomask = unpack('S', $im) & ~0x0300;
sysseek($fh, $lp_off{2} + 20, 0);
syswrite($fh, pack('S', $infomask));
# tuple 3: t_hoff (offset 22) wrong
sysseek($fh, $lp_off{3} + 22, 0);
syswrite($fh, pack('C', 8));
# line pointer 4 (at 24 + 3 * 4 in the page header): offset past the page
sysseek($fh, 24 + 3 * 4, 0);
syswrite($fh, pack('L', (8160 & 0x7fff) | (1 << 15) | (100 << 17)));
close $fh;

$node->start;
my $report = $node->safe_psql('postgres',
	q{SELECT blkno || ',' || offnum || ': ' || msg FROM verify_heapam('item') ORDER BY offnum});
like($report, qr/^0,2: xmin \d+ equals or exceeds next valid transaction ID/m,
	'a transaction id from the future is reported');
like($report, qr/^0,3: tuple data should begin at byte 24, but actually begins at byte 8/m,
	'a wrong header length is reported');
like($report, qr/^0,4: line pointer to page offset 8160 with length 100 ends beyond maximum page offset 8192/m,
	'a line pointer out of the page is reported');
is(scalar(split /\n/, $report), 3, 'nothing else is reported');

my ($stdout, $stderr);
IPC::Run::run [ 'pg_amcheck', '-d', 'postgres', '-p', $node->port, '-t', 'item' ],
  '>', \$stdout, '2>', \$stderr;
like($stdout, qr/heap table "postgres\.public\.item", block 0, offset 3:/,
	'pg_amcheck reports the damage too');

$node->stop;
done_testing();
