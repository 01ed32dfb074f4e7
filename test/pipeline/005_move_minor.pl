
# Copyright (c) 2026, pgstrata developers

# Moving the series to another minor release in one command (tree.sh move,
# `make move-minor`), on a copy of the repository and stand-in releases made
# from the pinned one: a release that changed a context line of a patch,
# which plain `git am` refuses, is taken by the three-way rebase and the
# patch is rewritten; a release that changed the lines a patch changes stops
# the move with the way out; wrong arguments are refused with one line.

use strict;
use warnings FATAL => 'all';

use Cwd qw(abs_path);
use Digest::SHA;
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Util;

$ENV{GIT_AUTHOR_NAME} = $ENV{GIT_COMMITTER_NAME} = 'pgstrata test';
$ENV{GIT_AUTHOR_EMAIL} = $ENV{GIT_COMMITTER_EMAIL} = 'test@pgstrata.invalid';

my $top = PgStrata::Util::top_dir();
my %up = PgStrata::Util::upstream();
# The series under test (17, or 18 with PGSTRATA_PG=18): its directory, its
# build directory and its major release, which the stand-in releases share.
my $pdir = PgStrata::Util::patch_dir();
my $bdir = PgStrata::Util::build_dir();
my ($major) = $up{PG_VERSION} =~ /^(\d+)\./;
my $other_major = $major == 17 ? '18.6' : '17.11';
my $tmp = abs_path(PostgreSQL::Test::Utils::tempdir());

# run(CMD...): run a command, return (exit code, stdout + stderr).
sub run
{
	my $out = '';
	IPC::Run::run [@_], '>&', \$out;
	return ($? >> 8, $out);
}

# The pinned tarball, from the cache the build filled.
my ($rc, $pinned) = run('bash', "$top/patches/tools/fetch-upstream.sh");
chomp $pinned;
$pinned = (split /\n/, $pinned)[-1];
ok(-f $pinned, 'the pinned tarball is at hand') or BAIL_OUT($pinned);

# A hunk of the series to aim at: the first one that changes a file upstream
# has and starts with at least two lines of context.
my ($file, $line, $context, $patch);
PATCH: for my $p (grep { !/^\s*(#|$)/ } split /\n/,
	PostgreSQL::Test::Utils::slurp_file("$top/$pdir/series"))
{
	my $text = PostgreSQL::Test::Utils::slurp_file("$top/$pdir/$p");
	while ($text =~ /^--- a\/(\S+)\n\+\+\+ b\/\S+\n@@ -(\d+),\d+ \+\d+,\d+ @@[^\n]*\n (.*)\n (.*)\n/mg)
	{
		next if $2 < 1;
		($file, $line, $context, $patch) = ($1, $2, $3, $p);
		last PATCH;
	}
}
ok(defined $file, "a patch hunk to aim at: $patch, $file line $line")
  or BAIL_OUT('no hunk found');

# make_release(VERSION, EDIT): a stand-in release VERSION, the pinned one
# with EDIT applied to the lines of $file; returns (tarball, SHA-256).
sub make_release
{
	my ($version, $edit) = @_;
	my $dir = "$tmp/src-$version";
	mkdir $dir or die;
	system('tar', 'xjf', $pinned, '-C', $dir) == 0 or die 'tar x failed';
	my ($sub) = glob("$dir/postgresql-*");
	rename $sub, "$dir/postgresql-$version" or die "rename: $!";
	my $path = "$dir/postgresql-$version/$file";
	my @lines = split /\n/, PostgreSQL::Test::Utils::slurp_file($path), -1;
	$edit->(\@lines);
	open my $fh, '>', $path or die;
	print $fh join("\n", @lines);
	close $fh;
	my $tarball = "$tmp/postgresql-$version.tar.bz2";
	system("tar -C '$dir' -cf - postgresql-$version | bzip2 -1 > '$tarball'") == 0
	  or die 'tar c failed';
	system('rm', '-rf', $dir);
	return ($tarball,
		Digest::SHA->new(256)->addfile($tarball)->hexdigest);
}

# The context line before the hunk's changes, changed: a release that moved
# under the patch without touching what it changes.
my $moved_line = "$context /* changed in $major.98 */";
my ($moved, $moved_sha) =
  make_release("$major.98", sub { $_[0]->[ $line - 1 ] = $moved_line });

# The whole region of the hunk rewritten: a real conflict.
my ($clash, $clash_sha) = make_release(
	"$major.97",
	sub {
		splice @{ $_[0] }, $line - 1, 8, ('conflicting change') x 8;
	});

# A copy of the repository, with its tree made from the current inputs.
my $repo = "$tmp/repo";
mkdir $repo or die;
for my $d (qw(patches src contrib))
{
	system('cp', '-a', "$top/$d", "$repo/$d") == 0 or die "cp $d failed";
}
my $treesh = "$repo/patches/tools/tree.sh";

($rc, my $out) = run('bash', $treesh, 'update');
is($rc, 0, 'the copy makes its tree') or diag $out;

# Plain git am cannot take the series onto the moved release.
{
	my $am = "$tmp/am";
	mkdir $am;
	system("tar xjf '$moved' -C '$am' --strip-components=1") == 0 or die;
	run('git', '-C', $am, 'init', '-q');
	run('git', '-C', $am, 'add', '-A');
	run('git', '-C', $am, 'commit', '-q', '-m', 'release');
	my ($amrc) = run('git', '-C', $am, 'am', '-q', "$repo/$pdir/$patch");
	isnt($amrc, 0, "plain git am refuses $patch on the moved release");
	system('rm', '-rf', $am);
}

# Wrong arguments: one error line each, nothing changed.
my $upstream_before = PostgreSQL::Test::Utils::slurp_file("$repo/$pdir/UPSTREAM");
($rc, $out) = run('bash', $treesh, 'move', $other_major);
isnt($rc, 0, 'a move to another major is refused');
like($out, qr/^error: \Q$other_major\E is not a minor release of PostgreSQL $major/m,
	'naming the reason');
($rc, $out) = run('bash', $treesh, 'move', "$major.50");
isnt($rc, 0, 'a move to a release with no known SHA-256 is refused');
like($out, qr/^error: \Q$pdir\E\/UPSTREAM lists no SHA-256 for $major\.50: give it/m,
	'saying how to give it');
($rc, $out) = run('bash', $treesh, 'move', $up{PG_VERSION});
isnt($rc, 0, 'a move to the pinned release is refused');
is(PostgreSQL::Test::Utils::slurp_file("$repo/$pdir/UPSTREAM"),
	$upstream_before, 'patches/UPSTREAM is unchanged by the refusals');

# The move.
{
	local $ENV{PG_TARBALL_FILE} = $moved;
	($rc, $out) = run('bash', $treesh, 'move', "$major.98", $moved_sha);
}
is($rc, 0, 'the series moves to a release that changed its context')
  or diag $out;
my $new_upstream = PostgreSQL::Test::Utils::slurp_file("$repo/$pdir/UPSTREAM");
like($new_upstream, qr/^PG_VERSION = $major\.98$/m, 'UPSTREAM names the new version');
like($new_upstream, qr/^PG_SHA256 = $moved_sha$/m, 'with its SHA-256');
like($new_upstream, qr/^PG_DEBIAN_ORIG = postgresql-${major}_$major\.98\.orig\.tar\.bz2$/m,
	"and Debian's name for its tarball");
like(PostgreSQL::Test::Utils::slurp_file("$repo/$pdir/$patch"),
	qr/^ \Q$moved_line\E$/m, "$patch now carries the new context line");
($rc, $out) = run('git', '-C', "$repo/$bdir/postgresql", 'log', '-1',
	'--format=%P %s', 'upstream');
like($out, qr/^ PostgreSQL $major\.98, as released/,
	'the tree is based on the new release, as a root commit');

# The written inputs rebuild the same tree from scratch.
system('rm', '-rf', "$repo/$bdir");
{
	local $ENV{PG_TARBALL_FILE} = $moved;
	($rc, $out) = run('bash', $treesh, 'update');
	is($rc, 0, 'a new tree is made from the moved inputs') or diag $out;
	($rc, $out) = run('bash', $treesh, 'check');
	is($rc, 0, 'and the inputs reproduce it') or diag $out;
}

# A release that changed what a patch changes: the move stops with the way out.
{
	local $ENV{PG_TARBALL_FILE} = $moved;
	local $ENV{PGSTRATA_OFFLINE} = 1;
	($rc, $out) = run('bash', $treesh, 'update');
}
{
	local $ENV{PG_TARBALL_FILE} = $clash;
	($rc, $out) = run('bash', $treesh, 'move', "$major.97", $clash_sha);
}
isnt($rc, 0, 'a conflicting release stops the move');
like($out, qr/^error: resolve the conflict in .*git rebase --continue.*make refresh/m,
	'saying how to finish it');
like($out, qr/\Q$file\E/, 'naming the conflicting file');

done_testing();
