
# Copyright (c) 2026, pgstrata developers

# pg_dump and pg_restore keep refdata tables refdata: the dump names the
# access method, the restore recreates the extension first, the data and
# the foreign keys come back.

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
	CREATE TABLE item (id int PRIMARY KEY, name text) USING refdata;
	CREATE TABLE region (id int PRIMARY KEY) PARTITION BY RANGE (id) USING refdata;
	CREATE TABLE region_1 PARTITION OF region FOR VALUES FROM (0) TO (10);
	CREATE TABLE line (id int PRIMARY KEY, item_id int REFERENCES item,
	                   region_id int REFERENCES region);
	INSERT INTO item SELECT g, 'item ' || g FROM generate_series(1, 100) g;
	INSERT INTO region VALUES (1), (2);
	INSERT INTO line SELECT g, 1 + g % 100, 1 + g % 2 FROM generate_series(1, 300) g;
});

my $query = q{
	SELECT c.relname, coalesce(a.amname, '-') FROM pg_class c LEFT JOIN pg_am a ON a.oid = c.relam
	WHERE c.relname IN ('item', 'region', 'region_1', 'line') ORDER BY 1;
	SELECT count(*), sum(id) FROM item;
	SELECT count(*) FROM line JOIN item ON item.id = line.item_id JOIN region ON region.id = line.region_id;
	SELECT conname FROM pg_constraint WHERE contype = 'f' ORDER BY 1;
};
my $before = $node->safe_psql('postgres', $query);

my $dump = $node->basedir . '/dump.custom';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, $node->connstr('postgres') ],
	'pg_dump of a database with refdata tables');

my $plain = $node->basedir . '/dump.sql';
$node->command_ok(
	[ 'pg_dump', '--schema-only', '-f', $plain, $node->connstr('postgres') ],
	'plain schema dump');
my $sql = slurp_file($plain);
like($sql, qr/CREATE EXTENSION IF NOT EXISTS refdata/, 'the dump creates the extension');
like($sql, qr/SET default_table_access_method = refdata;\n(?:\n|--[^\n]*\n)*CREATE TABLE public\.item /,
	'the dump creates item with the refdata access method');

$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok(
	[ 'pg_restore', '-d', $node->connstr('restored'), $dump ],
	'pg_restore into a new database');
is($node->safe_psql('restored', $query), $before,
	'restored tables are refdata, with the same data and foreign keys');

# The restored foreign keys still work against the restored refdata table.
my ($ret, $out, $err) =
  $node->psql('restored', 'INSERT INTO line VALUES (1000, 1000, 1)');
like($err, qr/violates foreign key constraint "line_item_id_fkey"/,
	'a restored foreign key to a refdata table is enforced');
is( $node->safe_psql(
		'restored', q{CREATE EXTENSION amcheck;
		SELECT count(*) FROM verify_heapam('item')}),
	'0',
	'verify_heapam finds nothing wrong after the restore');

$node->stop;
done_testing();
