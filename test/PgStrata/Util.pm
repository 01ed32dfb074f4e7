
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::Util - facts about the pgstrata checkout, for its TAP tests

=head1 SYNOPSIS

  use PgStrata::Util;

  my $top = PgStrata::Util::top_dir();
  my %up  = PgStrata::Util::upstream();	# patches/UPSTREAM as a hash
  my $ver = PgStrata::Util::project_version();

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

# patches/UPSTREAM, the pinned release, as NAME => value.
sub upstream
{
	my %h;
	for (split /\n/, slurp('patches/UPSTREAM'))
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

1;
