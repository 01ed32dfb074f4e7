
# Copyright (c) 2026, pgstrata developers

# refdata on a streaming standby and through logical decoding: the WAL is
# heap's, so the standby answers the same, and a decoding plugin sees the
# changes of a refdata table like those of any other.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 'logical');
$primary->start;
$primary->backup('backup');

my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;

$primary->safe_psql(
	'postgres', q{
	CREATE EXTENSION refdata;
	CREATE TABLE item (id int PRIMARY KEY, name text, body text) USING refdata;
	CREATE TABLE line (id serial PRIMARY KEY, item_id int REFERENCES item);
	CREATE INDEX item_name ON item USING hash (name);
	INSERT INTO item SELECT g, 'item ' || g, NULL FROM generate_series(1, 500) g;
	UPDATE item SET body = (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g)
	  WHERE id <= 3;
	INSERT INTO line (item_id) SELECT 1 + g % 500 FROM generate_series(1, 2000) g;
	DELETE FROM item WHERE id = 500 AND NOT EXISTS (SELECT 1 FROM line WHERE item_id = 500);
	VACUUM FULL item;
	SELECT pg_create_logical_replication_slot('dec', 'test_decoding');
	INSERT INTO item VALUES (1001, 'decoded');
	UPDATE item SET name = 'renamed' WHERE id = 1001;
	DELETE FROM item WHERE id = 1001;
});
$primary->wait_for_catchup($standby);

my $query = q{
	SELECT count(*), md5(string_agg(id || name || coalesce(md5(body), ''), ',' ORDER BY id))
	FROM item;
	SELECT count(*) FROM line JOIN item ON item.id = line.item_id;
	SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname = 'item';
};
my $on_primary = $primary->safe_psql('postgres', $query);
my $on_standby = $standby->safe_psql('postgres', $query);
is($on_standby, $on_primary, 'the standby answers the same as the primary');
like($on_standby, qr/refdata$/, 'the table is refdata on the standby');

# An index scan through the hash index, on the standby.
is( $standby->safe_psql(
		'postgres', q{
	SET enable_seqscan = off; SELECT id FROM item WHERE name = 'item 42'}),
	'42',
	'index scan on the standby');

# amcheck and the inspection function work on the standby too.
$primary->safe_psql('postgres', 'CREATE EXTENSION amcheck');
$primary->wait_for_catchup($standby);
is( $standby->safe_psql(
		'postgres', q{
	SELECT (SELECT count(*) FROM verify_heapam('item')) || ',' ||
	       (SELECT count(*) FROM refdata_rowlocks('item'))}),
	'0,0',
	'verify_heapam and refdata_rowlocks on the standby');

# Row locks cannot be taken on a standby; the error is the usual one.
my ($ret, $out, $err) = $standby->psql('postgres',
	'SELECT id FROM item WHERE id = 1 FOR KEY SHARE');
like(
	$err,
	qr/cannot execute SELECT FOR KEY SHARE in a read-only transaction/,
	'FOR KEY SHARE on the standby fails as for heap');
($ret, $out, $err) =
  $standby->psql('postgres', "INSERT INTO item VALUES (9999, 'x')");
like(
	$err,
	qr/cannot execute INSERT in a read-only transaction/,
	'writing on the standby fails as for heap');

my $decoded = $primary->safe_psql('postgres',
	q{SELECT string_agg(data, E'\n') FROM pg_logical_slot_get_changes('dec', NULL, NULL)
	  WHERE data NOT LIKE 'BEGIN%' AND data NOT LIKE 'COMMIT%'});
is( $decoded,
	q{table public.item: INSERT: id[integer]:1001 name[text]:'decoded' body[text]:null
table public.item: UPDATE: id[integer]:1001 name[text]:'renamed' body[text]:null
table public.item: DELETE: id[integer]:1001},
	'logical decoding sees the changes of a refdata table');

$standby->stop;
$primary->stop;
done_testing();
