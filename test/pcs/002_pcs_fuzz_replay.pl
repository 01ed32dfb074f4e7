
# Copyright (c) 2026, pgstrata developers

# Replay the committed corpus of the pcs fuzz target (test/fuzz/corpus)
# through the target built with gcc, AddressSanitizer and
# UndefinedBehaviorSanitizer and a plain main() (test/fuzz/replay_main.c),
# so that every input the fuzzer kept is checked on each `make check`
# without clang: no crash, no sanitizer report, no broken property.
# `make fuzz` runs the real fuzzer (see doc/building-and-testing.md, Fuzzing).

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Util;

my $top = PgStrata::Util::top_dir();
my $tmp = PostgreSQL::Test::Utils::tempdir();
my $exe = "$tmp/pcs_fuzz_replay";
my $corpus = "$top/test/fuzz/corpus";

my @inputs = glob("$corpus/*");
cmp_ok(scalar @inputs, '>=', 20, 'the committed corpus has inputs');
for my $op (qw(header entry image segment roundtrip toast toast-external))
{
	ok((grep { m{/$op-} } @inputs), "the corpus has $op inputs");
}

my @cmd = PgStrata::Util::pcs_program_command(
	$exe,
	[
		'gcc', '-g', '-O1', '-fno-omit-frame-pointer',
		'-fsanitize=address,undefined', '-fno-sanitize-recover=all'
	],
	"$top/test/fuzz/replay_main.c",
	"$top/test/fuzz/pcs_fuzz.c",
	"$top/test/fuzz/toast_fuzz.c",
	"$top/src/backend/access/common/toast_zstd_format.c");

my ($out, $err) = ('', '');
ok(IPC::Run::run(\@cmd, '>', \$out, '2>', \$err),
	'the target builds with gcc and the sanitizers')
  or diag "@cmd\n$err";

# Any sanitizer report ends the program with an error status.
local $ENV{ASAN_OPTIONS} = 'detect_leaks=1:abort_on_error=0:exitcode=66';
local $ENV{UBSAN_OPTIONS} = 'print_stacktrace=1:halt_on_error=1';
($out, $err) = ('', '');
IPC::Run::run [ $exe, $corpus ], '>', \$out, '2>', \$err;
my $rc = $?;    # a signal (abort) counts as failure too
is($rc, 0, 'every corpus input replays without a crash or sanitizer report')
  or diag substr($err, 0, 4000);
is($out, sprintf("replayed %d inputs\n", scalar @inputs),
	'every corpus input was replayed');

done_testing();
