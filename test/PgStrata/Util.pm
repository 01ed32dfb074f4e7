
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::Util - facts about the pgstrata checkout, and how to build programs
against its format layer, for its TAP tests

=head1 SYNOPSIS

  use PgStrata::Util;

  my $top = PgStrata::Util::top_dir();
  my %up  = PgStrata::Util::upstream();	# patches/UPSTREAM (or 18/UPSTREAM) as a hash
  my $ver = PgStrata::Util::project_version();
  my $cc  = PgStrata::Util::pg_config_value('--cc');
  my @cmd = PgStrata::Util::pcs_program_command($exe, undef, @sources);

=cut

package PgStrata::Util;

use strict;
use warnings FATAL => 'all';

use Cwd qw(abs_path);
use File::Basename qw(dirname);

# The repository's top directory (this file is test/PgStrata/Util.pm).
sub top_dir
{
	return abs_path(dirname(__FILE__) . '/../..');
}

# Slurp a file of the repository, by path relative to the top directory.
sub slurp
{
	my ($rel) = @_;
	my $path = top_dir() . "/$rel";
	open my $fh, '<', $path or die "could not open $path: $!";
	local $/;
	my $text = <$fh>;
	close $fh;
	return $text;
}

# The directory of the series under test, relative to the top directory:
# patches/ for PostgreSQL 17, patches/18/ for 18 (PGSTRATA_PG, which
# `make PG=18` sets).
sub patch_dir
{
	return ($ENV{PGSTRATA_PG} // '17') eq '17'
	  ? 'patches'
	  : "patches/$ENV{PGSTRATA_PG}";
}

# The build directory of the series under test, relative to the top
# directory: build/ for 17, build/18/ for 18.
sub build_dir
{
	return ($ENV{PGSTRATA_PG} // '17') eq '17'
	  ? 'build'
	  : "build/$ENV{PGSTRATA_PG}";
}

# The UPSTREAM file of the series under test, the pinned release, as
# NAME => value.
sub upstream
{
	my %h;
	for (split /\n/, slurp(patch_dir() . '/UPSTREAM'))
	{
		$h{$1} = $2 if /^\s*(PG_\w+)\s*=\s*(.*?)\s*$/;
	}
	return %h;
}

# The project's version, as src/include/pgstrata.h defines it.
sub project_version
{
	slurp('src/include/pgstrata.h') =~ /#define\s+PGSTRATA_VERSION\s+"([^"]+)"/
	  or die "no PGSTRATA_VERSION in src/include/pgstrata.h";
	return $1;
}

# One line of the installed server's pg_config output (pg_config is found
# in PATH, as the TAP harness sets it).
sub pg_config_value
{
	my ($opt) = @_;
	my $out = `pg_config $opt`;
	die "pg_config $opt failed" if $?;
	chomp $out;
	return $out;
}

# The command that builds the program EXE from SOURCES, the format layer
# (pcs_format.c, pcs_transform.c, pcs_estimate.c, pcs_codec.c) and
# test/common/pcs_frontend.c, against the installed server
# headers and linked as the server links the format layer.  CFLAGS, an array
# reference, replaces the server's compiler and flags when given (the fuzz
# replay builds with gcc and the sanitizers).
sub pcs_program_command
{
	my ($exe, $cflags, @sources) = @_;
	my $top = top_dir();
	my @compile =
	  defined $cflags
	  ? @$cflags
	  : (split(' ', pg_config_value('--cc')),
		split(' ', pg_config_value('--cflags')),
		split(' ', pg_config_value('--cppflags')));

	return (
		@compile,
		"-I$top/src/include",
		'-I' . pg_config_value('--includedir-server'),
		'-o', $exe,
		@sources,
		(map { "$top/src/backend/storage/smgr/pcs_$_.c" }
			  qw(codec estimate format transform)),
		"$top/test/common/pcs_frontend.c",
		'-L' . pg_config_value('--libdir'),
		'-lpgcommon', '-lpgport',
		grep { /^-l(zstd|lz4)$/ } split(' ', pg_config_value('--libs')));
}

1;
