
# Copyright (c) 2026, pgstrata developers

# Unit tests of the page-compressed storage format layer
# (src/backend/storage/smgr/pcs_format.c): build test/unit/pcs_format_test.c
# against the installed server headers and report each of its TAP results.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Util;

my $top = PgStrata::Util::top_dir();
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $exe = "$tmp/pcs_format_test";

my @cmd = PgStrata::Util::pcs_program_command($exe, undef,
	"$top/test/unit/pcs_format_test.c");

my ($out, $err) = ('', '');
ok(IPC::Run::run(\@cmd, '>', \$out, '2>', \$err), 'the unit test builds')
  or diag "@cmd\n$err";

IPC::Run::run [$exe], '>', \$out, '2>', \$err;
my $rc = $? >> 8;
my ($plan) = $out =~ /^1\.\.(\d+)$/m;
ok(defined $plan && $plan > 0, 'the unit test prints a plan') or diag $out . $err;
my @results = $out =~ /^((?:not )?ok \d+ - .*)$/mg;
is(scalar @results, $plan, 'it reports every test it planned');
for my $line (@results)
{
	my ($not, $what) = $line =~ /^(not )?ok \d+ - (.*)$/;
	ok(!defined $not, $what);
}
is($rc, 0, 'the unit test exits 0');

done_testing();
