
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::FaultFS - file systems whose reads of chosen byte ranges fail
with EIO, mounted by the root service test/fault/faultfs-service.sh

=head1 SYNOPSIS

  use PgStrata::FaultFS;

  # PGSTRATA_FAULTFS names the service's directory (make check-eio starts
  # it as root); undef and a reason when there is none
  my ($svc, $why) = PgStrata::FaultFS::service();

  my $fs = PgStrata::FaultFS->new($svc, 'eio');
  $fs->mount;                        # dies on error
  my $dir = $fs->mnt;                # the mounted directory
  $fs->fail_range($path, 8192, 8192);  # reads of those bytes of $path: EIO
  $fs->failed_reads;                 # how many reads were failed so far
  $fs->clear;                        # fail nothing any more
  $fs->drop($path);                  # drop the kernel's pages of $path
  $fs->drop_caches;                  # echo 3 > drop_caches, by the service
  $fs->umount;                       # unmount, keep the files
  $fs->destroy;                      # unmount, remove everything

=head1 DESCRIPTION

The file system is faultfs (test/fault/faultfs.c), a FUSE pass-through
over the directory C<under>; the daemon runs as the test user, and the
test talks to its control socket directly.  fail_range() also drops the
kernel's cached pages of the file, those mapped by a process too, so that
the next read() gets EIO and the next touch of a shared mapping of those
bytes SIGBUS.  A read request is failed whole when it overlaps a failed
range: readahead around a failed range fails too, and the kernel then
reads the pages it needs one by one, so the pages around it are still
read.  PATH is a path inside mnt(), absolute (symbolic links resolved, so
a relation's path through pg_tblspc will do) or relative to mnt().

=cut

package PgStrata::FaultFS;

use strict;
use warnings FATAL => 'all';

use Carp;
use Cwd qw(abs_path);
use IO::Socket::UNIX;
use Time::HiRes qw(usleep time);
use PgStrata::RootService;


# service(): the service directory, or (undef, why)
sub service
{
	my $svc = $ENV{PGSTRATA_FAULTFS};
	return (undef,
		'PGSTRATA_FAULTFS is not set (run by root: make check and make check-eio start the faultfs service)'
	) if !defined $svc || $svc eq '';
	return (undef, "PGSTRATA_FAULTFS: $svc") if $svc =~ /^\(/;
	return (undef, "no faultfs service at $svc") if !-p "$svc/requests";
	return ($svc, undef);
}

sub new
{
	my ($class, $svc, $name) = @_;
	croak "bad name $name" if $name !~ /^[A-Za-z0-9_]+$/;
	return bless { svc => $svc, name => $name }, $class;
}

sub dir { my $self = shift; return "$self->{svc}/fs/$self->{name}"; }
sub mnt { my $self = shift; return $self->dir . '/mnt'; }
sub under { my $self = shift; return $self->dir . '/under'; }
sub socket_path { my $self = shift; return $self->dir . '/ctl/control.sock'; }

# request(CMD, TIMEOUT): send a request to the root service, wait for the
# answer; returns "ok" or an error text
sub request
{
	my ($self, $cmd, $timeout) = @_;
	return PgStrata::RootService::request($self->{svc}, 'faultfs',
		"$cmd $self->{name}", $timeout);
}

sub mount
{
	my ($self) = @_;
	my $r = $self->request('mount', 60);
	croak "faultfs mount of $self->{name}: $r" if $r ne 'ok';
	return;
}

sub umount
{
	my ($self) = @_;
	my $r = $self->request('umount', 60);
	croak "faultfs umount of $self->{name}: $r" if $r ne 'ok';
	return;
}

# destroy(): unmount and remove the file system; "ok" or an error text
sub destroy
{
	my ($self) = @_;
	return $self->request('destroy', 60);
}

sub drop_caches
{
	my ($self) = @_;
	my $r = $self->request('dropcaches', 120);
	croak "drop_caches: $r" if $r ne 'ok';
	return;
}

# control(LINE): one command to the daemon; its answer without "ok",
# dies on an error
sub control
{
	my ($self, $line) = @_;
	my $s = IO::Socket::UNIX->new(
		Type => SOCK_STREAM(),
		Peer => $self->socket_path)
	  or croak "faultfs $self->{name}: cannot reach its daemon: $!";
	print $s "$line\n";
	$s->flush;
	my $answer = <$s> // '';
	close($s);
	chomp $answer;
	$answer =~ /^ok(?: (.*))?$/
	  or croak "faultfs $self->{name}: $line: "
	  . ($answer eq '' ? 'no answer' : $answer);
	return $1 // '';
}

# relpath(PATH): PATH relative to the mount point
sub relpath
{
	my ($self, $path) = @_;
	return $path if $path !~ m{^/};
	my $mnt = abs_path($self->mnt);
	my $abs = abs_path($path) // croak "no such path $path";
	croak "$path is not on faultfs $self->{name} ($mnt)"
	  if index($abs, "$mnt/") != 0;
	return substr($abs, length($mnt) + 1);
}

# fail_range(PATH, OFFSET, LENGTH): reads of these bytes of PATH fail with
# EIO from now on, until clear(); the kernel's pages of PATH are dropped
sub fail_range
{
	my ($self, $path, $offset, $len) = @_;
	croak 'fail_range: bad range' if $offset < 0 || $len <= 0;
	$self->control('fail ' . $self->relpath($path) . " $offset $len");
	return;
}

sub clear
{
	my ($self) = @_;
	$self->control('clear');
	return;
}

sub drop
{
	my ($self, $path) = @_;
	$self->control('drop ' . $self->relpath($path));
	return;
}

# failed_reads(): the number of read requests failed since the mount
sub failed_reads
{
	my ($self) = @_;
	return 0 + $self->control('count');
}

1;
