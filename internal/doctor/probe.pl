# abox doctor --probe: run as the agent (uid 1000) inside a throwaway sandbox of the project, it
# tries each escape route and prints one line per probe:
#
#   ABOX-PROBE <TAB> name <TAB> held|escaped|skipped <TAB> detail
#
# It targets only the project's own containers (netd, a listener abox started, the gateway),
# loopback, and names under .invalid; never an outside address (the spoof probe asks netd for
# names the project allowlists, as any run does, and answers with a documentation address that
# nothing connects to). It needs only perl-base, which every Debian image has. Arguments:
# listener-ip listener-port listener-name bridge-gateway-ip gateway-name gateway-ip gateway-port
# allowed-names (comma-separated; "-" when absent).
use strict;
use warnings;
use Socket;
use IO::Socket::INET;
use IO::Socket::IP;

$| = 1;
my ($lip, $lport, $lname, $bridge, $gwname, $gwip, $gwport, $allowed) = map { $_ eq '-' ? '' : $_ } @ARGV;
my @allowed = grep { $_ ne '' } split(/,/, $allowed // '');
my $netd = "abox-netd-" . ($ENV{ABOX_PROJECT} // '') . "-" . ($ENV{ABOX_RUN} // '');
my $banner = 'abox-probe-listener';

sub report {
    my ($name, $verdict, $detail) = @_;
    $detail =~ s/[\t\r\n]+/ /g;
    print "ABOX-PROBE\t$name\t$verdict\t$detail\n";
}

# tcp connects and reads what the peer says first: ("connected", banner) or ("failed", why).
sub tcp {
    my ($host, $port) = @_;
    my $s = IO::Socket::IP->new(PeerHost => $host, PeerPort => $port, Proto => 'tcp', Timeout => 3);
    return ('failed', ($@ || "$!")) unless $s;
    my ($got, $rin) = ('', '');
    vec($rin, fileno($s), 1) = 1;
    sysread($s, $got, 64) if select(my $rout = $rin, undef, undef, 2);
    close $s;
    return ('connected', $got // '');
}

# dns sends one A query over UDP: ("answer", n), ("rcode", text), ("noreply"), ("error", why).
sub dns {
    my ($server, $port, $name) = @_;
    my $q = pack('n6', int(rand(65535)), 0x0100, 1, 0, 0, 0);
    $q .= join('', map { chr(length $_) . $_ } split(/\./, $name)) . "\0" . pack('n2', 1, 1);
    my $s = IO::Socket::INET->new(PeerAddr => $server, PeerPort => $port, Proto => 'udp')
        or return ('error', "$!");
    defined(send($s, $q, 0)) or return ('error', "send: $!");
    my $rin = '';
    vec($rin, fileno($s), 1) = 1;
    return ('noreply', '') unless select(my $rout = $rin, undef, undef, 3);
    my $buf;
    defined(recv($s, $buf, 1500, 0)) or return ('error', "$!");
    return ('error', 'short reply') if length($buf) < 12;
    my (undef, $flags, undef, $an) = unpack('n4', $buf);
    my $rcode = $flags & 0xf;
    return ('answer', $an) if $rcode == 0 && $an > 0;
    return ('rcode', $rcode == 3 ? 'NXDOMAIN' : $rcode == 0 ? 'no data' : "rcode $rcode");
}

# answers_a returns the IPv4 addresses of the A records of a DNS reply.
sub answers_a {
    my ($buf) = @_;
    return () if length($buf) < 12;
    my (undef, undef, $qd, $an) = unpack('n4', $buf);
    my $off = 12;
    my $skip_name = sub {
        while ($off < length $buf) {
            my $l = ord(substr($buf, $off, 1));
            if (($l & 0xc0) == 0xc0) { $off += 2; return }
            $off++;
            return if $l == 0;
            $off += $l;
        }
    };
    for (1 .. $qd) { $skip_name->(); $off += 4 }
    my @a;
    for (1 .. $an) {
        $skip_name->();
        last if $off + 10 > length $buf;
        my ($type, undef, undef, $len) = unpack('n n N n', substr($buf, $off, 10));
        $off += 10;
        push @a, join('.', unpack('C4', substr($buf, $off, 4))) if $type == 1 && $len == 4;
        $off += $len;
    }
    return @a;
}

# query sends one A query over UDP and returns the reply, or undef.
sub query {
    my ($server, $port, $name) = @_;
    my $q = pack('n6', int(rand(65535)), 0x0100, 1, 0, 0, 0);
    $q .= join('', map { chr(length $_) . $_ } split(/\./, $name)) . "\0" . pack('n2', 1, 1);
    my $s = IO::Socket::INET->new(PeerAddr => $server, PeerPort => $port, Proto => 'udp') or return undef;
    send($s, $q, 0) or return undef;
    my $rin = '';
    vec($rin, fileno($s), 1) = 1;
    return undef unless select(my $rout = $rin, undef, undef, 3);
    my $buf;
    recv($s, $buf, 4096, 0);
    return $buf;
}

sub status_field {
    my ($field) = @_;
    open(my $f, '<', '/proc/self/status') or return '?';
    while (<$f>) { return $1 if /^\Q$field\E:\s*(.*?)\s*$/ }
    return '?';
}

# ruleset: try to delete netd's nftables table over netlink, as any program could; without
# CAP_NET_ADMIN in the namespace the kernel must answer EPERM. doctor reads the ruleset back.
sub probe_ruleset {
    my $caps = 'CapEff ' . status_field('CapEff') . ', CapBnd ' . status_field('CapBnd');
    socket(my $nl, 16, 3, 12) or return report('ruleset', 'held', "no netfilter netlink socket ($!); $caps");
    my $name = "abox\0";
    my $attr = pack('S S', 4 + length $name, 1) . $name . ("\0" x ((4 - length($name) % 4) % 4));
    my $msg = sub {
        my ($type, $flags, $seq, $family, $body) = @_;
        my $payload = pack('C C n', $family, 0, 10) . $body;
        return pack('L S S L L', 16 + length $payload, $type, $flags, $seq, 0) . $payload;
    };
    my $batch = $msg->(0x10, 1, 1, 0, '') . $msg->((10 << 8) | 2, 1 | 4, 2, 1, $attr) . $msg->(0x11, 1, 3, 0, '');
    defined(send($nl, $batch, 0, pack('S S L L', 16, 0, 0, 0))) or return report('ruleset', 'held', "send refused: $!; $caps");
    my $rin = '';
    vec($rin, fileno($nl), 1) = 1;
    return report('ruleset', 'held', "no answer from the kernel; $caps") unless select(my $r = $rin, undef, undef, 3);
    my $buf;
    recv($nl, $buf, 65536, 0);
    my (undef, $type) = unpack('L S', $buf // '');
    my $err = $type && $type == 2 ? unpack('l', substr($buf, 16, 4)) : 0;
    return report('ruleset', 'escaped', "the kernel accepted a request to delete table inet abox; $caps") if $err == 0;
    local $! = -$err;
    my $why = "$!";
    # only a permission error means the request was stopped before it was looked at
    return report('ruleset', 'escaped', "the kernel processed a request to delete table inet abox ($why); $caps") if -$err != 1 && -$err != 13;
    report('ruleset', 'held', "deleting table inet abox refused: $why; $caps");
}

sub probe_dns_unlisted {
    my @names = (sprintf('abox-probe-%08x.invalid', int(rand(2**31))), $netd);
    push @names, $lname if $lname;
    push @names, $gwname if $gwname;
    my @resolved;
    for my $n (@names) {
        my @a = gethostbyname($n);
        push @resolved, "$n → " . join(',', map { inet_ntoa($_) } @a[4 .. $#a]) if @a;
    }
    return report('dns-unlisted', 'escaped', 'resolved: ' . join('; ', @resolved)) if @resolved;
    report('dns-unlisted', 'held', 'not resolved: ' . join(', ', @names));
}

# docker_dns_ports lists the ports Docker's embedded resolver listens on (127.0.0.11).
sub docker_dns_ports {
    my ($proto) = @_;
    my @ports;
    open(my $f, '<', "/proc/net/$proto") or return ();
    while (<$f>) { push @ports, hex($1) if /^\s*\d+:\s*0B00007F:([0-9A-F]{4})\s/i }
    return @ports;
}

sub probe_dns_docker {
    my $name = $lname || $netd;
    my @seen;
    my ($v, $d) = dns('127.0.0.11', 53, $name);
    return report('dns-docker', 'escaped', "127.0.0.11:53 answered $name ($d record(s))") if $v eq 'answer';
    push @seen, "127.0.0.11:53 for $name: " . ($d || $v);
    for my $p (docker_dns_ports('udp')) {
        ($v, $d) = dns('127.0.0.11', $p, $name);
        return report('dns-docker', 'escaped', "Docker's resolver at 127.0.0.11:$p/udp answered $name") if $v eq 'answer';
        push @seen, "udp $p: " . ($d || $v);
    }
    for my $p (docker_dns_ports('tcp')) {
        ($v, $d) = tcp('127.0.0.11', $p);
        return report('dns-docker', 'escaped', "connected to Docker's resolver at 127.0.0.11:$p/tcp") if $v eq 'connected';
        push @seen, "tcp $p: $d";
    }
    report('dns-docker', 'held', join('; ', @seen));
}

sub reached {
    my ($host, $port) = @_;
    my ($v, $d) = tcp($host, $port);
    return ($v eq 'connected', $v eq 'connected' ? "connected to $host:$port" . ($d =~ /\Q$banner\E/ ? ' (listener answered)' : '') : "$host:$port: $d");
}

sub probe_ip_literal {
    return report('ip-literal', 'skipped', 'no listener to aim at') unless $lip;
    my ($ok, $d) = reached($lip, $lport);
    report('ip-literal', $ok ? 'escaped' : 'held', $d);
}

sub probe_ipv6 {
    my @addrs;
    if (open(my $f, '<', '/proc/net/if_inet6')) {
        while (<$f>) { my @c = split; push @addrs, "$c[5]:$c[0]" if $c[5] ne 'lo' }
    }
    my @seen = ('non-loopback IPv6 addresses: ' . (@addrs ? join(',', @addrs) : 'none'));
    for my $t (['2001:db8::1', 443], ($lip ? (["::ffff:$lip", $lport]) : ())) {
        my ($ok, $d) = reached(@$t);
        return report('ipv6', 'escaped', $d) if $ok;
        push @seen, $d;
    }
    report('ipv6', 'held', join('; ', @seen));
}

sub probe_host_bridge {
    return report('host-bridge', 'skipped', 'no bridge gateway address') unless $bridge;
    my @seen;
    for my $p (22, 2375, 2376, 8811, ($lport ? $lport : ())) {
        my ($ok, $d) = reached($bridge, $p);
        return report('host-bridge', 'escaped', $d) if $ok;
        push @seen, $d;
    }
    report('host-bridge', 'held', join('; ', @seen));
}

sub probe_gateway {
    return report('gateway-direct', 'skipped', 'no gateway running') unless $gwip;
    my ($ok, $d) = reached($gwip, $gwport);
    report('gateway-direct', $ok ? 'escaped' : 'held', $d);
}

# bindable reports whether this process may bind proto addr:port, optionally sharing the port
# with SO_REUSEADDR and SO_REUSEPORT.
sub bindable {
    my ($proto, $addr, $port, $reuse) = @_;
    socket(my $s, PF_INET, $proto eq 'tcp' ? SOCK_STREAM : SOCK_DGRAM, 0) or return (0, "$!");
    if ($reuse) { setsockopt($s, SOL_SOCKET, SO_REUSEADDR, 1); setsockopt($s, SOL_SOCKET, 15, 1) }
    my $ok = bind($s, pack_sockaddr_in($port, inet_aton($addr)));
    my $why = "$!";
    close $s;
    return ($ok ? 1 : 0, $why);
}

# resolver-bind: the addresses netd asks and serves on cannot be taken: port 53 (Docker's
# resolver, and any address), 443, and netd's own ports even when shared with SO_REUSEPORT.
sub probe_resolver_bind {
    my @seen;
    for my $t (['udp', '127.0.0.11', 53], ['udp', '0.0.0.0', 53], ['tcp', '127.0.0.1', 53], ['tcp', '0.0.0.0', 443],
        (map { ['udp', '127.0.0.1', $_, 1], ['tcp', '127.0.0.1', $_, 1] } 15353), (map { ['tcp', '0.0.0.0', $_, 1] } 15443, 15080, 15811)) {
        my ($ok, $why) = bindable(@$t);
        my $what = "$t->[0] $t->[1]:$t->[2]" . ($t->[3] ? ' (SO_REUSEPORT)' : '');
        return report('resolver-bind', 'escaped', "bound $what") if $ok;
        push @seen, "$what: $why";
    }
    report('resolver-bind', 'held', join('; ', @seen));
}

# conntrack-plant: a datagram from Docker's resolver address would plant the conntrack entry
# whose reply direction is one of netd's later queries; every one must be refused.
sub probe_conntrack_plant {
    socket(my $s, PF_INET, SOCK_DGRAM, 0) or return report('conntrack-plant', 'held', "no udp socket: $!");
    bind($s, pack_sockaddr_in(0, inet_aton('127.0.0.11'))) or return report('conntrack-plant', 'held', "127.0.0.11 not bindable: $!");
    my ($sent, $why) = (0, '');
    for my $p (32768 .. 32967) {
        if (defined(send($s, "\0", 0, pack_sockaddr_in($p, inet_aton('127.0.0.1'))))) { $sent++ } else { $why ||= "$!" }
    }
    return report('conntrack-plant', 'escaped', "$sent of 200 datagrams from 127.0.0.11 left") if $sent;
    report('conntrack-plant', 'held', "200 datagrams from 127.0.0.11 to 127.0.0.1's ephemeral ports refused: $why");
}

# dns-spoof: the attack the two probes above guard against, whole. A child binds what it can of
# 127.0.0.11, sprays 127.0.0.1's ephemeral ports from it and answers every query that reaches it
# with 192.0.2.1; meanwhile netd is asked for the project's allowed names. It escapes when a
# query of netd's reaches the child or an answer names 192.0.2.1.
sub probe_dns_spoof {
    return report('dns-spoof', 'skipped', 'the project allowlists no name of its own to ask netd for') unless @allowed;
    pipe(my $r, my $w) or return report('dns-spoof', 'skipped', "pipe: $!");
    my $pid = fork() // return report('dns-spoof', 'skipped', "fork: $!");
    if ($pid == 0) {
        close $r;
        my @socks;
        for my $port (53, 0) {
            socket(my $s, PF_INET, SOCK_DGRAM, 0) or next;
            push @socks, $s if bind($s, pack_sockaddr_in($port, inet_aton('127.0.0.11')));
        }
        my ($got, $end) = (0, time + 4);
        while (time < $end) {
            for my $s (@socks) {
                send($s, "\0", 0, pack_sockaddr_in($_, inet_aton('127.0.0.1'))) for 32768 .. 60999;
                my $rin = '';
                vec($rin, fileno($s), 1) = 1;
                while (select(my $rout = $rin, undef, undef, 0.05)) {
                    my $from = recv($s, my $q, 4096, 0);
                    last unless defined $from && length($q) >= 12;
                    $got++;
                    my $reply = substr($q, 0, 2) . pack('n4', 0x8180, 1, 1, 0) . "\0\0" . substr($q, 12) . pack('n n n N n C4', 0xc00c, 1, 1, 300, 4, 192, 0, 2, 1);
                    send($s, $reply, 0, $from);
                }
            }
        }
        print $w "$got\n";
        close $w;
        exit 0;
    }
    close $w;
    sleep 1;
    my @seen;
    for my $n (@allowed[0 .. ($#allowed < 2 ? $#allowed : 2)]) {
        my $reply = query('127.0.0.1', 53, $n);
        my @a = defined $reply ? answers_a($reply) : ();
        if (grep { $_ eq '192.0.2.1' } @a) { waitpid($pid, 0); return report('dns-spoof', 'escaped', "netd answered $n with the agent's 192.0.2.1") }
        push @seen, "$n → " . (@a ? join(',', @a) : 'no address');
    }
    my $got = <$r> // 0;
    chomp $got;
    waitpid($pid, 0);
    return report('dns-spoof', 'escaped', "$got of netd's queries reached the agent's socket on 127.0.0.11") if $got;
    report('dns-spoof', 'held', 'no query of netd reached the agent; ' . join('; ', @seen));
}

# setuid: no setuid or setgid file to run, and no-new-privileges even if one turned up.
sub probe_setuid {
    my (@found, @todo);
    my $budget = 200000;
    @todo = ('/');
    while (@todo && $budget-- > 0) {
        my $dir = pop @todo;
        opendir(my $dh, $dir) or next;
        for my $e (readdir $dh) {
            next if $e eq '.' || $e eq '..';
            my $p = $dir eq '/' ? "/$e" : "$dir/$e";
            next if $p =~ m{^/(proc|sys|dev|workspace|context)$};
            my @st = lstat($p) or next;
            if (-d _ && !-l _) { push @todo, $p; next }
            push @found, $p if -f _ && ($st[2] & 06000);
        }
    }
    my ($nnp, $uid, $eff) = (status_field('NoNewPrivs'), status_field('Uid'), status_field('CapEff'));
    my $d = "uid $uid, CapEff $eff, NoNewPrivs $nnp; setuid/setgid files: " . (@found ? join(',', @found[0 .. ($#found < 4 ? $#found : 4)]) : 'none');
    my $root = $uid =~ /^0\b/ || $eff !~ /^0+$/;
    report('setuid', ($root || (@found && $nnp ne '1')) ? 'escaped' : 'held', $d);
}

print "ABOX-PROBE-RUN\t" . ($ENV{ABOX_RUN} // '') . "\n";
probe_ruleset();
probe_dns_unlisted();
probe_dns_docker();
probe_ip_literal();
probe_ipv6();
probe_host_bridge();
probe_gateway();
probe_setuid();
probe_resolver_bind();
probe_conntrack_plant();
probe_dns_spoof();
print "ABOX-PROBE-END\n";
