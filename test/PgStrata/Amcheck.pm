
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::Amcheck - the amcheck query the TAP tests run on every copy of a
database they make

=head1 SYNOPSIS

  use PgStrata::Amcheck;

  # "0 true": no table has a corruption verify_heapam() reports, and more
  # than 100 B-tree indexes passed bt_index_check() with heapallindexed
  is($node->safe_psql($db, PgStrata::Amcheck::clean_query(100)), '0 true');

=cut

package PgStrata::Amcheck;

use strict;
use warnings FATAL => 'all';

# clean_query(MIN_BTREES): a query (amcheck installed) that returns the
# number of corruptions verify_heapam() reports in the database's permanent
# tables, materialized views and TOAST tables, then "true" if more than
# MIN_BTREES permanent B-tree indexes were checked with bt_index_check(...,
# heapallindexed => true), which raises an error at the first corruption
sub clean_query
{
	my ($min_btrees) = @_;
	return qq(
SELECT (SELECT count(*) FROM pg_class r, verify_heapam(r.oid)
		WHERE r.relkind IN ('r', 'm', 't') AND r.relpersistence = 'p')
	|| ' ' ||
	((SELECT count(*) FROM (SELECT bt_index_check(r.oid, true)
		FROM pg_class r JOIN pg_am a ON a.oid = r.relam
		WHERE r.relkind = 'i' AND a.amname = 'btree'
		AND r.relpersistence = 'p') s) > $min_btrees));
}

1;
