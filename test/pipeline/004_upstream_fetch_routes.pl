
# Copyright (c) 2026, pgstrata developers

# Each place fetch-upstream.sh looks for the pinned tarball, tried on its own
# against a stand-in release: Debian's pool by path under the configured
# archive URIs, apt-get source of the exact pinned version, the official
# download, and the one-line error naming every place when none has it.
# The archive is a file:// directory of the test's own, apt-get and
# apt-cache are stubs in the test's own PATH; nothing leaves the machine.

use strict;
use warnings FATAL => 'all';

use Cwd qw(abs_path);
use Digest::SHA;
use File::Path qw(make_path);
use PostgreSQL::Test::Utils;
use Test::More;
use PgStrata::Util;

my $top = PgStrata::Util::top_dir();
my $fetch = "$top/patches/tools/fetch-upstream.sh";
# Absolute: the places are file:// URLs.
my $tmp = abs_path(PostgreSQL::Test::Utils::tempdir());

# A stand-in release, so that no test depends on the real one being served.
my $version = '17.99';
my $tarball = "postgresql-$version.tar.bz2";
my $orig = "postgresql-17_$version.orig.tar.bz2";
my $content = "not really PostgreSQL $version\n" x 100;
my $sha = Digest::SHA::sha256_hex($content);

# write_file(PATH, CONTENT): create PATH and its directories.
sub write_file
{
	my ($path, $text) = @_;
	(my $dir = $path) =~ s{/[^/]*$}{};
	make_path($dir);
	open my $fh, '>', $path or die "open $path: $!";
	print $fh $text;
	close $fh;
}

# The places: an archive with the orig tarball in its pool, a second one
# without it, the "official" download, and an archive whose copy is damaged.
write_file("$tmp/debian/pool/main/p/postgresql-17/$orig", $content);
make_path("$tmp/empty-debian");
write_file("$tmp/official/$tarball", $content);
write_file("$tmp/apt-archive/$orig", $content);
write_file("$tmp/bad-debian/pool/main/p/postgresql-17/$orig",
	$content . "x");
write_file(
	"$tmp/UPSTREAM", <<"EOF");
PG_VERSION = $version
PG_TARBALL = $tarball
PG_SHA256 = $sha
PG_URL = file://$tmp/official/$tarball
PG_DEBIAN_SOURCE = postgresql-17
PG_DEBIAN_SUITE = trixie
PG_DEBIAN_ORIG = $orig
EOF

# Stubs of apt-cache and apt-get: the index names the versions in
# $tmp/apt-versions; "apt-get source" records what it was asked for and
# serves the orig tarball only for a version listed there.
write_file("$tmp/apt-versions", "");
write_file("$tmp/apt.list", "# stands for the deb-src entry\n");
write_file(
	"$tmp/bin/apt-cache", <<"EOF");
#!/bin/sh
[ "\$1" = showsrc ] || exit 100
sed 's/^/Version: /' "$tmp/apt-versions"
EOF
write_file(
	"$tmp/bin/apt-get", <<"EOF");
#!/bin/sh
[ "\$1" = source ] || exit 100
shift
for a; do case "\$a" in -*) ;; *) want=\$a ;; esac; done
echo "\$want" >> "$tmp/apt-asked"
v=\${want#postgresql-17=}
grep -qx "\$v" "$tmp/apt-versions" || exit 100
cp "$tmp/apt-archive/$orig" "$orig"
EOF
chmod 0755, "$tmp/bin/apt-cache", "$tmp/bin/apt-get";

my $cache_n = 0;

# run_fetch(URIS, VERSIONS, OFFICIAL): run the script with a new, empty
# cache, the archive URIs given, apt's index naming VERSIONS and the official
# download present or not.  Returns (rc, stdout, stderr, cache dir).
sub run_fetch
{
	my ($uris, $versions, $official) = @_;
	my $cache = "$tmp/cache" . $cache_n++;
	write_file("$tmp/apt-versions", join('', map { "$_\n" } @$versions));
	unlink "$tmp/apt-asked";
	rename "$tmp/official", "$tmp/official-hidden" unless $official;
	local $ENV{PGSTRATA_UPSTREAM} = "$tmp/UPSTREAM";
	local $ENV{PGSTRATA_CACHE} = $cache;
	local $ENV{PGSTRATA_DEBIAN_URIS} = $uris;
	local $ENV{PGSTRATA_APT_LIST} = "$tmp/apt.list";
	local $ENV{PATH} = "$tmp/bin:$ENV{PATH}";
	delete local $ENV{PG_TARBALL_FILE};
	delete local $ENV{PGSTRATA_OFFLINE};
	my ($out, $err) = ('', '');
	IPC::Run::run [ 'bash', $fetch ], '>', \$out, '2>', \$err;
	my $rc = $? >> 8;
	rename "$tmp/official-hidden", "$tmp/official" unless $official;
	return ($rc, $out, $err, $cache);
}

# fetched_ok(NAME, RESULT...): the tarball landed in the cache, verified.
sub fetched_ok
{
	my ($name, $rc, $out, $err, $cache) = @_;
	is($rc, 0, "$name: the fetch succeeds") or diag $err;
	is($out, "$cache/$tarball\n", "$name: it prints the cached path");
	ok(-f "$cache/$tarball"
		  && Digest::SHA->new(256)->addfile("$cache/$tarball")->hexdigest
		  eq $sha,
		"$name: the cache holds the verified tarball");
}

my $apt_asked = sub {
	return -f "$tmp/apt-asked"
	  ? PostgreSQL::Test::Utils::slurp_file("$tmp/apt-asked")
	  : '';
};

# 1. Debian's pool, under the second of two URIs, with an index that has
# moved on to another version: apt-get is never asked.
my @r = run_fetch("file://$tmp/empty-debian file://$tmp/debian",
	['18.0-1'], 0);
fetched_ok('pool', @r);
like($r[2], qr{downloaded file://\Q$tmp\E/debian/pool/main/p/postgresql-17/\Q$orig\E},
	'pool: the tarball came from the pool path of the second URI');
is($apt_asked->(), '', 'pool: apt-get source was not needed');

# 2. Not in any pool: apt-get source of the exact version, even when the
# index also names a newer one (which would be the default).
@r = run_fetch("file://$tmp/empty-debian", [ "$version-1", "$version-3", '18.0-1' ], 0);
fetched_ok('apt-get source', @r);
is($apt_asked->(), "postgresql-17=$version-3\n",
	'apt-get source: asked for the newest revision of the pinned version only');

# 3. Neither the pool nor the index: the official download.
@r = run_fetch("file://$tmp/empty-debian", ['18.0-1'], 1);
fetched_ok('official', @r);
like($r[2], qr{the trixie index names no postgresql-17 \Q$version\E},
	'official: the index without the pinned version is reported');
like($r[2], qr{downloaded file://\Q$tmp\E/official/\Q$tarball\E},
	'official: the tarball came from PG_URL');

# 4. Nowhere: one line that names every place tried.
@r = run_fetch("file://$tmp/empty-debian", ['18.0-1'], 0);
isnt($r[0], 0, 'nowhere: the fetch fails');
is($r[1], '', 'nowhere: no path is printed');
my @errors = grep { /^error:/ } split /\n/, $r[2];
is(scalar @errors, 1, 'nowhere: one error line');
like(
	$errors[0] // '',
	qr{^error: cannot obtain \Q$tarball\E; tried: \Q$r[3]/$tarball\E; file://\Q$tmp\E/empty-debian/pool/main/p/postgresql-17/\Q$orig\E; apt-get source postgresql-17=\Q$version\E-\* \(trixie\); file://\Q$tmp\E/official/\Q$tarball\E; name a copy with PG_TARBALL_FILE=/path$},
	'nowhere: the error names the cache, the pool URL, apt-get source and PG_URL');
ok(!-e "$r[3]/$tarball", 'nowhere: nothing is cached');

# 5. A damaged copy in the pool is refused, never cached, and the search
# stops rather than quietly trying elsewhere.
@r = run_fetch("file://$tmp/bad-debian", ["$version-1"], 1);
isnt($r[0], 0, 'damaged: the fetch fails');
like($r[2], qr{^error: .* is not \Q$tarball\E: SHA-256 expected \Q$sha\E, found [0-9a-f]{64}$}m,
	'damaged: the refusal names the expected and the found digest');
ok(!-e "$r[3]/$tarball", 'damaged: nothing is cached');

# 6. Offline, a cached copy is used and nothing else is tried.
{
	local $ENV{PGSTRATA_OFFLINE} = '1';
	local $ENV{PGSTRATA_UPSTREAM} = "$tmp/UPSTREAM";
	local $ENV{PGSTRATA_CACHE} = "$tmp/cache0";
	# a tarball the user names comes before the cache (make exports it)
	delete local $ENV{PG_TARBALL_FILE};
	my ($out, $err) = ('', '');
	IPC::Run::run [ 'bash', $fetch ], '>', \$out, '2>', \$err;
	is($? >> 8, 0, 'offline: the cached tarball is used');
	is($out, "$tmp/cache0/$tarball\n", 'offline: its path is printed');
}

done_testing();
