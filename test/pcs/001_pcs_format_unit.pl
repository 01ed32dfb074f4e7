
# Copyright (c) 2026, pgstrata developers

# Unit tests of the page-compressed storage format layer
# (src/backend/storage/smgr/pcs_format.c): build test/unit/pcs_format_test.c
# against the installed server headers, as the server is and with the
# portable transposition (-DPCS_PORTABLE_TRANSFORMS), and report each of its
# TAP results.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use Config;
use PgStrata::Util;

my $top = PgStrata::Util::top_dir();
my $tmp = PostgreSQL::Test::Utils::tempdir();
my @cflags = (
	split(' ', PgStrata::Util::pg_config_value('--cc')),
	split(' ', PgStrata::Util::pg_config_value('--cflags')),
	split(' ', PgStrata::Util::pg_config_value('--cppflags')));

# Built twice: as the server is (SSE2 transposition on x86-64), and with the
# portable transposition that other platforms run, so that it is tested here
for my $build (
	[ 'as the server is', [], $Config{archname} =~ /x86_64|amd64/i ? 'SSE2' : 'portable' ],
	[ 'portable', ['-DPCS_PORTABLE_TRANSFORMS'], 'portable' ])
{
	my ($name, $extra, $path) = @$build;
	my $exe = "$tmp/pcs_format_test_" . ($name =~ s/\W+/_/gr);
	my @cmd = PgStrata::Util::pcs_program_command($exe, [ @cflags, @$extra ],
		"$top/test/unit/pcs_format_test.c");

	my ($out, $err) = ('', '');
	ok(IPC::Run::run(\@cmd, '>', \$out, '2>', \$err), "$name: the unit test builds")
	  or diag "@cmd\n$err";

	IPC::Run::run [$exe], '>', \$out, '2>', \$err;
	my $rc = $? >> 8;
	my ($plan) = $out =~ /^1\.\.(\d+)$/m;
	ok(defined $plan && $plan > 0, "$name: the unit test prints a plan")
	  or diag $out . $err;
	like($out, qr/^# transposition: \Q$path\E$/m,
		"$name: it transposes with the $path code");
	my @results = $out =~ /^((?:not )?ok \d+ - .*)$/mg;
	is(scalar @results, $plan, "$name: it reports every test it planned");
	for my $line (@results)
	{
		my ($not, $what) = $line =~ /^(not )?ok \d+ - (.*)$/;
		ok(!defined $not, "$name: $what");
	}
	is($rc, 0, "$name: the unit test exits 0");
}

done_testing();
