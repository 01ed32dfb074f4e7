
# Copyright (c) 2026, pgstrata developers

# pg_config tells an extension built with PGXS against this build what the
# server was built with, and nothing of the project's own way of building:
# the compiler is gcc, not "ccache gcc" (ccache serves the project's builds
# through its directory of compiler names on PATH, and a user building an
# extension, Citus for one, need not have it installed).

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;

my ($cc, $err);
ok(IPC::Run::run([ 'pg_config', '--cc' ], '>', \$cc, '2>', \$err),
	'pg_config --cc succeeds');
chomp $cc;
unlike($cc, qr/ccache/, "pg_config --cc names no compiler cache ($cc)");
my $out;
ok(IPC::Run::run([ split(' ', $cc), '--version' ], '>', \$out, '2>', \$err),
	"the compiler pg_config names runs ($cc --version)");

# PGXS takes CC from Makefile.global, which must agree
my $pgxs;
IPC::Run::run([ 'pg_config', '--pgxs' ], '>', \$pgxs) or die 'pg_config --pgxs';
chomp $pgxs;
(my $global = $pgxs) =~ s{/pgxs/src/makefiles/pgxs\.mk$}{/pgxs/src/Makefile.global};
my ($line) = grep { /^CC = / } split /\n/, slurp_file($global);
is($line, "CC = $cc", 'Makefile.global, which PGXS reads, names the same compiler');

my $configure;
IPC::Run::run([ 'pg_config', '--configure' ], '>', \$configure)
  or die 'pg_config --configure';
unlike($configure, qr/ccache/, 'pg_config --configure names no compiler cache');

done_testing();
