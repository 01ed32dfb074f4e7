
# Copyright (c) 2026, pgstrata developers

# The build takes only the pinned tarball: fetch-upstream.sh accepts the
# verified one and refuses a copy with one flipped byte, with one line that
# names the expected and the found SHA-256.

use strict;
use warnings FATAL => 'all';

use File::Copy qw(copy);
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Util;

my $top = PgStrata::Util::top_dir();
my %up = PgStrata::Util::upstream();
my $fetch = "$top/patches/tools/fetch-upstream.sh";

# run_fetch(ENV): run the script with extra environment, return (rc, out, err).
sub run_fetch
{
	my (%env) = @_;
	local @ENV{ keys %env } = values %env;
	my ($out, $err) = ('', '');
	IPC::Run::run [ 'bash', $fetch ], '>', \$out, '2>', \$err;
	return ($? >> 8, $out, $err);
}

# The build has run, so the verified tarball is in the cache.
my ($rc, $good, $err) = run_fetch();
is($rc, 0, 'the cached tarball is accepted') or diag $err;
chomp $good;
ok(-f $good, "fetch-upstream.sh names an existing file ($good)");

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $copy = "$tmp/$up{PG_TARBALL}";
copy($good, $copy) or die "copy: $!";

($rc, my $out, $err) = run_fetch(PG_TARBALL_FILE => $copy);
is($rc, 0, 'an intact copy named with PG_TARBALL_FILE is accepted');
is($out, "$copy\n", 'and its path is printed');

# Flip one bit of one byte in the middle of the file.
my $size = -s $copy;
open my $fh, '+<:raw', $copy or die "open: $!";
seek $fh, int($size / 2), 0;
read $fh, my $byte, 1;
seek $fh, int($size / 2), 0;
print $fh chr(ord($byte) ^ 0x01);
close $fh;

($rc, $out, $err) = run_fetch(PG_TARBALL_FILE => $copy);
isnt($rc, 0, 'a tarball with one flipped byte is refused');
is($out, '', 'no path is printed for it');
my @lines = split /\n/, $err;
is(scalar @lines, 1, 'the refusal is one line');
like(
	$err,
	qr/^error: \Q$copy\E is not \Q$up{PG_TARBALL}\E: SHA-256 expected \Q$up{PG_SHA256}\E, found (?!\Q$up{PG_SHA256}\E)[0-9a-f]{64}\n$/,
	'it names the expected and the found SHA-256');

done_testing();
