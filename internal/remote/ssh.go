// Package remote reaches the machines of an inventory over SSH, as Jepsen's
// control node does: it checks each machine's host key against
// known_hosts (never trusting a new one), authenticates with the user's
// keys and ssh-agent, pushes gait's own binary by content hash under the
// machine's gait_root, and runs `sudo -n gait agent --stdio` over one
// long-lived session. A Host of a remote testbed implements limp.Host, so
// the injectors act on remote hosts as on local ones.
package remote

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gait-dev/gait/internal/inventory"
	"github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"
	sshagent "golang.org/x/crypto/ssh/agent"
	"golang.org/x/crypto/ssh/knownhosts"
)

// Options say how to reach machines; the zero value follows OpenSSH's
// defaults for the user running gait.
type Options struct {
	// KnownHosts are the known_hosts files host keys are checked
	// against; empty means ~/.ssh/known_hosts and
	// /etc/ssh/ssh_known_hosts (and UserKnownHostsFile of ssh_config).
	KnownHosts []string
	// SSHConfig is the ssh_config file read for HostName, User, Port,
	// IdentityFile and UserKnownHostsFile; empty means ~/.ssh/config,
	// "none" reads none.
	SSHConfig string
	// NoAgent leaves ssh-agent (SSH_AUTH_SOCK) out.
	NoAgent bool
	// DialTimeout bounds the TCP connection and SSH handshake; 0 is 10 s.
	DialTimeout time.Duration
	// Binary is the gait binary pushed to the machines; empty means the
	// running one. Machines must have the control node's architecture.
	Binary string
	// AgentTimeout is how long an agent waits for a heartbeat before it
	// takes everything down; 0 is agent.DefaultTimeout.
	AgentTimeout time.Duration
}

// target is where and as whom SSH connects, after ssh_config.
type target struct {
	addr       string // host:port
	user       string
	keys       []string
	knownHosts []string
	explicit   bool // the key came from the inventory, so only it is offered
}

func (o Options) resolve(m inventory.Machine) (target, error) {
	cfg := func(key string) string { return "" }
	cfgAll := func(key string) []string { return nil }
	if o.SSHConfig != "none" {
		path := o.SSHConfig
		if path == "" {
			path = expandHome("~/.ssh/config")
		}
		if f, err := os.Open(path); err == nil {
			c, err := ssh_config.Decode(f)
			f.Close()
			if err != nil {
				return target{}, fmt.Errorf("%s: %w", path, err)
			}
			cfg = func(key string) string { v, _ := c.Get(m.Addr, key); return v }
			cfgAll = func(key string) []string { v, _ := c.GetAll(m.Addr, key); return v }
		} else if o.SSHConfig != "" {
			return target{}, fmt.Errorf("ssh config: %w", err)
		}
	}
	t := target{user: m.User}
	host := m.Addr
	if h := cfg("HostName"); h != "" {
		host = h
	}
	port := m.Port
	if port == 0 {
		if p, err := strconv.Atoi(cfg("Port")); err == nil && p > 0 && p < 65536 {
			port = p
		} else {
			port = inventory.DefaultPort
		}
	}
	t.addr = net.JoinHostPort(host, strconv.Itoa(port))
	if t.user == "" {
		t.user = cfg("User")
	}
	if t.user == "" {
		u, err := user.Current()
		if err != nil {
			return target{}, fmt.Errorf("local user: %w", err)
		}
		t.user = u.Username
	}
	switch {
	case m.Key != "":
		t.keys, t.explicit = []string{expandHome(m.Key)}, true
	case len(cfgAll("IdentityFile")) > 0:
		for _, k := range cfgAll("IdentityFile") {
			t.keys = append(t.keys, expandHome(k))
		}
	default:
		for _, k := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			t.keys = append(t.keys, expandHome("~/.ssh/"+k))
		}
	}
	t.knownHosts = o.KnownHosts
	if len(t.knownHosts) == 0 {
		if f := cfg("UserKnownHostsFile"); f != "" {
			for _, p := range strings.Fields(f) {
				t.knownHosts = append(t.knownHosts, expandHome(p))
			}
		} else {
			t.knownHosts = []string{expandHome("~/.ssh/known_hosts")}
		}
		t.knownHosts = append(t.knownHosts, "/etc/ssh/ssh_known_hosts")
	}
	return t, nil
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// dial connects and authenticates to a machine, or says in one sentence
// what stood in the way: the address unreachable, its host key unknown
// or changed, every key refused.
func dial(ctx context.Context, m inventory.Machine, o Options) (*ssh.Client, error) {
	t, err := o.resolve(m)
	if err != nil {
		return nil, err
	}
	var existing []string
	for _, f := range t.knownHosts {
		if _, err := os.Stat(f); err == nil {
			existing = append(existing, f)
		}
	}
	check := func(string, net.Addr, ssh.PublicKey) error { return &knownhosts.KeyError{} }
	if len(existing) > 0 {
		if check, err = knownhosts.New(existing...); err != nil {
			return nil, fmt.Errorf("known hosts: %w", err)
		}
	}
	var hostKeyErr error
	var offered []string
	cfg := &ssh.ClientConfig{
		User: t.user,
		HostKeyCallback: func(hostname string, remote net.Addr, key ssh.PublicKey) error {
			err := check(hostname, remote, key)
			hostKeyErr = err
			return err
		},
		HostKeyAlgorithms: knownAlgorithms(check, t.addr),
		Timeout:           o.DialTimeout,
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 10 * time.Second
	}
	signers, offered, closeAgent := authSigners(t, o.NoAgent)
	defer closeAgent()
	cfg.Auth = []ssh.AuthMethod{ssh.PublicKeysCallback(func() ([]ssh.Signer, error) { return signers, nil })}

	d := net.Dialer{Timeout: cfg.Timeout}
	conn, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, fmt.Errorf("SSH to %s: cannot reach it: %w", t.addr, errors.Unwrap(err))
	}
	conn.SetDeadline(time.Now().Add(cfg.Timeout))
	c, chans, reqs, err := ssh.NewClientConn(conn, t.addr, cfg)
	if err != nil {
		conn.Close()
		var ke *knownhosts.KeyError
		switch {
		case errors.As(hostKeyErr, &ke) && len(ke.Want) == 0:
			return nil, fmt.Errorf("SSH to %s: its host key is not in %s; check its fingerprint and add it (ssh-keyscan -p %s %s >> ~/.ssh/known_hosts); gait never trusts a new key",
				t.addr, strings.Join(t.knownHosts, " or "), port(t.addr), host(t.addr))
		case errors.As(hostKeyErr, &ke):
			return nil, fmt.Errorf("SSH to %s: its host key CHANGED: it matches none of the %d keys %s:%d knows for it (a reinstalled machine, or someone in between); remove the old line once you know why",
				t.addr, len(ke.Want), ke.Want[0].Filename, ke.Want[0].Line)
		case hostKeyErr != nil:
			return nil, fmt.Errorf("SSH to %s: host key: %w", t.addr, hostKeyErr)
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, fmt.Errorf("SSH to %s as %s: the machine refused every key offered (%s); add one to ~%s/.ssh/authorized_keys there, or name the right one with ansible_ssh_private_key_file",
				t.addr, t.user, describe(offered), t.user)
		}
		return nil, fmt.Errorf("SSH to %s as %s: %w", t.addr, t.user, err)
	}
	conn.SetDeadline(time.Time{})
	return ssh.NewClient(c, chans, reqs), nil
}

func host(addr string) string { h, _, _ := net.SplitHostPort(addr); return h }
func port(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }

func describe(offered []string) string {
	if len(offered) == 0 {
		return "none: no key file readable and no ssh-agent"
	}
	return strings.Join(offered, ", ")
}

// authSigners gathers the keys to offer: the inventory's key alone when it
// names one, else ssh-agent's and the default or configured key files.
// Encrypted key files are left to ssh-agent, as gait cannot prompt.
func authSigners(t target, noAgent bool) (signers []ssh.Signer, offered []string, closeAgent func()) {
	closeAgent = func() {}
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock != "" && !noAgent && !t.explicit {
		if conn, err := net.Dial("unix", sock); err == nil {
			closeAgent = func() { conn.Close() }
			if s, err := sshagent.NewClient(conn).Signers(); err == nil && len(s) > 0 {
				signers = append(signers, s...)
				offered = append(offered, fmt.Sprintf("%d keys of ssh-agent", len(s)))
			}
		}
	}
	for _, k := range t.keys {
		data, err := os.ReadFile(k)
		if err != nil {
			if t.explicit {
				offered = append(offered, fmt.Sprintf("%s: %v", k, errors.Unwrap(err)))
			}
			continue
		}
		s, err := ssh.ParsePrivateKey(data)
		if err != nil {
			offered = append(offered, fmt.Sprintf("%s: not usable (%v)", k, err))
			continue
		}
		signers = append(signers, s)
		offered = append(offered, k)
	}
	return signers, offered, closeAgent
}

// knownAlgorithms returns the host key algorithms known_hosts has keys of
// for addr, so the server is asked for a key that can be checked, not
// one of another type that would look like a changed key.
func knownAlgorithms(check ssh.HostKeyCallback, addr string) []string {
	_, probe, _ := ed25519.GenerateKey(nil)
	signer, err := ssh.NewSignerFromKey(probe)
	if err != nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if err := check(addr, &net.TCPAddr{IP: net.IPv4zero}, signer.PublicKey()); !errors.As(err, &ke) {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	for _, k := range ke.Want {
		t := k.Key.Type()
		list := []string{t}
		if t == ssh.KeyAlgoRSA {
			list = []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
		}
		for _, a := range list {
			if !seen[a] {
				seen[a] = true
				algos = append(algos, a)
			}
		}
	}
	return algos
}
