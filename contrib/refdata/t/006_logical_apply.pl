
# Copyright (c) 2026, pgstrata developers

# Logical replication into a refdata table: the apply worker writes it (and
# the initial table copy fills it) like any writer, under ExclusiveLock, so
# the subscriber's own foreign-key checkers and the apply worker wait for
# each other.  Also the convoy a subscriber shows: the apply worker queued
# behind a long local transaction that checked a foreign key stalls every
# new local check (lock queues are fair), and lock_timeout set for the
# subscription's owner bounds it: the worker gives up, the checks go on, and
# the worker applies the change when it retries.  See
# doc/refdata-locking.md.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->start;

my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init;
# quick retries after the apply worker fails
$sub->append_conf('postgresql.conf', "wal_retrieve_retry_interval = 100ms\n");
$sub->start;

$pub->safe_psql(
	'postgres', q{
	CREATE TABLE item (id int PRIMARY KEY, name text);
	INSERT INTO item SELECT g, 'item ' || g FROM generate_series(1, 100) g;
	CREATE PUBLICATION items FOR TABLE item;
});
$sub->safe_psql(
	'postgres', q{
	CREATE EXTENSION refdata;
	CREATE TABLE item (id int PRIMARY KEY, name text) USING refdata;
	CREATE TABLE line (id int, item_id int REFERENCES item);
});
my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION items CONNECTION '$connstr' PUBLICATION items");
$sub->wait_for_subscription_sync($pub, 'items');

my $query = q{SELECT count(*), md5(string_agg(id || ':' || name, ',' ORDER BY id)) FROM item};
is($sub->safe_psql('postgres', $query),
	$pub->safe_psql('postgres', $query),
	'the initial copy fills the refdata table');

# INSERT, non-key and key UPDATE, DELETE: applied as on the publisher.
$pub->safe_psql(
	'postgres', q{
	INSERT INTO item VALUES (101, 'new');
	UPDATE item SET name = 'renamed' WHERE id = 2;
	UPDATE item SET id = 102 WHERE id = 3;
	DELETE FROM item WHERE id = 4;
});
$pub->wait_for_catchup('items');
is($sub->safe_psql('postgres', $query),
	$pub->safe_psql('postgres', $query),
	'INSERT, UPDATE and DELETE are applied');
is( $sub->safe_psql(
		'postgres', q{SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
			WHERE c.relname = 'item'}),
	'refdata',
	'the table is still refdata');

# Local foreign-key checks against the applied rows take no row locks.
$sub->safe_psql('postgres',
	'INSERT INTO line SELECT g, g FROM generate_series(5, 101) g');
is($sub->safe_psql('postgres', 'SELECT count(*) FROM refdata_rowlocks(\'item\')'),
	'0', 'foreign-key checks on the subscriber leave no row locks');

# The apply worker's pid, and whether it waits for a lock on item.
my $apply_waits = q{
	SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
	WHERE a.backend_type LIKE 'logical replication%worker'
	  AND l.relation = 'item'::regclass AND l.mode = 'ExclusiveLock' AND NOT l.granted};

# A long local transaction that checked a foreign key.
my $long = $sub->background_psql('postgres');
$long->query_safe('BEGIN; INSERT INTO line VALUES (1000, 1)');

# A maintenance update on the publisher: the apply worker queues behind it.
$pub->safe_psql('postgres', q{UPDATE item SET name = 'queued' WHERE id = 10});
$sub->poll_query_until('postgres', "SELECT ($apply_waits) = 1")
  or die 'the apply worker did not wait for the long transaction';

# Every new local check now waits behind the queued apply worker.
my ($ret, $stdout, $stderr) = $sub->psql('postgres',
	q{SET lock_timeout = '300ms'; INSERT INTO line VALUES (1001, 20)});
like($stderr, qr/canceling statement due to lock timeout/,
	'a new foreign-key check waits behind the queued apply worker');

# The long transaction ends: the change is applied, checks go on.
$long->query_safe('COMMIT');
$pub->wait_for_catchup('items');
is($sub->safe_psql('postgres', q{SELECT name FROM item WHERE id = 10}),
	'queued', 'the change is applied when the long transaction ends');
($ret, $stdout, $stderr) = $sub->psql('postgres',
	q{SET lock_timeout = '300ms'; INSERT INTO line VALUES (1001, 20)});
is($ret, 0, 'foreign-key checks go on afterwards');

# The remedy: lock_timeout for the subscription's owner.  The apply worker
# gives up when it cannot get the lock, the local checks go on, and the
# worker applies the change when it retries after the long transaction.
$sub->safe_psql('postgres',
	q{ALTER ROLE CURRENT_USER SET lock_timeout = '200ms';
	  ALTER SUBSCRIPTION items DISABLE});
$sub->poll_query_until('postgres',
	q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type LIKE 'logical replication%worker'})
  or die 'the apply worker did not stop';
$sub->safe_psql('postgres', 'ALTER SUBSCRIPTION items ENABLE');
$long->query_safe('BEGIN; INSERT INTO line VALUES (2000, 1)');
my $log_offset = -s $sub->logfile;
$pub->safe_psql('postgres', q{UPDATE item SET name = 'retried' WHERE id = 11});
$sub->wait_for_log(qr/canceling statement due to lock timeout/, $log_offset);
($ret, $stdout, $stderr) = $sub->psql('postgres',
	q{SET lock_timeout = '1s'; INSERT INTO line VALUES (2001, 30)});
is($ret, 0,
	'with lock_timeout on the apply worker, local checks are not stalled');
$long->query_safe('COMMIT');
$pub->wait_for_catchup('items');
is($sub->safe_psql('postgres', q{SELECT name FROM item WHERE id = 11}),
	'retried', 'the apply worker applies the change when it retries');
is($sub->safe_psql('postgres', $query),
	$pub->safe_psql('postgres', $query),
	'publisher and subscriber agree');

$long->quit;
$sub->stop;
$pub->stop;
done_testing();
