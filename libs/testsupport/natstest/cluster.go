package natstest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Cluster is a JetStream cluster of several nats-server processes on loopback, as the production NATS (the Helm
// chart's 3-node cluster) runs, so a test can check replication (R3 streams and buckets).
type Cluster struct {
	Servers []*Server
}

// clusterConf is one node's part of a cluster.
type clusterConf struct {
	name, cluster string
	port          int
	routes        []string
}

// URL lists every node's client URL, comma-separated, as a client configured for the cluster would.
func (c *Cluster) URL() string {
	urls := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		urls[i] = s.ClientURL()
	}
	return strings.Join(urls, ",")
}

// StartCluster runs n JetStream servers (n ≥ 3 for R3) routed into one cluster, each storing its data under its own
// temp dir, waits until the JetStream meta group has a leader that every node knows and that sees every other node
// current, and stops them when the test ends. A clustered JetStream server refuses to start without configured
// routes, so the route ports are chosen first (free loopback ports, closed again just before the servers take
// them) and every node gets all of them (a route to itself is ignored).
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	return StartClusterWith(tb, n, Options{})
}

// StartClusterWith is StartCluster with every node run as opts say (ConfigFile and Env, Users, Log, SyncAlways);
// the cluster chooses each node's port and store.
func StartClusterWith(tb testing.TB, n int, opts Options) *Cluster {
	tb.Helper()
	ports := make([]int, n)
	routes := make([]string, n)
	listeners := make([]net.Listener, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		listeners[i], ports[i] = l, l.Addr().(*net.TCPAddr).Port
		routes[i] = "nats-route://" + l.Addr().String()
	}
	for _, l := range listeners {
		l.Close()
	}
	c := &Cluster{}
	for i := range n {
		o := opts
		o.Port, o.Dir, o.NoJetStream = 0, "", false
		o.cluster = &clusterConf{name: fmt.Sprintf("n%d", i+1), cluster: "zoea-test", port: ports[i], routes: routes}
		s := launch(tb, o)
		tb.Cleanup(s.Shutdown)
		c.Servers = append(c.Servers, s)
	}
	// /healthz answers 200 once a node is current with a meta leader; the leader must also see all n nodes, or
	// stream creation may fail with "insufficient resources".
	for _, s := range c.Servers {
		if err := s.waitReady(60 * time.Second); err != nil {
			tb.Fatalf("natstest: cluster node: %v", err)
		}
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		state, ok := c.ready(n)
		if ok {
			return c
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			tb.Fatalf("natstest: the %d-node JetStream cluster elected no meta leader known to every node within 30s (%s)", n, state)
		}
	}
}

// jsz is the part of a node's /jsz that says what it knows of the JetStream meta group.
type jsz struct {
	Meta *struct {
		Leader   string `json:"leader"`
		Size     int    `json:"cluster_size"`
		Replicas []struct {
			Name    string `json:"name"`
			Current bool   `json:"current"`
			Offline bool   `json:"offline"`
		} `json:"replicas"`
	} `json:"meta_cluster"`
}

// ready: every node names the same meta leader, and the leader sees the n-1 others current and online (the
// leader's /jsz lists the other peers). state says what is missing.
func (c *Cluster) ready(n int) (state string, ok bool) {
	client := &http.Client{Timeout: 2 * time.Second}
	leader := ""
	for i, s := range c.Servers {
		resp, err := client.Get(s.monitor + "/jsz")
		if err != nil {
			return err.Error(), false
		}
		var j jsz
		err = json.NewDecoder(resp.Body).Decode(&j)
		resp.Body.Close()
		if err != nil || j.Meta == nil || j.Meta.Leader == "" {
			return fmt.Sprintf("node n%d knows no meta leader (%v)", i+1, err), false
		}
		if leader != "" && j.Meta.Leader != leader {
			return fmt.Sprintf("nodes disagree on the meta leader: %s, %s", leader, j.Meta.Leader), false
		}
		leader = j.Meta.Leader
		if j.Meta.Leader != fmt.Sprintf("n%d", i+1) {
			continue
		}
		current := 0
		for _, r := range j.Meta.Replicas {
			if r.Current && !r.Offline {
				current++
			}
		}
		if current != n-1 {
			return fmt.Sprintf("leader %s sees %d of %d other nodes current", leader, current, n-1), false
		}
	}
	return "", true
}
