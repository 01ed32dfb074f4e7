
# Copyright (c) 2026, pgstrata developers

# pg_upgrade carries refdata tables over: the new cluster has the extension,
# the tables keep the refdata access method (and heap TOAST tables), the
# data, the indexes and the foreign keys.  Old and new cluster use the same
# binaries, which pg_upgrade allows; what is tested is the binary-upgrade
# dump and the relfilenode transfer of a non-heap table access method.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $old = PostgreSQL::Test::Cluster->new('old');
$old->init;
$old->start;
$old->safe_psql(
	'postgres', q{
	CREATE EXTENSION refdata;
	CREATE TABLE item (id int PRIMARY KEY, name text, body text) USING refdata;
	CREATE INDEX item_name ON item USING hash (name);
	CREATE TABLE line (id int PRIMARY KEY, item_id int REFERENCES item);
	INSERT INTO item SELECT g, 'item ' || g, NULL FROM generate_series(1, 200) g;
	UPDATE item SET body = (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g)
	  WHERE id <= 2;
	INSERT INTO line SELECT g, 1 + g % 200 FROM generate_series(1, 500) g;
});

my $query = q{
	SELECT a.amname, ta.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
	  JOIN pg_class t ON t.oid = c.reltoastrelid JOIN pg_am ta ON ta.oid = t.relam
	WHERE c.relname = 'item';
	SELECT count(*), md5(string_agg(id || name || coalesce(md5(body), ''), ',' ORDER BY id)) FROM item;
	SET enable_seqscan = off;
	SELECT id FROM item WHERE name = 'item 42';
	RESET enable_seqscan;
	SELECT count(*) FROM line JOIN item ON item.id = line.item_id;
};
my $before = $old->safe_psql('postgres', $query);
$old->stop;

my $new = PostgreSQL::Test::Cluster->new('new');
$new->init;

my $workdir = PostgreSQL::Test::Utils::tempdir;
chdir $workdir;
command_ok(
	[
		'pg_upgrade', '--no-sync',
		'-d', $old->data_dir,
		'-D', $new->data_dir,
		'-b', $old->config_data('--bindir'),
		'-B', $new->config_data('--bindir'),
		'-s', $new->host,
		'-p', $old->port,
		'-P', $new->port,
		'--copy',
	],
	'pg_upgrade of a cluster with refdata tables');

$new->start;
is($new->safe_psql('postgres', $query), $before,
	'after pg_upgrade: refdata with heap TOAST, same data, indexes and keys');
is( $new->safe_psql(
		'postgres', q{CREATE EXTENSION amcheck;
		SELECT count(*) FROM verify_heapam('item')}),
	'0',
	'verify_heapam finds nothing wrong after pg_upgrade');
my ($ret, $out, $err) =
  $new->psql('postgres', 'INSERT INTO line VALUES (9999, 9999)');
like($err, qr/violates foreign key constraint/,
	'the foreign key to the refdata table is enforced after pg_upgrade');
$new->stop;

done_testing();
