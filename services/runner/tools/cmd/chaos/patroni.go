package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// -postgres patroni: instead of one private Postgres, an HA cluster as the production one (CloudNativePG) is —
// Patroni managing a primary and two streaming replicas on loopback ports, synchronous_mode on, etcd (one member)
// as its store — and the memory service given a multi-host URL with target_session_attrs=read-write. The faults
// are whole-node deaths of the primary: Patroni and its Postgres (postmaster and every backend) kill -9ed at once,
// the synchronous standby promoted when the leader key expires, the dead node started again to rejoin as a replica
// (pg_rewind) before the next fault.

// Patroni's timing (bootstrap.dcs): the leader key lives ttl seconds; loop_wait + 2 × retry_timeout ≤ ttl.
const (
	patroniTTL          = 10
	patroniLoopWait     = 2
	patroniRetryTimeout = 4
)

// patroniInstall is what -postgres patroni needs and does not install by itself.
const patroniInstall = "sudo apt-get install -y patroni etcd-server"

// pgNode is one Patroni member: its Postgres port, its REST API port and its data directory.
type pgNode struct {
	name            string
	pgPort, apiPort int
	dataDir         string
	proc            *proc
}

type patroniCluster struct {
	dir      string
	etcd     *proc
	etcdPort int
	nodes    []*pgNode
	binDir   string
	log      *slog.Logger
}

// patroniTools finds patroni, etcd and the PostgreSQL server binaries (the newest /usr/lib/postgresql/<ver>/bin),
// or says exactly what to install.
func patroniTools() (binDir string, err error) {
	var missing []string
	for _, b := range []string{"patroni", "etcd"} {
		if _, err := exec.LookPath(b); err != nil {
			missing = append(missing, b)
		}
	}
	binDir = pgBinDir("/usr/lib/postgresql")
	if binDir == "" {
		missing = append(missing, "the PostgreSQL server (/usr/lib/postgresql/<version>/bin/postgres)")
	}
	if len(missing) > 0 {
		install := patroniInstall
		if binDir == "" {
			install += " postgresql"
		}
		return "", fmt.Errorf("-postgres patroni needs %s, which this machine lacks; install them with:\n  %s", strings.Join(missing, ", "), install)
	}
	return binDir, nil
}

// pgBinDir is the bin directory of the newest PostgreSQL major version Debian installed under root
// (/usr/lib/postgresql/<version>/bin), "" when there is none.
func pgBinDir(root string) string {
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "bin", "postgres"))
	best, bestVer := "", -1
	for _, d := range dirs {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(d))))
		if err == nil && v > bestVer {
			best, bestVer = filepath.Dir(d), v
		}
	}
	return best
}

// postgresCred is the OS user Patroni and Postgres run as when chaos runs as root (Postgres refuses root).
func postgresCred() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, -postgres patroni needs the OS user postgres to run Postgres as: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func patroniConf(c *patroniCluster, n *pgNode) string {
	return fmt.Sprintf(`scope: zoea-chaos
name: %[1]s
log:
  level: INFO
restapi:
  listen: 127.0.0.1:%[2]d
  connect_address: 127.0.0.1:%[2]d
etcd3:
  hosts: 127.0.0.1:%[3]d
bootstrap:
  dcs:
    ttl: %[4]d
    loop_wait: %[5]d
    retry_timeout: %[6]d
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        max_connections: 100
  initdb:
    - encoding: UTF8
    - data-checksums
postgresql:
  listen: 127.0.0.1:%[7]d
  connect_address: 127.0.0.1:%[7]d
  data_dir: %[8]s
  bin_dir: %[9]s
  pgpass: %[10]s
  remove_data_directory_on_rewind_failure: true
  remove_data_directory_on_diverged_timelines: true
  authentication:
    superuser:
      username: postgres
      password: chaos-super
    replication:
      username: replicator
      password: chaos-repl
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: %[11]s
`, n.name, n.apiPort, c.etcdPort, patroniTTL, patroniLoopWait, patroniRetryTimeout,
		n.pgPort, n.dataDir, c.binDir, filepath.Join(c.dir, n.name+".pgpass"), c.dir)
}

// startPatroni starts etcd and three Patroni nodes under dir/patroni and waits for a leader and two streaming
// replicas, one of them synchronous.
func startPatroni(ctx context.Context, dir string, log *slog.Logger, binDir string) (*patroniCluster, error) {
	cred, err := postgresCred()
	if err != nil {
		return nil, err
	}
	c := &patroniCluster{dir: filepath.Join(dir, "patroni"), binDir: binDir, log: log}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, err
	}
	if cred != nil {
		// The postgres user must reach its directories inside the root-owned temp dir.
		if err := os.Chmod(dir, 0o711); err != nil {
			return nil, err
		}
		if err := os.Chown(c.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	c.etcdPort = freePort()
	peer := freePort()
	c.etcd = &proc{name: "etcd", bin: "etcd", logPath: filepath.Join(dir, "etcd.log"), args: []string{
		"--name", "chaos", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort),
		"--advertise-client-urls", fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort),
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-cluster", fmt.Sprintf("chaos=http://127.0.0.1:%d", peer),
	}}
	if err := c.etcd.start(); err != nil {
		return c, err
	}
	if err := waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/health", c.etcdPort), 30*time.Second); err != nil {
		return c, fmt.Errorf("etcd: %w (log: %s)", err, c.etcd.logPath)
	}
	for i := 1; i <= 3; i++ {
		n := &pgNode{name: fmt.Sprintf("pg%d", i), pgPort: freePort(), apiPort: freePort()}
		n.dataDir = filepath.Join(c.dir, n.name)
		conf := filepath.Join(c.dir, n.name+".yml")
		if err := os.WriteFile(conf, []byte(patroniConf(c, n)), 0o644); err != nil {
			return c, err
		}
		n.proc = &proc{name: "patroni-" + n.name, bin: "patroni", args: []string{conf}, logPath: filepath.Join(dir, "patroni-"+n.name+".log"),
			cred: cred, env: []string{"HOME=" + c.dir}}
		c.nodes = append(c.nodes, n)
		// The first node bootstraps alone, so it is the first leader; the others clone it.
		if err := n.proc.start(); err != nil {
			return c, err
		}
		if i == 1 {
			if _, err := c.waitLeader(ctx, nil, 90*time.Second); err != nil {
				return c, err
			}
		}
	}
	if err := c.waitHealthy(ctx, 3, 120*time.Second); err != nil {
		return c, err
	}
	return c, nil
}

// url is the multi-host URL the memory service gets: pgx tries the hosts in order and keeps the one that accepts
// writes.
func (c *patroniCluster) url() string {
	var hosts []string
	for _, n := range c.nodes {
		hosts = append(hosts, fmt.Sprintf("127.0.0.1:%d", n.pgPort))
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") + "/postgres?sslmode=disable&target_session_attrs=read-write"
}

// member is one entry of Patroni's GET /cluster.
type member struct {
	Name  string `json:"name"`
	Role  string `json:"role"`
	State string `json:"state"`
	Lag   any    `json:"lag"`
}

// members asks the first node that answers (skipping the one that is down) for the cluster's members.
func (c *patroniCluster) members(ctx context.Context, skip *pgNode) ([]member, error) {
	var lastErr error = errors.New("no Patroni node answers")
	for _, n := range c.nodes {
		if n == skip || !n.proc.running() {
			continue
		}
		var out struct {
			Members []member `json:"members"`
		}
		if err := getJSON(ctx, fmt.Sprintf("http://127.0.0.1:%d/cluster", n.apiPort), &out); err != nil {
			lastErr = err
			continue
		}
		return out.Members, nil
	}
	return nil, lastErr
}

// waitLeader waits until a node other than skip leads and accepts writes (its REST API answers /primary with 200),
// and returns it.
func (c *patroniCluster) waitLeader(ctx context.Context, skip *pgNode, within time.Duration) (*pgNode, error) {
	deadline := time.Now().Add(within)
	for {
		for _, n := range c.nodes {
			if n == skip || !n.proc.running() {
				continue
			}
			if getJSON(ctx, fmt.Sprintf("http://127.0.0.1:%d/primary", n.apiPort), nil) == nil {
				return n, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("no Patroni leader within %s (logs: %s)", within, filepath.Dir(c.dir))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitHealthy waits until the cluster has a running leader, want-1 replicas streaming, and a synchronous standby.
func (c *patroniCluster) waitHealthy(ctx context.Context, want int, within time.Duration) error {
	deadline := time.Now().Add(within)
	var last []member
	for {
		ms, err := c.members(ctx, nil)
		if err == nil {
			last = ms
			leaders, replicas, sync := 0, 0, 0
			for _, m := range ms {
				switch {
				case m.Role == "leader" && m.State == "running":
					leaders++
				case (m.Role == "replica" || m.Role == "sync_standby") && (m.State == "running" || m.State == "streaming"):
					replicas++
					if m.Role == "sync_standby" {
						sync++
					}
				}
			}
			if leaders == 1 && replicas == want-1 && sync >= 1 {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the Patroni cluster is not healthy within %s (want a leader, %d streaming replicas, one synchronous): %+v, %v", within, want-1, last, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// syncStandby names the member Patroni holds synchronous, "" when none.
func (c *patroniCluster) syncStandby(ctx context.Context) (string, error) {
	ms, err := c.members(ctx, nil)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if m.Role == "sync_standby" {
			return m.Name, nil
		}
	}
	return "", nil
}

// postmasterPID reads the node's postmaster.pid; 0 when there is none.
func (n *pgNode) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(n.dataDir, "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
}

// killNode is the primary's machine dying: its Postgres (the postmaster and every backend: one process group) and its Patroni are kill -9ed, so nothing on that node answers, restarts or hands over.
func (n *pgNode) killNode() error {
	pid := n.postmasterPID()
	if pid <= 0 {
		return fmt.Errorf("%s: no postmaster.pid in %s", n.name, n.dataDir)
	}
	// Patroni starts the postmaster in a session of its own (a helper that calls setsid and exits), so its process
	// group is that session's, not its pid.
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		return fmt.Errorf("%s: postmaster %d: %w", n.name, pid, err)
	}
	if pgid <= 1 || pgid == syscall.Getpgrp() {
		return fmt.Errorf("%s: postmaster %d is in process group %d, not one of its own", n.name, pid, pgid)
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill -9 the postgres process group of %s: %w", n.name, err)
	}
	n.proc.kill()
	return nil
}

// failover is one fault: kill the leader's node; "back" is when another node leads and accepts writes, and then
// (after the recovery was measured) the dead node starts again and must rejoin as a streaming replica.
func (c *patroniCluster) failover(ctx context.Context) fault {
	var killed *pgNode
	var sync string
	return fault{
		name: "postgres primary node SIGKILL (Patroni failover)",
		do: func() error {
			leader, err := c.waitLeader(ctx, nil, 10*time.Second)
			if err != nil {
				return err
			}
			if sync, err = c.syncStandby(ctx); err != nil || sync == "" {
				return fmt.Errorf("no synchronous standby before the kill (%v): synchronous_mode is not in effect", err)
			}
			c.log.Info("killing the Postgres primary node", "node", leader.name, "sync_standby", sync)
			if err := leader.killNode(); err != nil {
				return err
			}
			killed = leader
			next, err := c.waitLeader(ctx, leader, 120*time.Second)
			if err != nil {
				return err
			}
			c.log.Info("new Postgres primary", "node", next.name)
			if next.name != sync {
				return fmt.Errorf("the failover promoted %s, not the synchronous standby %s: acknowledged commits may be lost", next.name, sync)
			}
			return nil
		},
		then: func() error {
			if err := killed.proc.start(); err != nil {
				return err
			}
			if err := c.waitHealthy(ctx, 3, 180*time.Second); err != nil {
				return fmt.Errorf("%s did not rejoin: %w", killed.name, err)
			}
			c.log.Info("old primary rejoined as a replica", "node", killed.name)
			return nil
		},
	}
}

func (c *patroniCluster) stop() {
	for _, n := range c.nodes {
		n.proc.term()
		// Patroni stops its Postgres on SIGTERM; one killed mid-way leaves it running.
		if pid := n.postmasterPID(); pid > 0 && syscall.Kill(pid, 0) == nil {
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid > 1 && pgid != syscall.Getpgrp() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
		}
	}
	if c.etcd != nil {
		c.etcd.term()
	}
}

// postmasters are the running postmasters by node, for the resource report.
func (c *patroniCluster) postmasters() map[string]int {
	out := map[string]int{}
	for _, n := range c.nodes {
		if pid := n.postmasterPID(); pid > 0 && syscall.Kill(pid, 0) == nil {
			out["postgres "+n.name] = pid
		}
	}
	return out
}

func getJSON(ctx context.Context, url string, into any) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	if into == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

func waitHTTP(ctx context.Context, url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		err := getJSON(ctx, url, nil)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
