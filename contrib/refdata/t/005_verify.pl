
# Copyright (c) 2026, pgstrata developers

# refdata_verify() finds damage in a refdata table: tuple headers overwritten
# on disk while the server is down (a transaction id from the future, a bad
# header length, a line pointer out of the page), and nothing in an intact
# table.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->start;
$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION refdata;
	CREATE EXTENSION pageinspect;
	CREATE TABLE item (id int PRIMARY KEY, name text) USING refdata;
	INSERT INTO item SELECT g, 'item ' || g FROM generate_series(1, 50) g;
	VACUUM (FREEZE) item;
	CHECKPOINT;
});
is($node->safe_psql('postgres', q{SELECT count(*) FROM refdata_verify('item')}),
	'0', 'an intact table has no problems');

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
	q{SELECT blkno || ',' || offnum || ': ' || msg FROM refdata_verify('item') ORDER BY offnum});
like($report, qr/^0,2: xmin \d+ equals or exceeds next valid transaction ID/m,
	'a transaction id from the future is reported');
like($report, qr/^0,3: tuple data offset 8 differs from expected 24/m,
	'a wrong header length is reported');
like($report,
	qr/^0,4: line pointer to page offset 8160 with length 100 is outside the tuple space of the page/m,
	'a line pointer out of the page is reported');
is(scalar(split /\n/, $report), 3, 'nothing else is reported');

$node->stop;
done_testing();
