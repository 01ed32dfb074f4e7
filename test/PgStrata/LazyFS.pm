
# Copyright (c) 2026, pgstrata developers

=pod

=head1 NAME

PgStrata::LazyFS - LazyFS file systems for the OS-crash harness, mounted
by the root service test/crash/lazyfs-service.sh

=head1 SYNOPSIS

  use PgStrata::LazyFS;

  # PGSTRATA_LAZYFS names the service's directory (run-checks.sh and
  # make check-crash start it as root); undef and a reason when there is
  # none
  my ($svc, $why) = PgStrata::LazyFS::service();

  my $fs = PgStrata::LazyFS->new($svc, 'primary', cache_mb => 512);
  $fs->mount;                  # dies on error
  my $dir = $fs->mnt;          # the mounted directory
  $fs->clear_cache(30) or ...; # drop what was not fsynced; 0 on timeout
  $fs->umount;                 # kill -9 the daemon, unmount
  $fs->responsive(10);         # 1 if the file system answers in time

=head1 DESCRIPTION

Each mount runs one LazyFS daemon as the test user; its synced data lives
in C<under>, which survives umount, so umount then mount is the reboot of
an OS crash: what was not fsynced is gone, and the kernel's page cache of
the old mount with it.

=cut

package PgStrata::LazyFS;

use strict;
use warnings FATAL => 'all';

use Carp;
use Fcntl qw(O_WRONLY O_RDONLY O_NONBLOCK);
use IO::Handle;
use Time::HiRes qw(usleep time);
use PgStrata::RootService;
use POSIX qw(:sys_wait_h);


# service(): the service directory, or (undef, why)
sub service
{
	my $svc = $ENV{PGSTRATA_LAZYFS};
	return (undef,
		$ENV{PGSTRATA_LAZYFS_WHY}
		  // 'PGSTRATA_LAZYFS is not set (run by root: make check or make check-crash start the LazyFS service)'
	) if !defined $svc || $svc eq '';
	return (undef, "PGSTRATA_LAZYFS: $svc") if $svc =~ /^\(/;
	return (undef, "no LazyFS service at $svc") if !-p "$svc/requests";
	return ($svc, undef);
}

sub new
{
	my ($class, $svc, $name, %opts) = @_;
	croak "bad name $name" if $name !~ /^[A-Za-z0-9_]+$/;
	return bless {
		svc => $svc,
		name => $name,
		cache_mb => $opts{cache_mb} // 512,
	}, $class;
}

sub dir { my $self = shift; return "$self->{svc}/fs/$self->{name}"; }
sub mnt { my $self = shift; return $self->dir . '/mnt'; }
sub under { my $self = shift; return $self->dir . '/under'; }
sub log_file { my $self = shift; return $self->dir . '/ctl/lazyfs.log'; }

# request(CMD, ARGS, TIMEOUT): send a request, wait for the answer; returns
# "ok" or an error text
sub request
{
	my ($self, $cmd, $args, $timeout) = @_;
	return PgStrata::RootService::request($self->{svc}, 'LazyFS',
		"$cmd $self->{name} " . ($args // ''), $timeout);
}

sub mount
{
	my ($self) = @_;
	my $r = $self->request('mount', $self->{cache_mb}, 90);
	croak "LazyFS mount of $self->{name}: $r" if $r ne 'ok';
	return;
}

sub umount
{
	my ($self) = @_;
	my $r = $self->request('umount', '', 60);
	croak "LazyFS umount of $self->{name}: $r" if $r ne 'ok';
	return;
}

sub destroy
{
	my ($self) = @_;
	return $self->request('destroy', '', 60);
}

# clear_cache(TIMEOUT): lazyfs::clear-cache, waiting for LazyFS to say it
# finished; 1 when it did, 0 on a timeout (LazyFS may hang in its cache
# locks)
sub clear_cache
{
	my ($self, $timeout) = @_;
	my $ctl = $self->dir . '/ctl';
	my ($w, $r);
	sysopen($w, "$ctl/faults.fifo", O_WRONLY | O_NONBLOCK) or return 0;
	# the answer fifo: LazyFS holds it open for writing
	sysopen($r, "$ctl/done.fifo", O_RDONLY | O_NONBLOCK) or return 0;
	syswrite($w, "lazyfs::clear-cache\n") or return 0;
	close($w);
	my $deadline = time + $timeout;
	my $got = '';
	while (time < $deadline)
	{
		my $rin = '';
		vec($rin, fileno($r), 1) = 1;
		if (select(my $rout = $rin, undef, undef, 0.2) > 0)
		{
			my $buf;
			my $n = sysread($r, $buf, 4096);
			$got .= $buf if $n;
			if ($got =~ /finished::clear-cache/)
			{
				close($r);
				return 1;
			}
		}
	}
	close($r);
	return 0;
}

# responsive(TIMEOUT): 1 if a write, an fsync and a read in the mounted
# directory complete within TIMEOUT seconds.  A child does them, so that a
# hung file system hangs the child, which is killed (FUSE requests are
# killable).
sub responsive
{
	my ($self, $timeout) = @_;
	my $probe = $self->mnt . '/lazyfs_probe';
	my $pid = fork();
	croak "fork: $!" if !defined $pid;
	if ($pid == 0)
	{
		my ($f, $g);
		my $ok = open($f, '>', $probe)
		  && print($f "probe\n")
		  && $f->flush
		  && $f->sync
		  && close($f)
		  && open($g, '<', $probe)
		  && defined(scalar <$g>);
		unlink($probe);
		POSIX::_exit($ok ? 0 : 1);
	}
	my $deadline = time + $timeout;
	while (time < $deadline)
	{
		my $w = waitpid($pid, WNOHANG);
		return $? == 0 ? 1 : 0 if $w == $pid;
		usleep(50_000);
	}
	kill 'KILL', $pid;
	waitpid($pid, 0);
	return 0;
}

1;
