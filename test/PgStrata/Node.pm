
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::Node - the node of a TAP test with an in-place compressed
tablespace

=head1 SYNOPSIS

  use PgStrata::Node;

  # initdb, allow_in_place_tablespaces = on and the test's own settings,
  # start, the extensions, then CREATE TABLESPACE cts LOCATION '' WITH
  # (compression = 'zstd'), all in the database postgres
  my $node = PgStrata::Node::compressed_node('primary',
	init => { allows_streaming => 1, extra => ['--data-checksums'] },
	conf => q(
  wal_log_hints = on
  autovacuum = off
  ),
	extensions => [qw(amcheck pgstrata)]);

  # another algorithm, tablespace name or level
  my $lz4 = PgStrata::Node::compressed_node('lz4',
	compression => 'lz4', tablespace => 'lts');

  # a node asked something first (PostgreSQL::Test::Cluster->new, not yet
  # initialised), or started by the test itself, or whose tablespace
  # comes later
  my $node = PostgreSQL::Test::Cluster->new('node');
  plan skip_all => '...' if $node->pg_version < 18;
  PgStrata::Node::compressed_node($node, start => 0);
  $node->start;
  PgStrata::Node::create_tablespace($node, extensions => ['amcheck']);

=head1 DESCRIPTION

The settings the node gets are allow_in_place_tablespaces = on, which
LOCATION '' needs, and the text of C<conf>, appended as one block right
after initdb, as each test wrote it.  Nothing else: a test that needs
wal_log_hints, fsync = on or autovacuum = off says so in C<conf>.

Options of compressed_node():

  init              options of PostgreSQL::Test::Cluster::init, a hash
                    reference (allows_streaming, has_archiving, extra, ...)
  conf              text appended to postgresql.conf
  start             0: initialise and configure only; nothing is created
  extensions        extensions to create in postgres, in that order,
                    before the tablespace
  create_tablespace 0: the extensions only, no tablespace
  tablespace        the tablespace's name, cts by default
  compression       its algorithm, zstd by default
  level             its compression_level, none (the default) if undef

create_tablespace() takes extensions, tablespace, compression and level.

=cut

package PgStrata::Node;

use strict;
use warnings FATAL => 'all';

use Carp;
use Scalar::Util qw(blessed);
use PostgreSQL::Test::Cluster;

my %node_options = map { $_ => 1 }
  qw(init conf start extensions create_tablespace tablespace compression
  level);
my %tablespace_options = map { $_ => 1 }
  qw(extensions tablespace compression level);

# check_options(KNOWN, OPTS): dies at an option KNOWN does not list
sub check_options
{
	my ($known, %opts) = @_;
	my @unknown = grep { !$known->{$_} } sort keys %opts;
	croak "unknown option(s): @unknown" if @unknown;
	return;
}

# tablespace_statement(OPTS): CREATE TABLESPACE, in place, compressed
sub tablespace_statement
{
	my (%opts) = @_;
	my $name = $opts{tablespace} // 'cts';
	my $with = "compression = '" . ($opts{compression} // 'zstd') . "'";
	$with .= ", compression_level = $opts{level}" if defined $opts{level};
	return "CREATE TABLESPACE $name LOCATION '' WITH ($with);";
}

# create_tablespace(NODE, OPTS): on a running node, the extensions of OPTS
# then the compressed tablespace, in the database postgres
sub create_tablespace
{
	my ($node, %opts) = @_;
	check_options(\%tablespace_options, %opts);
	my @sql = map { "CREATE EXTENSION $_;" } @{ $opts{extensions} // [] };
	push @sql, tablespace_statement(%opts);
	$node->safe_psql('postgres', join("\n", @sql));
	return;
}

# compressed_node(NAME or NODE, OPTS): a node initialised, configured for
# an in-place compressed tablespace and started, with its extensions and
# tablespace made (see the options above); returns the node
sub compressed_node
{
	my ($name, %opts) = @_;
	check_options(\%node_options, %opts);
	my $start = !defined $opts{start} || $opts{start};
	croak 'start => 0 creates nothing: call create_tablespace() once started'
	  if !$start
	  && grep { exists $opts{$_} }
	  (keys %tablespace_options, 'create_tablespace');
	my $node =
	  blessed($name) && $name->isa('PostgreSQL::Test::Cluster')
	  ? $name
	  : PostgreSQL::Test::Cluster->new($name);

	$node->init(%{ $opts{init} // {} });
	$node->append_conf('postgresql.conf',
		"allow_in_place_tablespaces = on\n" . ($opts{conf} // ''));
	return $node if !$start;

	$node->start;
	if (!defined $opts{create_tablespace} || $opts{create_tablespace})
	{
		create_tablespace($node,
			map { exists $opts{$_} ? ($_ => $opts{$_}) : () }
			  keys %tablespace_options);
	}
	elsif (@{ $opts{extensions} // [] })
	{
		$node->safe_psql('postgres',
			join("\n", map { "CREATE EXTENSION $_;" } @{ $opts{extensions} }));
	}
	return $node;
}

1;
