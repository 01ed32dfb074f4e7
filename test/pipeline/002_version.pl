
# Copyright (c) 2026, pgstrata developers

# The server says what it is: the PostgreSQL release of patches/UPSTREAM and
# the pgstrata version of src/include/pgstrata.h, in "postgres --version" and
# in SELECT version(), while server_version stays upstream's.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Util;

my %up = PgStrata::Util::upstream();
my $tag = '(pgstrata ' . PgStrata::Util::project_version() . ')';

my ($stdout, $stderr);
my $ok = IPC::Run::run [ 'postgres', '--version' ], '>', \$stdout, '2>',
  \$stderr;
ok($ok, 'postgres --version succeeds');
is($stdout, "postgres (PostgreSQL) $up{PG_VERSION} $tag\n",
	'postgres --version names the release and pgstrata');

# initdb and pg_ctl compare this string with their own; that they can start
# a cluster shows that all programs agree on it.
my $node = PostgreSQL::Test::Cluster->new('main');
$node->init;
$node->start;

my $version = $node->safe_psql('postgres', 'SELECT version()');
like(
	$version,
	qr/^PostgreSQL \Q$up{PG_VERSION} $tag\E on \S+, compiled by /,
	'version() names the release and pgstrata');
is($node->safe_psql('postgres', 'SHOW server_version'),
	$up{PG_VERSION}, 'server_version is the release number alone');

$node->stop;
done_testing();
