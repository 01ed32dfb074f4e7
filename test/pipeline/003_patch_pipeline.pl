
# Copyright (c) 2026, pgstrata developers

# The patch pipeline (patches/tools/tree.sh) on a copy of the repository:
# the same inputs give the same commits, the check notices a tree that the
# inputs no longer produce, refresh writes the tree's commits back (a new
# change under the next number neither series uses, the others under their
# names), the check holds the series to its rules (the project as author,
# a feature for each change in patches/README.md's table), an update
# touches only the files that changed, and bad inputs stop with a clear line.

use strict;
use warnings FATAL => 'all';

use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Util;

# Commits made here need an identity, whatever the user's git setup.
$ENV{GIT_AUTHOR_NAME} = $ENV{GIT_COMMITTER_NAME} = 'pgstrata test';
$ENV{GIT_AUTHOR_EMAIL} = $ENV{GIT_COMMITTER_EMAIL} = 'test@pgstrata.invalid';

my $top = PgStrata::Util::top_dir();
my $repo = PostgreSQL::Test::Utils::tempdir() . '/repo';
mkdir $repo or die "mkdir: $!";
for my $d (qw(patches src contrib))
{
	system('cp', '-a', "$top/$d", "$repo/$d") == 0 or die "cp $d failed"
	  if -d "$top/$d";
}
# The series under test: patches/ and build/ for 17, patches/18/ and
# build/18/ for 18 (make PG=18); tree.sh reads PGSTRATA_PG too.
my $pdir = PgStrata::Util::patch_dir();
my $bdir = PgStrata::Util::build_dir();
my $tree = "$repo/$bdir/postgresql";

# tree(CMD): run the copied tree.sh, return (exit code, stdout + stderr).
sub tree
{
	my ($cmd) = @_;
	my $out = '';
	IPC::Run::run [ 'bash', "$repo/patches/tools/tree.sh", $cmd ],
	  '>&', \$out;
	return ($? >> 8, $out);
}

# git_tree(ARGS): run git in the copied tree, return its trimmed output.
sub git_tree
{
	my $out = '';
	IPC::Run::run [ 'git', '-C', $tree, @_ ], '>&', \$out
	  or die "git @_ failed: $out";
	chomp $out;
	return $out;
}

sub append
{
	my ($path, $text) = @_;
	open my $fh, '>>', $path or die "open $path: $!";
	print $fh $text;
	close $fh;
}

my ($rc, $out) = tree('update');
is($rc, 0, 'update makes the tree') or diag $out;
is( git_tree('rev-parse', 'HEAD'),
	PostgreSQL::Test::Utils::slurp_file("$top/$bdir/tree.commit") =~ s/\s+$//r,
	'the same inputs give the same commit as the main build');
my $patches = () = grep { !/^\s*(#|$)/ }
  split /\n/, PostgreSQL::Test::Utils::slurp_file("$repo/$pdir/series");
is(git_tree('rev-list', '--count', 'upstream..HEAD'),
	$patches + 1, 'one commit for the new files, then one per patch');

($rc, $out) = tree('check');
is($rc, 0, 'check passes on a fresh tree') or diag $out;

# An edit in the tree that is not exported.
append("$tree/README.md", "local edit\n");
($rc, $out) = tree('check');
isnt($rc, 0, 'check fails on an edit that patches/ and src/ lack');
like($out, qr/README\.md/, 'it names the edited file');
like($out, qr/make refresh/, 'it says how to export the edit');

($rc, $out) = tree('update');
is($rc, 0, 'update with unchanged inputs builds the tree as it is');
like(PostgreSQL::Test::Utils::slurp_file("$tree/README.md"),
	qr/local edit/, 'and keeps the edit');

# Inputs changed while the tree has edits of its own: refuse, lose nothing.
append("$repo/src/include/pgstrata.h", "/* input edit */\n");
($rc, $out) = tree('update');
isnt($rc, 0, 'update refuses when both the inputs and the tree changed');
like($out, qr/make refresh.*make tree-reset/, 'it names both ways out');
like(PostgreSQL::Test::Utils::slurp_file("$tree/README.md"),
	qr/local edit/, 'the tree edit is still there');
truncate_input();

# Refresh never overwrites edits made in the repository since the tree was
# made from it.
append("$repo/src/include/pgstrata.h", "/* input edit */\n");
git_tree('stash', '-q');
($rc, $out) = tree('refresh');
isnt($rc, 0, 'refresh refuses while the inputs have edits the tree lacks');
like(PostgreSQL::Test::Utils::slurp_file("$repo/src/include/pgstrata.h"),
	qr/input edit/, 'and the edit is still there');
git_tree('stash', 'pop', '-q');
truncate_input();

# Refresh: the edit, committed in the tree, becomes a new patch, under the
# next number neither series uses; the other patches keep their names.
my @before = grep { !/^\s*(#|$)/ }
  split /\n/, PostgreSQL::Test::Utils::slurp_file("$repo/$pdir/series");
my $next = 1;
for my $p (glob("$repo/patches/*.patch"), glob("$repo/patches/18/*.patch"))
{
	$next = $1 + 1 if $p =~ m{/(\d{4})-[^/]*$} && $1 + 1 > $next;
}
git_tree('commit', '-q', '-a', '-m', 'Test a local edit');
($rc, $out) = tree('refresh');
is($rc, 0, 'refresh exports the commit') or diag $out;
my @series = grep { !/^\s*(#|$)/ }
  split /\n/, PostgreSQL::Test::Utils::slurp_file("$repo/$pdir/series");
is(scalar @series, $patches + 1, 'series has one more patch');
is_deeply([ @series[ 0 .. $#series - 1 ] ], \@before,
	'the other patches keep their names');
like($series[-1], qr/^${\ sprintf('%04d', $next)}-Test-a-local-edit\.patch$/,
	'named after the commit, with the next number neither series uses');
like(
	PostgreSQL::Test::Utils::slurp_file("$repo/$pdir/$series[-1]"),
	qr/^\+local edit$/m,
	'holding the edit');

# The series' rules: the project is every patch's author, and the table of
# patches/README.md names each change's feature.
($rc, $out) = tree('check');
isnt($rc, 0, 'check refuses a patch by another author');
like($out, qr/\Q$series[-1]\E: the author is not "pgstrata developers/,
	'naming the patch and the author it wants');
{
	local $ENV{GIT_AUTHOR_NAME} = 'pgstrata developers';
	local $ENV{GIT_AUTHOR_EMAIL} = 'hackers@pgstrata.invalid';
	git_tree('commit', '-q', '--amend', '--reset-author', '--no-edit');
}
($rc, $out) = tree('refresh');
is($rc, 0, 'refresh exports the commit again') or diag $out;
like(PostgreSQL::Test::Utils::slurp_file("$repo/$pdir/series"),
	qr/^\Q$series[-1]\E$/m, 'under the same name');
($rc, $out) = tree('check');
isnt($rc, 0, 'check refuses a change the table gives no feature');
like($out, qr/table has a change without a feature/, 'saying so');
my $readme = PostgreSQL::Test::Utils::slurp_file("$repo/patches/README.md");
open my $rfh, '>', "$repo/patches/README.md" or die;
print $rfh ($readme =~ s/^(\| \d{4} \| Test a local edit \| )\? \|/$1tests |/mr);
close $rfh;
($rc, $out) = tree('check');
is($rc, 0, 'after refresh the inputs reproduce the tree') or diag $out;

# An input change on a clean tree rewrites only the files that changed.
my $untouched = "$tree/src/backend/utils/adt/version.c";
my $header = "$tree/src/include/pgstrata.h";
utime 1000000000, 1000000000, $untouched, $header;
append("$repo/src/include/pgstrata.h", "/* input edit */\n");
($rc, $out) = tree('update');
is($rc, 0, 'update applies changed inputs to a clean tree') or diag $out;
like(PostgreSQL::Test::Utils::slurp_file($header),
	qr/input edit/, 'the changed file is updated');
isnt((stat $header)[9], 1000000000, 'and gets a new mtime');
is((stat $untouched)[9], 1000000000,
	'an unchanged file keeps its mtime, so make rebuilds only what changed');

# Bad inputs stop with one clear line.
system('cp', "$tree/src/include/port.h", "$repo/src/include/port.h") == 0
  or die;
($rc, $out) = tree('update');
isnt($rc, 0, 'a file in src/ that replaces an upstream file is refused');
like($out, qr{error: src/include/port\.h exists upstream}, 'naming the file');
unlink "$repo/src/include/port.h";

my $first = "$repo/$pdir/$series[0]";
my $text = PostgreSQL::Test::Utils::slurp_file($first);
open my $fh, '>', $first or die;
print $fh ($text =~ s/^-(#define PG_BACKEND_VERSIONSTR.*)$/-$1 broken/mr);
close $fh;
($rc, $out) = tree('update');
isnt($rc, 0, 'a patch that does not apply is refused');
like($out, qr{error: \Q$pdir/$series[0]\E does not apply},
	'naming the patch');

done_testing();

# Undo the input edit made above.
sub truncate_input
{
	my $p = "$repo/src/include/pgstrata.h";
	my $t = PostgreSQL::Test::Utils::slurp_file($p);
	$t =~ s{/\* input edit \*/\n}{}g;
	open my $fh, '>', $p or die;
	print $fh $t;
	close $fh;
}
