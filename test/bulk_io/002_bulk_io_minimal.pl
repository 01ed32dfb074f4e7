
# Copyright (c) 2026, pgstrata developers

# The polar_bulk_* settings with wal_level = minimal, where a relation
# created in the same transaction is not WAL-logged but synced at commit:
# a table loaded and indexed in the transaction that creates it (the index
# build pre-extends; the load, an INSERT without a bulk-insert state, does
# not), then COPYed into in a later transaction (the heap pre-extends),
# survives an immediate stop, and amcheck is clean; the same in a
# compressed tablespace.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Node;

my $node = PgStrata::Node::compressed_node('minimal',
	conf => q(
wal_level = minimal
max_wal_senders = 0
wal_log_hints = on
autovacuum = off
log_statement = none
),
	extensions => [qw(pgstrata amcheck)]);

# counter(NAME): a counter of the client backends
sub counter
{
	my ($name) = @_;
	return $node->safe_psql('postgres',
		"SELECT $name FROM pgstrata_bulk_io WHERE backend_type = 'client backend'");
}

for my $ts ('pg_default', 'cts')
{
	my $t = "m_$ts";
	my $heap0 = counter('heap_pre_extensions');
	my $index0 = counter('index_pre_extensions');

	# created, loaded past 8 MB and indexed in one transaction: no WAL
	$node->safe_psql('postgres', qq(
BEGIN;
CREATE TABLE $t (id int, v text) TABLESPACE $ts;
INSERT INTO $t SELECT g, repeat(md5(g::text), 3) FROM generate_series(1, 80000) g;
CREATE INDEX ${t}_id ON $t (id) TABLESPACE $ts;
COMMIT;
));
	is(counter('heap_pre_extensions'), $heap0,
		"$ts: the INSERT in the creating transaction does not pre-extend the heap");
	ok(counter('index_pre_extensions') > $index0,
		"$ts: the index build pre-extends");

	# a COPY, which has a bulk-insert state, pre-extends the heap
	$node->safe_psql('postgres', qq(
COPY (SELECT g, repeat(md5(g::text), 3) FROM generate_series(100001, 110000) g)
	TO '$PostgreSQL::Test::Utils::tmp_check/$t.copy';
COPY $t FROM '$PostgreSQL::Test::Utils::tmp_check/$t.copy';
));
	ok(counter('heap_pre_extensions') > $heap0,
		"$ts: a COPY in a later transaction pre-extends the heap");

	# later inserts are WAL-logged as usual
	$node->safe_psql('postgres',
		"INSERT INTO $t SELECT g, md5(g::text) FROM generate_series(80001, 90000) g");
	my $expect = $node->safe_psql('postgres',
		"SELECT count(*), sum(hashtext(v)) FROM $t");

	$node->stop('immediate');
	$node->start;

	is($node->safe_psql('postgres', "SELECT count(*), sum(hashtext(v)) FROM $t"),
		$expect, "$ts: every row is there after the immediate stop");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM verify_heapam('$t', check_toast => true)"),
		'0', "$ts: verify_heapam is clean");
	is($node->safe_psql('postgres', "SELECT bt_index_check('${t}_id', true)"),
		'', "$ts: bt_index_check(heapallindexed) is clean");
	$node->safe_psql('postgres',
		"INSERT INTO $t SELECT g, md5(g::text) FROM generate_series(90001, 91000) g; VACUUM $t");
	is($node->safe_psql('postgres', "SELECT count(*) FROM $t"),
		'101000', "$ts: inserts and VACUUM go on");
}

done_testing();
